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
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

// errLostLeadership ends the process: another replica writes from now on, and
// a fresh start is the simplest way to rejoin the election.
var errLostLeadership = errors.New("lost the leader lease")

// runAsLeader runs run while this replica holds the lease, and returns when
// ctx is done or the lease is lost. The writing controller stops before the
// lease is released: the election has a context of its own, cancelled only
// after run has returned.
func runAsLeader(ctx context.Context, o *Options, client kcpkubernetesclientset.ClusterInterface, run func(context.Context)) error {
	logger := klog.FromContext(ctx)
	identity, err := os.Hostname()
	if err != nil {
		return err
	}
	identity += "_" + uuid.NewString()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElection.Namespace, Name: o.LeaderElection.ID},
		Client:     client.Cluster(logicalcluster.NewPath(o.LeaderElection.Cluster)).CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}

	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	var started atomic.Bool
	runDone := make(chan struct{})
	lost := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaderElection.LeaseDuration,
		RenewDeadline:   o.LeaderElection.RenewDeadline,
		RetryPeriod:     o.LeaderElection.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.LeaderElection.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				started.Store(true)
				defer close(runDone)
				logger.Info("became the leader, starting the controller", "identity", identity)
				metrics.Leader.Set(1)
				defer metrics.Leader.Set(0)
				runCtx, cancel := context.WithCancel(leaderCtx)
				defer cancel()
				go func() {
					select {
					case <-ctx.Done():
					case <-runCtx.Done():
					}
					cancel()
				}()
				run(runCtx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					close(lost)
				}
			},
			OnNewLeader: func(current string) {
				if current != identity {
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
	case <-lost:
	}
	// Stop writing first (if this replica was writing), then release the lease.
	if started.Load() {
		<-runDone
	}
	cancelElection()
	select {
	case <-electionDone:
	case <-time.After(o.LeaderElection.RenewDeadline):
	}
	if isClosed(lost) {
		return errLostLeadership
	}
	return nil
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
