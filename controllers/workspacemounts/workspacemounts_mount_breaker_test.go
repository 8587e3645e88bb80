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

package workspacemounts

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// testBreaker is a mountBreaker on a clock of the test's, recording the
// pairs it closes and the keys it enqueues.
type testBreaker struct {
	*mountBreaker
	lock     sync.Mutex
	now      time.Time
	closed   []string
	enqueued []string
}

func newTestBreaker() *testBreaker {
	b := &testBreaker{now: time.Unix(1000, 0)}
	b.mountBreaker = newMountBreaker(10*time.Second, 40*time.Second, testTenantOf,
		func(pair string) { b.lock.Lock(); defer b.lock.Unlock(); b.closed = append(b.closed, pair) },
		func(key string) { b.lock.Lock(); defer b.lock.Unlock(); b.enqueued = append(b.enqueued, key) })
	b.mountBreaker.now = func() time.Time { return b.now }
	return b
}

func TestMountBreaker(t *testing.T) {
	t.Parallel()
	const pair = "root:hostile|hangs.v2.example.com"
	b := newTestBreaker()
	admit := func(key string, want breakerVerdict, wantAfter time.Duration) {
		t.Helper()
		verdict, after := b.admit(pair, key)
		require.Equal(t, want, verdict, "verdict for %s", key)
		require.Equal(t, wantAfter, after, "retry of %s", key)
	}

	// Never answered: one read at a time, the others wait for it.
	admit("a", readProbes, 0)
	admit("b", readWaits, 0)
	admit("c", readWaits, 0)
	b.done(pair, true, context.DeadlineExceeded)
	require.True(t, b.open(pair), "a read that timed out opens the pair")
	require.ElementsMatch(t, []string{"b", "c"}, b.enqueued, "the keys that waited are enqueued when the read ends")
	admit("b", readRefused, 10*time.Second)

	// Open: no read until the backoff ends; then one probe.
	b.now = b.now.Add(4 * time.Second)
	admit("c", readRefused, 6*time.Second)
	b.now = b.now.Add(6 * time.Second)
	admit("a", readProbes, 0)
	admit("b", readRefused, 10*time.Second)
	b.done(pair, true, apierrors.NewTimeoutError("conversion webhook", 1))
	admit("b", readRefused, 20*time.Second)
	b.now = b.now.Add(20 * time.Second)
	admit("a", readProbes, 0)
	b.done(pair, true, context.DeadlineExceeded)
	admit("a", readRefused, 40*time.Second)
	b.now = b.now.Add(40 * time.Second)
	admit("a", readProbes, 0)
	b.done(pair, true, context.DeadlineExceeded)
	admit("a", readRefused, 40*time.Second) // capped
	require.Empty(t, b.closed)

	// The probe answers: closed, its Workspaces read again, and read by any number at once.
	b.now = b.now.Add(40 * time.Second)
	admit("a", readProbes, 0)
	b.done(pair, true, nil)
	require.False(t, b.open(pair))
	require.Equal(t, []string{pair}, b.closed)
	admit("a", readAllowed, 0)
	admit("b", readAllowed, 0)
	admit("c", readAllowed, 0)

	// It times out again: open at the first backoff.
	b.done(pair, false, context.DeadlineExceeded)
	admit("a", readRefused, 10*time.Second)
}

func TestMountBreakerOtherOutcomes(t *testing.T) {
	t.Parallel()
	b := newTestBreaker()
	const pair = "root:org|kubeclusters.v1alpha1.contrib.kcp.io"
	verdict, _ := b.admit(pair, "a")
	require.Equal(t, readProbes, verdict)
	verdict, _ = b.admit(pair, "b")
	require.Equal(t, readWaits, verdict)
	// An error that is no timeout decides nothing: the next read is a probe again.
	b.done(pair, true, apierrors.NewInternalError(errors.New("boom")))
	require.False(t, b.open(pair))
	require.Equal(t, []string{"b"}, b.enqueued)
	verdict, _ = b.admit(pair, "b")
	require.Equal(t, readProbes, verdict)
	// NotFound is an answer.
	b.done(pair, true, apierrors.NewNotFound(kubeClusterResource.GroupResource(), "proxy"))
	verdict, _ = b.admit(pair, "c")
	require.Equal(t, readAllowed, verdict)
	verdict, _ = b.admit(pair, "d")
	require.Equal(t, readAllowed, verdict, "a pair that answered is read by any number at once")

	// A pair's informer that cannot list opens it; one that lists closes it.
	const informerPair = "root:org|hangs.v2.example.com"
	b.timedOut(informerPair)
	require.True(t, b.open(informerPair))
	b.answered(informerPair)
	require.False(t, b.open(informerPair))
	require.Equal(t, []string{informerPair}, b.closed)
}

func TestMountBreakerForgetsClosedPairs(t *testing.T) {
	t.Parallel()
	b := newTestBreaker()
	for i := range 10 * minPruneAt {
		pair := "root:org|r" + string(rune('a'+i%26)) + time.Duration(i).String()
		verdict, _ := b.admit(pair, "k")
		b.done(pair, verdict == readProbes, nil)
	}
	b.timedOut("root:hostile|hangs")
	b.lock.Lock()
	n := len(b.pairs)
	b.lock.Unlock()
	require.LessOrEqual(t, n, 2*minPruneAt, "closed pairs are forgotten")
	require.True(t, b.open("root:hostile|hangs"), "an open pair is never forgotten")
}

// TestReadMountObjectBehindBreaker: a GET that times out makes the
// Workspace Unknown, reason MountKindNotAnswering, and the other
// Workspaces of the pair are refused without a request until the backoff
// ends.
func TestReadMountObjectBehindBreaker(t *testing.T) {
	t.Parallel()
	b := newTestBreaker()
	gets := 0
	answer := context.DeadlineExceeded
	r := &workspacesReconciler{
		resolve: servedEverywhere,
		getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
			gets++
			if answer != nil {
				return nil, answer
			}
			return mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/"}), nil
		},
		informerDenied: neverDenied,
		breaker:        b.mountBreaker,
		requestTimeout: 10 * time.Second,
		now:            time.Now,
	}
	for i, want := range []int{1, 1, 1} {
		ws := mountedWorkspace(kubeClusterRef)
		state, err := r.mountState(context.Background(), ws)
		require.NoError(t, err)
		require.Equal(t, mount.PhaseUnknown, state.status.Phase, "Workspace %d", i)
		require.Equal(t, mount.ReasonMountKindNotAnswering, state.status.Reason)
		require.Contains(t, state.status.Message, "does not answer")
		require.Equal(t, 10*time.Second, state.recheckAfter, "reconciled again when the backoff ends")
		require.Equal(t, want, gets, "GETs after Workspace %d", i)
	}
	// The backoff ends, kcp answers: Ready, and the pair is closed.
	b.now = b.now.Add(10 * time.Second)
	answer = nil
	state, err := r.mountState(context.Background(), mountedWorkspace(kubeClusterRef))
	require.NoError(t, err)
	require.Equal(t, mount.PhaseReady, state.status.Phase)
	require.Len(t, b.closed, 1)
}

// TestReadMountObjectWaitsForProbe: while the first read of a pair never
// answered is under way, another Workspace of the pair waits (errReadWaits).
func TestReadMountObjectWaitsForProbe(t *testing.T) {
	t.Parallel()
	b := newTestBreaker()
	pair := mountCacheKey("root:org", kubeClusterResource)
	verdict, _ := b.admit(pair, "root:org|other")
	require.Equal(t, readProbes, verdict)
	r := &workspacesReconciler{
		resolve: servedEverywhere,
		getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
			t.Fatal("no GET while the probe is under way")
			return nil, nil
		},
		informerDenied: neverDenied,
		breaker:        b.mountBreaker,
		now:            time.Now,
	}
	_, err := r.mountState(context.Background(), mountedWorkspace(kubeClusterRef))
	require.ErrorIs(t, err, errReadWaits)
	b.done(pair, true, nil)
	require.Equal(t, []string{"root:org|mounted"}, b.enqueued)
}

// TestMountBreakerProbesPerTenant: a tenant with many pairs that hang holds
// maxProbesPerTenant workers at most; another tenant's probe goes at once.
func TestMountBreakerProbesPerTenant(t *testing.T) {
	t.Parallel()
	b := newTestBreaker()
	pairOf := func(cluster string, i int) string {
		return cluster + "|hangs" + strconv.Itoa(i) + ".v2.example.com"
	}
	for i := range maxProbesPerTenant {
		verdict, _ := b.admit(pairOf("hostile-1", i), "k")
		require.Equal(t, readProbes, verdict)
	}
	verdict, _ := b.admit(pairOf("hostile-2", 9), "hostile-2|w")
	require.Equal(t, readWaits, verdict, "the tenant's probes are all under way, whatever the cluster")
	verdict, _ = b.admit(pairOf("honest-1", 0), "honest-1|w")
	require.Equal(t, readProbes, verdict, "another tenant probes at once")
	b.done(pairOf("hostile-1", 0), true, context.DeadlineExceeded)
	require.Equal(t, []string{"hostile-2|w"}, b.enqueued, "a probe that ends hands on the tenant's parked keys")
	verdict, _ = b.admit(pairOf("hostile-2", 9), "hostile-2|w")
	require.Equal(t, readProbes, verdict)
}
