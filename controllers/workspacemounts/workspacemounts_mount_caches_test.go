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
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// fullMountObject is a mount object as kcp serves it in a cluster, with what
// the transform drops (managed fields, labels, a large spec).
func fullMountObject(cluster, name, rv string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeCluster",
		"metadata": map[string]interface{}{
			"name": name, "uid": "0b1f6c9e-5d34-4b83-9a55-" + fmt.Sprintf("%012d", len(name)), "resourceVersion": rv,
			"generation": int64(3), "creationTimestamp": "2026-12-01T10:00:00Z",
			"annotations": map[string]interface{}{logicalcluster.AnnotationKey: cluster, mount.IsMountAnnotationKey: mount.IsMountAnnotationValue,
				"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 400)},
			"labels": map[string]interface{}{"team": "a", "env": "prod"},
			"managedFields": []interface{}{
				map[string]interface{}{"manager": "kubectl", "operation": "Update", "apiVersion": "contrib.kcp.io/v1alpha1", "fieldsType": "FieldsV1",
					"fieldsV1": map[string]interface{}{"f:spec": map[string]interface{}{"f:kubeconfig": map[string]interface{}{}}}},
				map[string]interface{}{"manager": "agent", "operation": "Update", "subresource": "status", "fieldsType": "FieldsV1",
					"fieldsV1": map[string]interface{}{"f:status": map[string]interface{}{"f:phase": map[string]interface{}{}, "f:URL": map[string]interface{}{}}}},
			},
		},
		"spec": map[string]interface{}{"mode": "Direct", "secretRef": map[string]interface{}{"name": "kubeconfig", "namespace": "default"}},
		"status": map[string]interface{}{
			"phase": "Ready", "URL": "https://proxy.example/clusters/" + name,
			"conditions": []interface{}{
				map[string]interface{}{"type": "ClusterReady", "status": "True", "reason": "Connected", "lastTransitionTime": "2026-12-01T10:00:00Z"},
			},
		},
	}}
	return obj
}

// TestTrimFullMountObject: the trimmed object keeps its key,
// resourceVersion and mark of a mount object, drops the rest of the
// metadata and the spec, and the conditions of an unmarked object, and the
// contract answers the same for it.
func TestTrimFullMountObject(t *testing.T) {
	t.Parallel()
	obj := fullMountObject("root:org", "proxy", "42")
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(obj)
	require.NoError(t, err)
	out, err := trimFullMountObject(obj.DeepCopy())
	require.NoError(t, err)
	trimmed := out.(*trimmedMountObject)

	trimmedKey, err := kcpcache.MetaClusterNamespaceKeyFunc(trimmed)
	require.NoError(t, err)
	require.Equal(t, key, trimmedKey)
	require.Equal(t, "42", trimmed.GetResourceVersion())
	require.Equal(t, obj.GetUID(), trimmed.GetUID())
	require.Equal(t, map[string]string{logicalcluster.AnnotationKey: "root:org", mount.IsMountAnnotationKey: "true"}, trimmed.GetAnnotations())
	require.Nil(t, trimmed.GetManagedFields())
	require.Nil(t, trimmed.GetLabels())
	rebuilt := trimmed.unstructured()
	require.NotContains(t, rebuilt.Object, "spec")
	require.Equal(t, "42", rebuilt.GetResourceVersion())
	full, _ := statusOfMountObject(kubeClusterRef, obj, mount.URLRule{}, heartbeatRule{})
	fromRebuilt, _ := statusOfMountObject(kubeClusterRef, rebuilt, mount.URLRule{}, heartbeatRule{})
	require.Equal(t, full, fromRebuilt)
	require.Len(t, fromRebuilt.Conditions, 1)
	require.Equal(t, trimmed, trimmed.DeepCopyObject())

	// Unmarked (no annotation, or another value): only the cluster
	// annotation is kept, and no condition.
	for _, annotations := range []map[string]string{
		{logicalcluster.AnnotationKey: "root:org"},
		{logicalcluster.AnnotationKey: "root:org", mount.IsMountAnnotationKey: "True"},
	} {
		unmarked := obj.DeepCopy()
		unmarked.SetAnnotations(annotations)
		out, err := trimFullMountObject(unmarked.DeepCopy())
		require.NoError(t, err)
		trimmed := out.(*trimmedMountObject)
		require.Equal(t, map[string]string{logicalcluster.AnnotationKey: "root:org"}, trimmed.GetAnnotations())
		require.Empty(t, trimmed.conditions)
		fromTrimmed, _ := statusOfMountObject(kubeClusterRef, trimmed.unstructured(), mount.URLRule{}, heartbeatRule{})
		full, _ := statusOfMountObject(kubeClusterRef, unmarked, mount.URLRule{}, heartbeatRule{})
		require.Equal(t, full, fromTrimmed)
		require.Empty(t, fromTrimmed.Conditions)
	}

	// Heartbeats, of a marked and an unmarked object: only the newest is
	// kept, and the contract answers the same, with the same recheck.
	withHeartbeats(obj, "2026-12-01T10:00:00Z", "2026-12-01T10:00:07.5Z")
	for _, annotations := range []map[string]string{
		{logicalcluster.AnnotationKey: "root:org", mount.IsMountAnnotationKey: "true"},
		{logicalcluster.AnnotationKey: "root:org"},
	} {
		o := obj.DeepCopy()
		o.SetAnnotations(annotations)
		out, err := trimFullMountObject(o.DeepCopy())
		require.NoError(t, err)
		trimmed := out.(*trimmedMountObject)
		require.Equal(t, &heartbeat{seconds: time.Date(2026, 12, 1, 10, 0, 7, 0, time.UTC).Unix(), nanos: 5e8, newest: heartbeatCondition}, trimmed.heartbeat)
		require.Equal(t, trimmed, trimmed.DeepCopyObject())
		for _, now := range []time.Time{time.Date(2026, 12, 1, 10, 0, 10, 0, time.UTC), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)} {
			rule := heartbeatRule{timeout: 6 * time.Second, now: now}
			full, fullRecheck := statusOfMountObject(kubeClusterRef, o, mount.URLRule{}, rule)
			fromTrimmed, trimmedRecheck := statusOfMountObject(kubeClusterRef, trimmed.unstructured(), mount.URLRule{}, rule)
			require.Equal(t, full, fromTrimmed)
			require.Equal(t, fullRecheck, trimmedRecheck)
		}
	}

	// A tombstone passes unchanged.
	tombstone := cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
	out, err = trimFullMountObject(tombstone)
	require.NoError(t, err)
	require.Equal(t, tombstone, out)
}

// BenchmarkTrimFullMountObject puts 10,000 mount objects through the
// transform into an informer's indexer and reports the heap they keep per
// object, trimmed and as kcp serves them.
func BenchmarkTrimFullMountObject(b *testing.B) {
	const n = 10000
	for _, tc := range []struct {
		name      string
		transform func(interface{}) (interface{}, error)
	}{
		{"trimmed", trimFullMountObject},
		{"trimmed-heartbeats", func(obj interface{}) (interface{}, error) {
			return trimFullMountObject(withHeartbeats(obj.(*unstructured.Unstructured), "2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z"))
		}},
		{"full", func(obj interface{}) (interface{}, error) { return obj, nil }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perObject float64
			for range b.N {
				before := heapInUse()
				indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
				for i := range n {
					obj, err := tc.transform(fullMountObject(fmt.Sprintf("root:org-%d", i%100), fmt.Sprintf("mount-%d", i), fmt.Sprint(1000+i)))
					if err != nil {
						b.Fatal(err)
					}
					if err := indexer.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perObject = float64(heapInUse()-before) / n
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perObject, "bytes/object")
		})
	}
}

// withHeartbeats gives a fullMountObject the heartbeats a provider writes:
// status.lastProxyHeartbeatTime, and its condition's lastHeartbeatTime.
func withHeartbeats(obj *unstructured.Unstructured, proxy, condition string) *unstructured.Unstructured {
	status := obj.Object["status"].(map[string]interface{})
	status["lastProxyHeartbeatTime"] = proxy
	status["conditions"].([]interface{})[0].(map[string]interface{})["lastHeartbeatTime"] = condition
	return obj
}

func trimmed(obj *unstructured.Unstructured) interface{} {
	out, _ := trimFullMountObject(obj)
	return out
}

func heapInUse() uint64 { return statsAfterGC().HeapInuse }

// liveHeap is the bytes of live objects: steadier than heapInUse where
// many goroutines allocate (informers, clients, a server).
func liveHeap() uint64 { return statsAfterGC().HeapAlloc }

func statsAfterGC() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats
}

// TestMountCachesGet: a cache is read only once synced, only in the
// cluster asked for, and a bound resource's cache across all clusters
// serves every cluster.
func TestMountCachesGet(t *testing.T) {
	t.Parallel()
	crd := kubeClusterResource
	bound := crd
	bound.Identity = "abc"
	caches := &mountCaches{}
	synced := false
	store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc) // a pair's own, as newClusterMountInformer's
	require.NoError(t, store.Add(trimmed(fullMountObject("root:a", "proxy", "1"))))
	caches.byKey.put(mountCacheKey("root:a", crd), mountCache{store: store, synced: func() bool { return synced }})

	_, _, cached := caches.get("root:a", crd, "", "proxy")
	require.False(t, cached, "not synced yet: read from kcp")
	require.False(t, caches.hasSynced("root:a", crd))
	synced = true
	obj, found, cached := caches.get("root:a", crd, "", "proxy")
	require.True(t, cached)
	require.True(t, found)
	require.Equal(t, "1", obj.GetResourceVersion())
	_, found, cached = caches.get("root:a", crd, "", "other")
	require.True(t, cached)
	require.False(t, found, "NotFound from a synced cache")
	_, _, cached = caches.get("root:b", crd, "", "proxy")
	require.False(t, cached, "another cluster has no cache: read from kcp")

	all := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, all.Add(trimmed(fullMountObject("root:a", "proxy", "2"))))
	require.NoError(t, all.Add(trimmed(fullMountObject("root:b", "proxy", "3"))))
	caches.byKey.put(mountCacheKey("", bound), mountCache{store: all, synced: func() bool { return true }})
	obj, found, cached = caches.get("root:b", bound, "", "proxy")
	require.True(t, cached && found)
	require.Equal(t, "3", obj.GetResourceVersion(), "root:b's object, not root:a's")
	_, found, cached = caches.get("root:c", bound, "", "proxy")
	require.True(t, cached)
	require.False(t, found, "root:c holds no such object, whatever other clusters hold")

	caches.byKey.forget(mountCacheKey("root:a", crd))
	_, _, cached = caches.get("root:a", crd, "", "proxy")
	require.False(t, cached, "a stopped informer's cache is not read")
}

func pair(cluster string, kind string, workspaces int) clusterResource {
	return clusterResource{cluster: logicalcluster.Name(cluster), resource: resourceOf(kind), workspaces: workspaces}
}

// TestClusterMountInformersLimit follows the per-cluster informer slots
// through a sequence of syncs.
func TestClusterMountInformersLimit(t *testing.T) {
	t.Parallel()
	running := map[string]bool{}
	m := &clusterMountInformers{pool: newBoundedPool(2, clusterResource.key, func(_ context.Context, p clusterResource) (func(), error) {
		key := mountCacheKey(p.cluster, p.resource)
		if p.cluster == "broken" {
			return nil, errors.New("cannot watch")
		}
		running[key] = true
		return func() { delete(running, key) }, nil
	})}
	key := func(cluster, kind string) string {
		return mountCacheKey(logicalcluster.Name(cluster), resourceOf(kind))
	}
	ctx := context.Background()
	for _, step := range []struct {
		name          string
		wanted        []clusterResource
		wantRunning   []string
		wantOverLimit int
		wantUncovered []clusterResource
	}{
		{name: "below the limit", wanted: []clusterResource{pair("a", "K", 1)}, wantRunning: []string{key("a", "K")}},
		{name: "the most mounted first", wanted: []clusterResource{pair("b", "K", 1), pair("c", "K", 5), pair("a", "K", 1)},
			wantRunning: []string{key("a", "K"), key("c", "K")}, wantOverLimit: 1, wantUncovered: []clusterResource{pair("b", "K", 1)}},
		{name: "a running informer keeps its slot", wanted: []clusterResource{pair("b", "K", 50), pair("c", "K", 5), pair("a", "K", 1)},
			wantRunning: []string{key("a", "K"), key("c", "K")}, wantOverLimit: 1, wantUncovered: []clusterResource{pair("b", "K", 50)}},
		{name: "a slot frees", wanted: []clusterResource{pair("b", "K", 50), pair("c", "K", 5)},
			wantRunning: []string{key("b", "K"), key("c", "K")}},
		{name: "one that cannot start", wanted: []clusterResource{pair("broken", "K", 99), pair("c", "K", 5)},
			wantRunning: []string{key("c", "K")}, wantUncovered: []clusterResource{pair("broken", "K", 99)}},
		{name: "nothing wanted", wanted: nil, wantRunning: []string{}},
	} {
		uncovered := m.sync(ctx, step.wanted)
		require.Equal(t, step.wantOverLimit, m.overLimit, step.name)
		require.ElementsMatch(t, step.wantUncovered, uncovered, step.name)
		require.ElementsMatch(t, step.wantRunning, sortedKeys(running), step.name)
		require.Len(t, m.pool.slots, len(step.wantRunning), step.name)
	}
}

// exampleWorkspace is Workspace name in cluster, mounting the object n of
// kind in example.io/v1 (whose key is exampleKind(kind)).
func exampleWorkspace(cluster, kind, name string) *tenancyv1alpha1.Workspace {
	w := mountedWorkspace(mount.Reference{APIVersion: "example.io/v1", Kind: kind, Name: "n"})
	w.Name = name
	w.Annotations[logicalcluster.AnnotationKey] = cluster
	return w
}

func exampleKind(kind string) string {
	return kindKey(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: kind})
}

// TestKindReconcilerClusterInformers: workspacemounts-mounts asks for a
// per-cluster informer for every (CRD resource, cluster) pair in use, none
// for a bound resource (its informer across all clusters has full objects)
// and none for a resource denied its informer; and for an informer across
// all clusters for the bound resource, and for the CRD resource only while
// a pair of it is left without its own.
func TestKindReconcilerClusterInformers(t *testing.T) {
	t.Parallel()
	workspaces := map[string][]*tenancyv1alpha1.Workspace{
		exampleKind("Plain"):  {exampleWorkspace("root:a", "Plain", "1"), exampleWorkspace("root:a", "Plain", "2"), exampleWorkspace("root:b", "Plain", "3")},
		exampleKind("Bound"):  {exampleWorkspace("root:a", "Bound", "4")},
		exampleKind("Denied"): {exampleWorkspace("root:a", "Denied", "5")},
	}
	var pairs, uncovered []clusterResource
	var needed map[string]bool
	r := &mountsReconciler{
		workspacesOfKind: func(key string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces[key], nil },
		resolve: func(_ logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
			resource := resourceOf(gvk.Kind)
			if gvk.Kind == "Bound" {
				resource.Identity = "abc"
			}
			return resource, nil
		},
		enqueueWorkspace: func(*tenancyv1alpha1.Workspace) {},
		enqueueKind:      func(string) {},
		syncInformers: func(_ context.Context, wanted []restmapping.Resource) map[string]bool {
			return map[string]bool{resourceOf("Denied").Key(): true}
		},
		syncClusterInformers: func(_ context.Context, wanted []clusterResource) []clusterResource {
			pairs = wanted
			return uncovered
		},
		runInformers: func(_ context.Context, n map[string]bool) { needed = n },
		kinds:        map[string]kindResolution{},
	}
	bound := resourceOf("Bound")
	bound.Identity = "abc"
	for key := range workspaces {
		require.NoError(t, r.reconcile(context.Background(), key))
	}
	require.ElementsMatch(t, []clusterResource{pair("root:a", "Plain", 2), pair("root:b", "Plain", 1)}, pairs)
	require.Equal(t, map[string]bool{bound.Key(): true}, needed, "every pair has its own informer: no metadata informer")

	uncovered = []clusterResource{pair("root:b", "Plain", 1)}
	require.NoError(t, r.reconcile(context.Background(), exampleKind("Plain")))
	require.Equal(t, map[string]bool{bound.Key(): true, resourceOf("Plain").Key(): true}, needed, "root:b has no informer of its own")

	uncovered = nil
	delete(workspaces, exampleKind("Plain"))
	require.NoError(t, r.reconcile(context.Background(), exampleKind("Plain")))
	require.Empty(t, pairs, "no Workspace mounts the kind any more: its informers stop")
	require.Equal(t, map[string]bool{bound.Key(): true}, needed)
}

// TestMetadataEventsOfPairsWithTheirOwnInformer: a metadata event enqueues
// the Workspaces mounting the object, except where the object's cluster has
// a synced full-object informer of the resource, whose own event does.
func TestMetadataEventsOfPairsWithTheirOwnInformer(t *testing.T) {
	t.Parallel()
	indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, mountIndexers(mount.Rule{}))
	require.NoError(t, indexer.Add(mountedWorkspace(kubeClusterRef))) // in root:org
	c := &Controller{
		workspaceIndexer: indexer,
		mountObjects:     indexedMountObjects(indexer, mount.Rule{}),
		caches:           &mountCaches{},
		workspacesQueue:  newQueue(""),
	}
	t.Cleanup(c.workspacesQueue.ShutDown)
	event := fullMountObject("root:org", "proxy", "7")

	c.enqueueMountObjectEvent(kubeClusterResource, event)
	require.Equal(t, 1, c.workspacesQueue.Len(), "no informer of the pair: the metadata event enqueues")
	key, _ := c.workspacesQueue.Get()
	c.workspacesQueue.Done(key)

	synced := false
	c.caches.byKey.put(mountCacheKey("root:org", kubeClusterResource), mountCache{
		store: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc), synced: func() bool { return synced },
	})
	c.enqueueMountObjectEvent(kubeClusterResource, event)
	require.Equal(t, 1, c.workspacesQueue.Len(), "the pair's informer has not synced: the metadata event enqueues")
	key, _ = c.workspacesQueue.Get()
	c.workspacesQueue.Done(key)

	synced = true
	c.enqueueMountObjectEvent(kubeClusterResource, event)
	require.Equal(t, 0, c.workspacesQueue.Len(), "the pair's synced informer reports the change itself")
	c.enqueueMountObject(kubeClusterResource, trimmed(event))
	require.Equal(t, 1, c.workspacesQueue.Len(), "an event of the full informer (a trimmed object) enqueues")
}

// TestWorkspacesReadAgainWhenAnInformerSyncs: an informer that synced sends
// the Workspaces whose kind resolves to its resource, in its cluster (all
// clusters for one across them), back to workspacemounts-workspaces, and no
// others. (A mount object deleted between a Workspace's GET and the
// informer's list has no event: restarting kcp made that happen.)
func TestWorkspacesReadAgainWhenAnInformerSyncs(t *testing.T) {
	t.Parallel()
	workspaces := map[string][]*tenancyv1alpha1.Workspace{
		exampleKind("Plain"): {exampleWorkspace("root:a", "Plain", "1"), exampleWorkspace("root:a", "Plain", "2"), exampleWorkspace("root:b", "Plain", "3"), exampleWorkspace("root:c", "Plain", "4")},
		exampleKind("Alias"): {exampleWorkspace("root:a", "Alias", "5")}, // resolves to plains in root:a too
		exampleKind("Other"): {exampleWorkspace("root:a", "Other", "6")},
	}
	var enqueued []string
	r := &mountsReconciler{
		workspacesOfKind: func(key string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces[key], nil },
		resolve: func(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
			switch {
			case cluster == "root:c":
				return restmapping.Resource{}, restmapping.ErrKindNotServed
			case gvk.Kind == "Alias":
				return resourceOf("Plain"), nil
			}
			return resourceOf(gvk.Kind), nil
		},
		enqueueWorkspace: func(ws *tenancyv1alpha1.Workspace) { enqueued = append(enqueued, ws.Name) },
		enqueueKind:      func(string) {},
		syncInformers:    func(context.Context, []restmapping.Resource) map[string]bool { return nil },
		runInformers:     func(context.Context, map[string]bool) {},
		kinds:            map[string]kindResolution{},
	}
	for key := range workspaces {
		require.NoError(t, r.reconcile(context.Background(), key))
	}

	for _, tc := range []struct {
		name     string
		resource string
		cluster  logicalcluster.Name
		want     []string
	}{
		{name: "a pair's informer", resource: "Plain", cluster: "root:a", want: []string{"1", "2", "5"}},
		{name: "another pair's", resource: "Plain", cluster: "root:b", want: []string{"3"}},
		{name: "an informer across all clusters", resource: "Plain", want: []string{"1", "2", "3", "5"}},
		{name: "a cluster where the kind is not served", resource: "Plain", cluster: "root:c"},
		{name: "a resource no kind resolves to", resource: "Unused"},
	} {
		enqueued = nil
		r.enqueueWorkspacesUsing(resourceOf(tc.resource).Key(), tc.cluster)
		require.ElementsMatch(t, tc.want, enqueued, tc.name)
	}
}

// TestRunMountInformerSynced: onSynced is called once the informer has
// listed, and never for one stopped before it lists.
func TestRunMountInformerSynced(t *testing.T) {
	t.Parallel()
	newInformer := func(listed <-chan struct{}) cache.SharedIndexInformer {
		return kcpinformers.NewSharedIndexInformer(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (k8sruntime.Object, error) {
				select {
				case <-listed:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &unstructured.UnstructuredList{Object: map[string]interface{}{"metadata": map[string]interface{}{"resourceVersion": "5"}},
					Items: []unstructured.Unstructured{*fullMountObject("root:a", "x", "5")}}, nil
			},
			WatchFuncWithContext: func(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
				if options.SendInitialEvents != nil {
					// As kcp v0.28 answers a watch-list: the reflector lists instead.
					return nil, errors.New("streaming lists are not served")
				}
				return watch.NewFake(), nil
			},
		}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	}

	listed := make(chan struct{})
	synced := make(chan struct{})
	t.Cleanup(runMountInformer(context.Background(), newInformer(listed), func() { close(synced) }))
	select {
	case <-synced:
		t.Fatal("onSynced was called before the informer listed")
	case <-time.After(100 * time.Millisecond):
	}
	close(listed)
	select {
	case <-synced:
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("onSynced was not called after the informer listed")
	}

	called := make(chan struct{}, 1)
	stopEarly := runMountInformer(context.Background(), newInformer(make(chan struct{})), func() { called <- struct{}{} })
	stopEarly()
	select {
	case <-called:
		t.Fatal("onSynced was called for an informer stopped before it listed")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestClusterMountInformer reads mount objects of one cluster from the
// plain informer startFullInformer runs for a (CRD resource, cluster) pair,
// served as kcp serves them: its cache, keyed by namespace and name, holds
// that cluster's objects, and only them, once synced.
func TestClusterMountInformer(t *testing.T) {
	t.Parallel()
	server := newMountObjectServer(t, 6, 2) // mount-0, mount-2, mount-4 in root:org-0
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	caches := &mountCaches{}
	var lock sync.Mutex
	var events []string
	synced := make(chan struct{})
	stop, err := startFullInformer(ctx, server.dynamic, caches, "root:org-0", kubeClusterResource, func(_ restmapping.Resource, obj interface{}) {
		lock.Lock()
		defer lock.Unlock()
		events = append(events, obj.(*trimmedMountObject).Name)
	}, func() { close(synced) }, listBound{})
	require.NoError(t, err)
	select {
	case <-synced:
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("the informer did not sync")
	}
	obj, found, cached := caches.get("root:org-0", kubeClusterResource, "", "mount-2")
	require.True(t, cached)
	require.True(t, found)
	require.Equal(t, "mount-2", obj.GetName())
	require.Equal(t, "root:org-0", logicalcluster.From(obj).String())
	_, found, cached = caches.get("root:org-0", kubeClusterResource, "", "mount-1") // root:org-1's
	require.True(t, cached)
	require.False(t, found)
	_, _, cached = caches.get("root:org-1", kubeClusterResource, "", "mount-1")
	require.False(t, cached, "no informer runs in root:org-1")
	lock.Lock()
	require.ElementsMatch(t, []string{"mount-0", "mount-2", "mount-4"}, events, "handlers ran by the time it synced")
	lock.Unlock()
	require.Zero(t, server.streams.Load(), "listed, so that every list is bounded: never streamed")
	require.Equal(t, int32(1), server.pages.Load(), "listed in pages")
	stop()
	_, _, cached = caches.get("root:org-0", kubeClusterResource, "", "mount-2")
	require.False(t, cached, "a stopped informer's cache is not read")
}

// BenchmarkClusterMountInformer measures what one idle informer of one
// cluster's mount objects costs beside its objects: the plain informer
// newClusterMountInformer runs, and the shared informer it replaced
// (newMountInformer), each with the one handler the controller adds.
// Reported per informer, over 100 informers that listed nothing: heap,
// goroutine stacks and goroutines.
func BenchmarkClusterMountInformer(b *testing.B) {
	const n = 100
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &unstructured.UnstructuredList{Object: map[string]interface{}{"metadata": map[string]interface{}{"resourceVersion": "1"}}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
			if options.SendInitialEvents != nil && *options.SendInitialEvents {
				return nil, errors.New("streaming lists are not served (kcp v0.28)") // the reflector lists instead
			}
			return watch.NewFake(), nil
		},
	}
	onEvent := func(restmapping.Resource, interface{}) {}
	for _, informer := range []struct {
		name  string
		start func() mountInformer
	}{
		{"plain", func() mountInformer {
			_, controller := newClusterMountInformer(lw, "root:org", kubeClusterResource, onEvent)
			return controller
		}},
		{"shared", func() mountInformer {
			shared, err := newMountInformer(lw, &unstructured.Unstructured{}, trimFullMountObject, kubeClusterResource, onEvent)
			if err != nil {
				b.Fatal(err)
			}
			return shared
		}},
	} {
		b.Run(informer.name, func(b *testing.B) {
			var heap, stack, goroutines float64
			for range b.N {
				ctx, cancel := context.WithCancel(context.Background())
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				goroutinesBefore := runtime.NumGoroutine()
				synced := make(chan struct{}, n)
				for range n {
					runMountInformer(ctx, informer.start(), func() { synced <- struct{}{} })
				}
				for range n {
					<-synced
				}
				time.Sleep(100 * time.Millisecond) // the synced goroutines of runMountInformer end
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
				stack = (float64(after.StackInuse) - float64(before.StackInuse)) / n
				goroutines = float64(runtime.NumGoroutine()-goroutinesBefore) / n
				cancel()
				time.Sleep(100 * time.Millisecond)
			}
			b.ReportMetric(heap, "heap-bytes/informer")
			b.ReportMetric(stack, "stack-bytes/informer")
			b.ReportMetric(goroutines, "goroutines/informer")
		})
	}
}
