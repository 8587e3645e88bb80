/*
Copyright 2026 The workspacemounts Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clientretry "k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/version"
)

// runAsLeader runs the writing controller, run, during each term this
// replica holds the lease through fence, until ctx is done; a lost lease
// ends the term, not the process (docs/design/server-parts.md).
func runAsLeader(ctx context.Context, o *LeaderElectionOptions, facts leaderfacts.Facts, client kcpkubernetesclientset.ClusterInterface,
	fence *leaderfence.Fence, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	identity, err := os.Hostname()
	if err != nil {
		return err
	}
	identity += "_" + uuid.NewString()
	lock := leaseLock(o, client, identity)
	var terms leaderTerms
	for {
		publishAndRun := func(ctx context.Context) error {
			publishLeaderFacts(ctx, lock, facts, o.RenewDeadline)
			return run(ctx)
		}
		if err := terms.campaign(ctx, o, fence.Lock(lock), publishAndRun); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil //nolint:nilerr // shutting down is not a failure
		}
		logger.Info("lost the leader lease: the controller has stopped, campaigning again", "identity", identity)
	}
}

// leaseLock is the leader Lease of o, taken as identity.
func leaseLock(o *LeaderElectionOptions, client kcpkubernetesclientset.ClusterInterface, identity string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ID},
		Client:     client.Cluster(logicalcluster.NewPath(o.Cluster)).CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
}

// ErrLeaseLost ends the context of HoldLease's run when the Lease cannot be
// renewed: a plugin may lead before long.
var ErrLeaseLost = errors.New("the leader Lease could not be renewed")

// HoldLease runs run once while holding the leader Lease as identity, for
// cleanup: it fails when the Lease is not acquired within wait, ends run's
// context with [ErrLeaseLost] when it cannot be renewed, and releases it
// once run has returned.
func HoldLease(ctx context.Context, o *LeaderElectionOptions, client kcpkubernetesclientset.ClusterInterface, identity string, wait time.Duration,
	run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	lock := leaseLock(o, client, identity)
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	var (
		held     sync.Mutex // guards started and gaveUp
		started  = make(chan struct{})
		gaveUp   bool
		finished = make(chan struct{})
		runErr   error
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: false, // released below, once run has returned
		Name:            o.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				held.Lock()
				if gaveUp || leaderCtx.Err() != nil {
					held.Unlock()
					return
				}
				close(started)
				held.Unlock()
				defer close(finished)
				runCtx, cancel := context.WithCancelCause(ctx)
				defer cancel(nil)
				stop := context.AfterFunc(leaderCtx, func() { cancel(ErrLeaseLost) })
				defer stop()
				runErr = run(runCtx)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elector.Run(electionCtx)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var notAcquired error
	select {
	case <-started:
	case <-timer.C:
		notAcquired = fmt.Errorf("the leader Lease %s/%s/%s was not acquired within %s: a plugin leads; stop it first", o.Cluster, o.Namespace, o.ID, wait)
	case <-ctx.Done():
		notAcquired = context.Cause(ctx)
	}
	if notAcquired != nil {
		held.Lock()
		select {
		case <-started: // acquired meanwhile: run runs
			notAcquired = nil
		default:
			gaveUp = true
		}
		held.Unlock()
	}
	if notAcquired != nil {
		cancelElection()
		<-electionDone
		return notAcquired
	}
	<-finished
	cancelElection()
	select {
	case <-electionDone:
	case <-time.After(o.RenewDeadline):
		return runErr // the elector is stuck talking to kcp; the Lease expires by itself
	}
	if err := releaseLease(lock, o.RenewDeadline); err != nil {
		logger.Error(err, "cannot release the leader Lease; it expires by itself", "lock", lock.Describe())
	}
	return runErr
}

// leaderTerms runs one controller at a time, term after term.
type leaderTerms struct {
	running sync.Mutex // held while a term's controller runs
}

// campaign waits for the lease, runs the controller while it is held, and
// returns once the lease is lost or ctx is done and the controller stopped.
func (t *leaderTerms) campaign(ctx context.Context, o *LeaderElectionOptions, lock resourcelock.Interface, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: false, // see docs/design/server-parts.md
		Name:            o.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			// It may begin after the term has ended: the lock and the checks
			// keep it from running a second controller.
			OnStartedLeading: func(leaderCtx context.Context) {
				t.running.Lock()
				defer t.running.Unlock()
				if ctx.Err() != nil || leaderCtx.Err() != nil {
					return
				}
				runCtx, cancel := context.WithCancel(leaderCtx)
				defer cancel()
				stop := context.AfterFunc(ctx, cancel)
				defer stop()
				logger.Info("became the leader, starting the controller", "identity", lock.Identity())
				metrics.Leader.Set(1)
				defer metrics.Leader.Set(0)
				if err := run(runCtx); err != nil {
					logger.Error(err, "the controller failed; it starts again in the next term")
				}
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(current string) {
				if current != lock.Identity() {
					logger.Info("another replica leads", "leader", current)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}

	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elector.Run(electionCtx)
	}()
	select {
	case <-ctx.Done():
	case <-electionDone: // the lease was lost: Run returns only then, until electionCtx ends
	}
	t.running.Lock()
	defer t.running.Unlock()
	cancelElection()
	select {
	case <-electionDone:
	case <-time.After(o.RenewDeadline):
		return nil // the elector is stuck talking to kcp; the lease expires by itself
	}
	if ctx.Err() != nil {
		if err := releaseLease(lock, o.RenewDeadline); err != nil {
			logger.Error(err, "cannot release the leader lease; it expires by itself", "lock", lock.Describe())
		}
	}
	return nil
}

// releaseLease gives the lease up if this replica holds it, as client-go's
// ReleaseOnCancel does.
func releaseLease(lock resourcelock.Interface, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	record, _, err := lock.Get(ctx)
	if err != nil {
		return err
	}
	if record.HolderIdentity != lock.Identity() {
		return nil
	}
	now := metav1.NewTime(time.Now())
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
}

// leaderFacts are what the leader publishes on its Lease for doctor.
func (o *Options) leaderFacts() leaderfacts.Facts {
	return leaderfacts.Facts{
		Version:              version.Get().Version,
		WorkspaceCondition:   o.WorkspaceCondition,
		WorkspaceURL:         o.WorkspaceURL,
		TrustsRequestHeaders: o.RunVirtualWorkspace && o.VirtualWorkspace.RequestHeader.ClientCAFile != "",
		MountURLContract:     o.MountURLContract,
	}
}

// publishLeaderFacts writes facts into the Lease's annotations as the holder
// of lock, best effort (docs/design/server-parts.md).
func publishLeaderFacts(ctx context.Context, lock *resourcelock.LeaseLock, facts leaderfacts.Facts, timeout time.Duration) {
	facts.Identity = lock.Identity()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	leases := lock.Client.Leases(lock.LeaseMeta.Namespace)
	err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, lock.LeaseMeta.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != facts.Identity {
			return fmt.Errorf("the Lease is held by %v, not by this replica", ptr.Deref(lease.Spec.HolderIdentity, ""))
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		maps.Copy(lease.Annotations, facts.Annotations())
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "cannot publish this leader's version and settings on the Lease; workspacemounts doctor will not see them", "lock", lock.Describe())
	}
}
