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
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// versioned is a mount object in phase at resourceVersion rv.
func versioned(phase, rv string) *unstructured.Unstructured {
	obj := mountObject(map[string]interface{}{"phase": phase, "URL": "https://proxy.example/" + phase})
	obj.SetResourceVersion(rv)
	return obj
}

// TestReadMountObjectFreshness: the cache is read instead of a GET only when
// it is synced and not behind what the Workspace's last read found; the
// GET decides otherwise, and what is written follows the newer read.
func TestReadMountObjectFreshness(t *testing.T) {
	t.Parallel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "contrib.kcp.io", Resource: "kubeclusters"}, "proxy")
	for _, tc := range []struct {
		name string
		// previous is what the last reconcile read (from kcp), nil for none.
		previous *unstructured.Unstructured
		// previousNotFound: the last read found no object.
		previousNotFound bool
		// previousOther: the last read was of another object.
		previousOther bool
		// cached is the cache's answer; cached false: no synced cache.
		cachedObj           *unstructured.Unstructured
		cachedFound, cached bool
		// fromKCP is the GET's answer.
		fromKCP    *unstructured.Unstructured
		fromKCPErr error

		wantGET   bool
		wantPhase mount.Phase
	}{
		{name: "no synced cache: GET", cached: false, fromKCP: versioned("Ready", "10"), wantGET: true, wantPhase: mount.PhaseReady},
		{name: "first read from the cache", cachedObj: versioned("Ready", "10"), cachedFound: true, cached: true, wantPhase: mount.PhaseReady},
		{name: "the cache at the version last read", previous: versioned("Ready", "10"),
			cachedObj: versioned("Ready", "10"), cachedFound: true, cached: true, wantPhase: mount.PhaseReady},
		{name: "the cache newer than the last read", previous: versioned("Connecting", "10"),
			cachedObj: versioned("Ready", "11"), cachedFound: true, cached: true, wantPhase: mount.PhaseReady},
		{name: "the cache behind the last read (a GET before the informer synced, a relist from kcp's watch cache): GET",
			previous: versioned("Ready", "11"), cachedObj: versioned("Connecting", "10"), cachedFound: true, cached: true,
			fromKCP: versioned("Ready", "11"), wantGET: true, wantPhase: mount.PhaseReady},
		{name: "the cache behind, kcp newer still", previous: versioned("Connecting", "11"), cachedObj: versioned("Initializing", "10"), cachedFound: true, cached: true,
			fromKCP: versioned("Ready", "12"), wantGET: true, wantPhase: mount.PhaseReady},
		{name: "a resourceVersion that is no number is not trusted", previous: versioned("Connecting", "11"),
			cachedObj: versioned("Ready", "x"), cachedFound: true, cached: true, fromKCP: versioned("Connecting", "11"), wantGET: true, wantPhase: mount.PhaseConnecting},
		{name: "a resourceVersion that is no number, nothing read before", cachedObj: versioned("Ready", "x"), cachedFound: true, cached: true, wantPhase: mount.PhaseReady},
		{name: "NotFound from the synced cache, nothing read before", cached: true, wantPhase: mount.PhaseNotFound},
		{name: "NotFound from the cache, not found before either", previousNotFound: true, cached: true, wantPhase: mount.PhaseNotFound},
		{name: "gone from the cache after it was found: GET confirms", previous: versioned("Ready", "10"), cached: true,
			fromKCPErr: notFound, wantGET: true, wantPhase: mount.PhaseNotFound},
		{name: "gone from the cache while kcp still has it: kcp wins", previous: versioned("Ready", "10"), cached: true,
			fromKCP: versioned("Ready", "12"), wantGET: true, wantPhase: mount.PhaseReady},
		{name: "in the cache after a read that found none: GET confirms", previousNotFound: true,
			cachedObj: versioned("Ready", "10"), cachedFound: true, cached: true, fromKCPErr: notFound, wantGET: true, wantPhase: mount.PhaseNotFound},
		{name: "the last read was of another object", previous: versioned("Ready", "99"), previousOther: true,
			cachedObj: versioned("Connecting", "10"), cachedFound: true, cached: true, wantPhase: mount.PhaseConnecting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := false
			r := &workspacesReconciler{
				resolve: servedEverywhere,
				getMountObject: func(_ context.Context, cluster logicalcluster.Name, _ restmapping.Resource, _, name string) (*unstructured.Unstructured, error) {
					got = true
					require.Equal(t, logicalcluster.Name("root:org"), cluster)
					require.Equal(t, "proxy", name)
					return tc.fromKCP, tc.fromKCPErr
				},
				cachedMountObject: func(cluster logicalcluster.Name, _ restmapping.Resource, _, name string) (*unstructured.Unstructured, bool, bool) {
					require.Equal(t, logicalcluster.Name("root:org"), cluster, "the cache is read in the Workspace's own cluster")
					require.Equal(t, "proxy", name)
					return tc.cachedObj, tc.cachedFound, tc.cached
				},
				informerDenied: neverDenied,
				now:            time.Now,
			}
			ws := mountedWorkspace(kubeClusterRef)
			wsKey := "root:org|mounted"
			object := objectHash(objectKey("root:org", kubeClusterGVK.Group, kubeClusterGVK.Kind, "", "proxy"))
			if tc.previousOther {
				object++
			}
			switch {
			case tc.previous != nil:
				r.reads.put(wsKey, readVersion{object: object, found: true, resourceVersion: parseResourceVersion(tc.previous.GetResourceVersion())})
			case tc.previousNotFound:
				r.reads.put(wsKey, readVersion{object: object})
			}

			require.NoError(t, r.reconcile(context.Background(), ws))
			require.Equal(t, tc.wantGET, got, "GET")
			status, found := mount.StatusOf(ws.Annotations)
			require.True(t, found)
			require.Equal(t, tc.wantPhase, status.Phase)

			// The read is remembered: the next one compares with it.
			last, known := r.reads.get(wsKey)
			require.True(t, known)
			require.Equal(t, tc.wantPhase != mount.PhaseNotFound, last.found)
		})
	}
}

// TestReadMountObjectSequence follows one Workspace through the events of a
// metadata informer and a full-object informer in the order kcp may
// deliver them: no write ever goes back to an older state.
func TestReadMountObjectSequence(t *testing.T) {
	t.Parallel()
	var kcpObj, cacheObj *unstructured.Unstructured
	synced, gets := false, 0
	r := &workspacesReconciler{
		resolve: servedEverywhere,
		getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
			gets++
			return kcpObj, nil
		},
		cachedMountObject: func(logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, bool, bool) {
			return cacheObj, cacheObj != nil, synced
		},
		informerDenied: neverDenied,
		now:            time.Now,
	}
	ws := mountedWorkspace(kubeClusterRef)
	for _, step := range []struct {
		name          string
		kcp, cache    *unstructured.Unstructured
		synced        bool
		wantPhase     mount.Phase
		wantGETsSoFar int
	}{
		{name: "a metadata event before the cluster's informer synced: GET", kcp: versioned("Connecting", "5"), synced: false,
			wantPhase: mount.PhaseConnecting, wantGETsSoFar: 1},
		{name: "kcp moved on; the informer synced from an older list", kcp: versioned("Ready", "6"), cache: versioned("Initializing", "4"), synced: true,
			wantPhase: mount.PhaseReady, wantGETsSoFar: 2},
		{name: "the informer catches up to 6", kcp: versioned("Ready", "6"), cache: versioned("Ready", "6"), synced: true,
			wantPhase: mount.PhaseReady, wantGETsSoFar: 2},
		{name: "the next change, from the cache", kcp: versioned("Connecting", "7"), cache: versioned("Connecting", "7"), synced: true,
			wantPhase: mount.PhaseConnecting, wantGETsSoFar: 2},
	} {
		kcpObj, cacheObj, synced = step.kcp, step.cache, step.synced
		require.NoError(t, r.reconcile(context.Background(), ws), step.name)
		status, _ := mount.StatusOf(ws.Annotations)
		require.Equal(t, step.wantPhase, status.Phase, step.name)
		require.Equal(t, step.wantGETsSoFar, gets, step.name)
	}

	// Unmounted: the read is forgotten.
	ws.Spec.Mount = nil
	require.NoError(t, r.reconcile(context.Background(), ws))
	_, known := r.reads.get("root:org|mounted")
	require.False(t, known)
}

// BenchmarkLastReads reports the heap the last reads of 10,000 mounted
// Workspaces keep.
func BenchmarkLastReads(b *testing.B) {
	const n = 10000
	var perWorkspace float64
	for range b.N {
		before := heapInUse()
		reads := &lastReads{}
		for i := range n {
			key := fmt.Sprintf("root:org-%d|mount-%d", i%100, i)
			reads.put(key, readVersion{object: objectHash(key), found: true, resourceVersion: uint64(1000 + i)})
		}
		perWorkspace = float64(heapInUse()-before) / n
		runtime.KeepAlive(reads)
	}
	b.ReportMetric(perWorkspace, "bytes/workspace")
}
