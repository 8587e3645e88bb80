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
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

// runAsLeader runs the writing controller while this replica holds the
// lease, until ctx is done. A lost lease (kcp restarting or unreachable past
// the renew deadline, or another replica taking over) ends the term, not the
// process: the controller stops, and the replica campaigns again, with a new
// controller built by run when it wins. One controller runs at a time, and
// it has stopped writing before a new term starts and before the lease is
// released on shutdown.
//
// Each term begins by publishing facts on the Lease (publishLeaderFacts).
// The elector acquires and renews the Lease through fence (nil: none),
// which then tells the controller whether it may still write.
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

// HoldLease runs run once while holding the leader Lease, as a leader
// (`workspacemounts cleanup`, so that no plugin starts writing during its
// run): it campaigns for the Lease as identity (with the plugin's
// leaderelection settings) for at most wait, and fails if it is not
// acquired by then (a plugin leads); run's context ends, with cause
// ErrLeaseLost, when the Lease cannot be renewed, which is before another
// replica can take it over (RenewDeadline < LeaseDuration), or with ctx's
// cause when ctx ends. Once run has returned, the Lease is released.
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
		ReleaseOnCancel: false, // released below, once run has returned (see campaign)
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
	// running is held while a term's controller runs.
	running sync.Mutex
}

// campaign waits for the lease, runs the controller while it is held, and
// returns when the lease is lost or ctx is done, once the controller has
// stopped (and, when ctx is done, the lease has been released).
func (t *leaderTerms) campaign(ctx context.Context, o *LeaderElectionOptions, lock resourcelock.Interface, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	// The election has a context of its own, cancelled only once the
	// controller has stopped.
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		// Not client-go's release: after a failed renewal it first tries to
		// release for up to RenewDeadline, and only then ends the term, so
		// the controller would go on writing past the lease's expiry. The
		// lease is released below, on shutdown only, once the controller
		// has stopped.
		ReleaseOnCancel: false,
		Name:            o.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			// The elector calls this in a goroutine of its own, which may
			// begin after the term has ended already: the lock and the checks
			// keep that late start from running a second controller.
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
	// Wait for the controller to stop writing (if it ran), then release the
	// lease if shutting down, so that another replica takes over at once.
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
// ReleaseOnCancel does: no holder, and a duration of one second.
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
