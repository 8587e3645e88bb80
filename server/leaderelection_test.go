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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kcpfakekubernetes "github.com/kcp-dev/client-go/kubernetes/fake"
	kcptesting "github.com/kcp-dev/client-go/third_party/k8s.io/client-go/testing"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
	"github.com/workspacemounts/workspacemounts/pkg/version"
)

// TestRunAsLeaderSurvivesALostLease: when kcp stops answering, the term's
// controller stops and the process does not; once kcp answers again the
// replica leads again with a new controller. One controller runs at a
// time, and on shutdown it stops before the Lease is released.
func TestRunAsLeaderSurvivesALostLease(t *testing.T) {
	t.Parallel()
	o := NewOptions()
	o.LeaderElection.LeaseDuration = 3 * time.Second
	o.LeaderElection.RenewDeadline = time.Second
	o.LeaderElection.RetryPeriod = 200 * time.Millisecond

	client := kcpfakekubernetes.NewClientset()
	var kcpDown atomic.Bool
	client.PrependReactor("*", "leases", func(kcptesting.Action) (bool, runtime.Object, error) {
		if kcpDown.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})

	// The Lease as the leader publishes its facts on it (an update with
	// them). The fake clientset checks no resourceVersion: a renewal from
	// the Lease read before would drop them here, where kcp refuses it as
	// a conflict (TestDoctor reads them from a real kcp).
	publications := make(chan *coordinationv1.Lease, 10)
	client.PrependReactor("update", "leases", func(action kcptesting.Action) (bool, runtime.Object, error) {
		if lease, ok := action.(kcptesting.UpdateAction).GetObject().(*coordinationv1.Lease); ok && lease.Annotations[leaderfacts.IdentityAnnotation] != "" {
			select {
			case publications <- lease.DeepCopy():
			default:
			}
		}
		return false, nil, nil
	})

	var terms, running, overlaps atomic.Int32
	var stoppedAt atomic.Pointer[time.Time]
	run := func(ctx context.Context) error {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		terms.Add(1)
		<-ctx.Done()
		now := time.Now()
		stoppedAt.Store(&now)
		running.Add(-1)
		return nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	o.WorkspaceURL = true
	fence := leaderfence.New(o.LeaderElection.RenewDeadline)
	go func() { done <- runAsLeader(ctx, &o.LeaderElection, o.leaderFacts(), client, fence, run) }()

	eventually := func(condition func() bool, what string) {
		t.Helper()
		require.Eventually(t, condition, 10*time.Second, 10*time.Millisecond, what)
	}
	eventually(func() bool { return terms.Load() == 1 && running.Load() == 1 }, "the first term starts")
	require.NoError(t, fence.Allow(), "the leader writes during its term")
	published := <-publications
	require.NotNil(t, published.Spec.HolderIdentity)
	facts, ok, err := leaderfacts.Parse(published.Annotations)
	require.NoError(t, err)
	require.True(t, ok, "the leader publishes its facts: %v", published.Annotations)
	require.Equal(t, leaderfacts.Facts{Identity: *published.Spec.HolderIdentity, Version: version.Get().Version, WorkspaceURL: true, MountURLContract: MountURLContractAuto}, facts)

	downAt := time.Now()
	kcpDown.Store(true)
	eventually(func() bool { return fence.Allow() != nil }, "the fence refuses writes when the lease cannot be renewed")
	require.Less(t, time.Since(downAt), o.LeaderElection.RenewDeadline+o.LeaderElection.RetryPeriod, "the fence closed within the renew deadline")
	eventually(func() bool { return running.Load() == 0 }, "the controller stops when the lease cannot be renewed")
	// The last renewal was before downAt: stopping within the lease
	// duration of it means no write after another replica could lead.
	require.Less(t, stoppedAt.Load().Sub(downAt), o.LeaderElection.LeaseDuration, "the controller stopped before the lease expired")
	select {
	case err := <-done:
		t.Fatalf("runAsLeader returned on a lost lease: %v", err)
	case <-time.After(2 * o.LeaderElection.LeaseDuration):
	}
	require.Equal(t, int32(1), terms.Load(), "no term without the lease")

	kcpDown.Store(false)
	eventually(func() bool { return terms.Load() == 2 && running.Load() == 1 }, "the replica leads again with a new controller")
	require.NoError(t, fence.Allow(), "the leader writes again in its new term")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("runAsLeader did not return after its context ended")
	}
	require.Zero(t, running.Load(), "the controller stopped before runAsLeader returned")
	require.Zero(t, overlaps.Load(), "two controllers ran at once")

	lease, err := client.Cluster(logicalcluster.NewPath(o.LeaderElection.Cluster)).CoordinationV1().Leases(o.LeaderElection.Namespace).
		Get(context.Background(), o.LeaderElection.ID, metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, lease.Spec.HolderIdentity, "the lease is released on shutdown")
}

// TestHoldLease: HoldLease runs once as the leader and releases the Lease
// after; while it holds it, a plugin campaigning does not lead, and leads
// once it is released; a Lease a plugin holds is not acquired within the
// wait, and nothing runs; a Lease that cannot be renewed ends the run's
// context with ErrLeaseLost.
func TestHoldLease(t *testing.T) {
	t.Parallel()
	o := NewOptions()
	o.LeaderElection.LeaseDuration = 3 * time.Second
	o.LeaderElection.RenewDeadline = time.Second
	o.LeaderElection.RetryPeriod = 200 * time.Millisecond
	le := &o.LeaderElection
	client := kcpfakekubernetes.NewClientset()
	var kcpDown atomic.Bool
	client.PrependReactor("*", "leases", func(kcptesting.Action) (bool, runtime.Object, error) {
		if kcpDown.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	holder := func() string {
		lease, err := client.Cluster(logicalcluster.NewPath(le.Cluster)).CoordinationV1().Leases(le.Namespace).Get(context.Background(), le.ID, metav1.GetOptions{})
		require.NoError(t, err)
		if lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}

	t.Log("held for the run; a plugin campaigning meanwhile leads only once it is released")
	var pluginLeads atomic.Bool
	pluginCtx, stopPlugin := context.WithCancel(context.Background())
	t.Cleanup(stopPlugin)
	pluginDone := make(chan error, 1)
	err := HoldLease(context.Background(), le, client, "cleanup-1", 5*time.Second, func(ctx context.Context) error {
		require.Equal(t, "cleanup-1", holder())
		go func() {
			pluginDone <- runAsLeader(pluginCtx, le, o.leaderFacts(), client, nil, func(ctx context.Context) error {
				pluginLeads.Store(true)
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(2 * le.LeaseDuration) // past a lease duration: the Lease is renewed
		require.False(t, pluginLeads.Load(), "a plugin led while cleanup held the Lease")
		return errors.New("the run's own error")
	})
	require.EqualError(t, err, "the run's own error")
	require.Eventually(t, pluginLeads.Load, 5*time.Second, 10*time.Millisecond, "the plugin leads once the Lease is released")

	t.Log("the plugin holds it: not acquired within the wait, nothing runs")
	ran := false
	err = HoldLease(context.Background(), le, client, "cleanup-2", time.Second, func(context.Context) error {
		ran = true
		return nil
	})
	require.ErrorContains(t, err, "was not acquired within 1s: a plugin leads")
	require.False(t, ran)
	stopPlugin()
	require.NoError(t, <-pluginDone)
	require.Empty(t, holder(), "the plugin released it on shutdown")

	t.Log("lost: kcp stops answering; the run's context ends with ErrLeaseLost before the Lease expires")
	err = HoldLease(context.Background(), le, client, "cleanup-3", 5*time.Second, func(ctx context.Context) error {
		downAt := time.Now()
		kcpDown.Store(true)
		<-ctx.Done()
		require.Less(t, time.Since(downAt), le.LeaseDuration)
		return context.Cause(ctx)
	})
	require.ErrorIs(t, err, ErrLeaseLost)
}
