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
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// fakeInformers are mountInformers whose informers only record that they run.
func fakeInformers(limit int, failing map[string]bool) (*mountInformers, map[string]bool) {
	running := map[string]bool{}
	m := &mountInformers{denied: map[string]bool{}, pool: newBoundedPool(limit, restmapping.Resource.Key, func(_ context.Context, resource restmapping.Resource) (func(), error) {
		if failing[resource.Key()] {
			return nil, errors.New("cannot watch")
		}
		running[resource.Key()] = true
		return func() { delete(running, resource.Key()) }, nil
	})}
	return m, running
}

func resourceOf(kind string) restmapping.Resource {
	return restmapping.Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: kind + "s"}, Kind: kind}
}

func resources(kinds ...string) []restmapping.Resource {
	out := make([]restmapping.Resource, 0, len(kinds))
	for _, kind := range kinds {
		out = append(out, resourceOf(kind))
	}
	return out
}

func keys(kinds ...string) []string {
	out := make([]string, 0, len(kinds))
	for _, kind := range kinds {
		out = append(out, resourceOf(kind).Key())
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMountInformersLimit follows the informer slots through one sequence of
// syncs, each resource watched running its informer across all clusters
// (no pair of it has one of its own): the limit, the order, a running
// informer keeping its slot, and a slot freeing.
func TestMountInformersLimit(t *testing.T) {
	t.Parallel()
	m, running := fakeInformers(2, map[string]bool{resourceOf("broken").Key(): true})
	ctx := context.Background()
	for _, step := range []struct {
		name        string
		wanted      []restmapping.Resource
		wantRunning []string
		wantDenied  []string
	}{
		{name: "below the limit", wanted: resources("a"), wantRunning: keys("a"), wantDenied: keys()},
		{name: "the earlier ones win", wanted: resources("b", "c", "a"), wantRunning: keys("a", "b"), wantDenied: keys("c")},
		{name: "a running informer keeps its slot", wanted: resources("c", "d", "a", "b"), wantRunning: keys("a", "b"), wantDenied: keys("c", "d")},
		{name: "a slot frees: the first denied one gets it", wanted: resources("d", "c", "b"), wantRunning: keys("b", "d"), wantDenied: keys("c")},
		{name: "one that cannot start is neither running nor denied", wanted: resources("broken", "b"), wantRunning: keys("b"), wantDenied: keys()},
		{name: "nothing wanted", wanted: nil, wantRunning: keys(), wantDenied: keys()},
	} {
		denied := m.sync(ctx, step.wanted)
		needed := map[string]bool{}
		for _, resource := range step.wanted {
			needed[resource.Key()] = true
		}
		m.run(ctx, needed)
		require.Equal(t, step.wantRunning, sortedKeys(running), step.name)
		require.Equal(t, step.wantDenied, sortedKeys(denied), step.name)
		require.Len(t, m.pool.slots, len(step.wantRunning), step.name)
		for _, resource := range step.wanted {
			require.Equal(t, denied[resource.Key()], m.isDenied(resource), step.name)
		}
	}
}

// TestKindReconcilerInformerLimit: three kinds, two informer slots. The third
// kind's Workspaces are told, and converge by themselves once a slot frees.
func TestKindReconcilerInformerLimit(t *testing.T) {
	t.Parallel()
	m, running := fakeInformers(2, nil)
	workspaces := map[string][]*tenancyv1alpha1.Workspace{}
	for _, kind := range []string{"A", "B", "C"} {
		ws := mountedWorkspace(mount.Reference{APIVersion: "example.io/v1", Kind: kind, Name: "n"})
		ws.Name = "ws-" + kind
		workspaces[kindKey(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: kind})] = []*tenancyv1alpha1.Workspace{ws}
	}
	var enqueued, kindsEnqueued []string
	r := &mountsReconciler{
		workspacesOfKind: func(key string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces[key], nil },
		resolve: func(_ logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
			return resourceOf(gvk.Kind), nil
		},
		enqueueWorkspace: func(ws *tenancyv1alpha1.Workspace) { enqueued = append(enqueued, ws.Name) },
		enqueueKind:      func(key string) { kindsEnqueued = append(kindsEnqueued, key) },
		syncInformers:    m.sync,
		runInformers:     m.run,
		kinds:            map[string]kindResolution{},
	}
	ws := &workspacesReconciler{
		resolve: func(_ logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
			return resourceOf(gvk.Kind), nil
		},
		getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://x"}), nil),
		informerDenied: m.isDenied, maxMountInformers: 2, now: func() time.Time { return time.Unix(0, 0) },
	}
	reasonOf := func(kind string) string {
		w := workspaces["example.io/v1/"+kind][0].DeepCopy()
		require.NoError(t, ws.reconcile(context.Background(), w))
		status, _ := mount.StatusOf(w.Annotations)
		return status.Reason
	}
	ctx := context.Background()

	for _, kind := range []string{"A", "B", "C"} {
		require.NoError(t, r.reconcile(ctx, "example.io/v1/"+kind))
	}
	require.Equal(t, keys("A", "B"), sortedKeys(running))
	require.Equal(t, []string{"ws-A", "ws-B", "ws-C"}, enqueued)
	require.Equal(t, mount.ReasonMountReady, reasonOf("A"))
	require.Equal(t, mount.ReasonMountInformerLimitReached, reasonOf("C"))
	require.Empty(t, kindsEnqueued)

	// Nothing changes: nothing is sent anywhere.
	enqueued = nil
	require.NoError(t, r.reconcile(ctx, "example.io/v1/C"))
	require.NoError(t, r.reconcile(ctx, "example.io/v1/A"))
	require.Empty(t, enqueued)
	require.Empty(t, kindsEnqueued)

	// A is mounted nowhere any more: its slot goes to C, whose kind is sent to
	// workspacemounts-mounts again, and whose Workspace then to workspacemounts-workspaces.
	delete(workspaces, "example.io/v1/A")
	require.NoError(t, r.reconcile(ctx, "example.io/v1/A"))
	require.Equal(t, keys("B", "C"), sortedKeys(running))
	require.Equal(t, []string{"example.io/v1/C"}, kindsEnqueued)
	require.Empty(t, enqueued)
	require.NoError(t, r.reconcile(ctx, "example.io/v1/C"))
	require.Equal(t, []string{"ws-C"}, enqueued)
	require.Equal(t, mount.ReasonMountReady, reasonOf("C"))
}

// TestWantedResourcesOrder: resources mounted from more clusters come first,
// then by key, whatever the map order.
func TestWantedResourcesOrder(t *testing.T) {
	t.Parallel()
	r := &mountsReconciler{
		kinds: map[string]kindResolution{
			"x/v1/Wide": {
				byCluster: map[logicalcluster.Name]string{"c1": resourceOf("wide").Key(), "c2": resourceOf("wide").Key(), "c3": ""},
				resources: map[string]restmapping.Resource{resourceOf("wide").Key(): resourceOf("wide")},
			},
			"x/v1/B":        {byCluster: map[logicalcluster.Name]string{"c1": resourceOf("b").Key()}, resources: map[string]restmapping.Resource{resourceOf("b").Key(): resourceOf("b")}},
			"x/v1/A":        {byCluster: map[logicalcluster.Name]string{"c9": resourceOf("a").Key()}, resources: map[string]restmapping.Resource{resourceOf("a").Key(): resourceOf("a")}},
			"x/v1/Unserved": {byCluster: map[logicalcluster.Name]string{"c1": ""}, resources: map[string]restmapping.Resource{}},
		},
		served: map[string]bool{"x/v1/Wide": true, "x/v1/B": true, "x/v1/A": true},
	}
	got := r.wantedResourcesLocked()
	require.Equal(t, resources("wide", "a", "b"), got)
}

// TestMountInformersRun: a watched resource's informer across all clusters
// runs while it is needed, stops when it is not, and with the resource's
// slot; a resource not watched gets none.
func TestMountInformersRun(t *testing.T) {
	t.Parallel()
	m, running := fakeInformers(2, nil)
	ctx := context.Background()
	needs := func(kinds ...string) map[string]bool {
		out := map[string]bool{}
		for _, key := range keys(kinds...) {
			out[key] = true
		}
		return out
	}
	for _, step := range []struct {
		name        string
		wanted      []restmapping.Resource
		needed      map[string]bool
		wantRunning []string
	}{
		{name: "watched, none needed: no informer", wanted: resources("a", "b"), needed: needs(), wantRunning: keys()},
		{name: "one needed", wanted: resources("a", "b"), needed: needs("a"), wantRunning: keys("a")},
		{name: "still needed: kept", wanted: resources("a", "b"), needed: needs("a", "b"), wantRunning: keys("a", "b")},
		{name: "no longer needed: stopped, the slot kept", wanted: resources("a", "b", "c"), needed: needs("b", "c"), wantRunning: keys("b")},
		{name: "no longer wanted: stopped with its slot", wanted: resources("c"), needed: needs("b", "c"), wantRunning: keys("c")},
	} {
		m.sync(ctx, step.wanted)
		m.run(ctx, step.needed)
		require.Equal(t, step.wantRunning, sortedKeys(running), step.name)
	}
}

// TestInformersAcrossClusters is the rule for the informers across all
// clusters: a watched bound resource's always runs; a CRD resource's
// metadata informer only while a pair of it has no informer of its own.
func TestInformersAcrossClusters(t *testing.T) {
	t.Parallel()
	bound := resourceOf("bound")
	bound.Identity = "abc"
	for _, tc := range []struct {
		name      string
		wanted    []restmapping.Resource
		denied    []string
		uncovered []clusterResource
		want      []string
	}{
		{name: "nothing in use"},
		{name: "a bound resource", wanted: []restmapping.Resource{bound}, want: []string{bound.Key()}},
		{name: "a bound resource denied its slot", wanted: []restmapping.Resource{bound}, denied: []string{bound.Key()}},
		{name: "a CRD resource whose every pair has its own informer", wanted: resources("crd")},
		{name: "a CRD resource with a pair without", wanted: resources("crd", "other"), uncovered: []clusterResource{pair("root:b", "crd", 1)}, want: keys("crd")},
		{name: "both", wanted: append(resources("crd"), bound), uncovered: []clusterResource{pair("root:a", "crd", 3), pair("root:b", "crd", 1)},
			want: append(keys("crd"), bound.Key())},
	} {
		denied := map[string]bool{}
		for _, key := range tc.denied {
			denied[key] = true
		}
		require.ElementsMatch(t, tc.want, sortedKeys(informersAcrossClusters(tc.wanted, denied, tc.uncovered)), tc.name)
	}
}

// TestMetadataInformerOnlyForPairsWithoutTheirOwn follows one CRD resource
// through the reconciles of its kind, with its real informer sets (their
// informers only recorded): its metadata informer across all clusters runs
// only while a cluster mounting it has no full-object informer of its own.
func TestMetadataInformerOnlyForPairsWithoutTheirOwn(t *testing.T) {
	t.Parallel()
	// step is the clusters mounting the kind, and whether the metadata
	// informer runs after the kind's reconcile.
	type step struct {
		clusters     []string
		wantMetadata bool
	}
	for _, tc := range []struct {
		name string
		// clusterLimit is --max-cluster-mount-informers.
		clusterLimit int
		steps        []step
	}{
		{name: "under the limit", clusterLimit: 2, steps: []step{
			{clusters: []string{"root:a"}, wantMetadata: false},
			{clusters: []string{"root:a", "root:b"}, wantMetadata: false},
		}},
		{name: "a pair over the limit, then none", clusterLimit: 1, steps: []step{
			{clusters: []string{"root:a"}, wantMetadata: false},
			{clusters: []string{"root:a", "root:b"}, wantMetadata: true},
			{clusters: []string{"root:b"}, wantMetadata: false}, // root:a's slot goes to root:b
			{clusters: nil, wantMetadata: false},
		}},
		{name: "no cluster informers (--max-cluster-mount-informers=0)", clusterLimit: 0, steps: []step{
			{clusters: []string{"root:a"}, wantMetadata: true},
			{clusters: nil, wantMetadata: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, acrossClusters := fakeInformers(10, nil)
			var workspaces []*tenancyv1alpha1.Workspace
			r := &mountsReconciler{
				workspacesOfKind: func(string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces, nil },
				resolve: func(_ logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
					return resourceOf(gvk.Kind), nil
				},
				enqueueWorkspace: func(*tenancyv1alpha1.Workspace) {},
				enqueueKind:      func(string) {},
				syncInformers:    m.sync,
				runInformers:     m.run,
				kinds:            map[string]kindResolution{},
			}
			perCluster := map[string]bool{}
			if tc.clusterLimit > 0 {
				r.syncClusterInformers = (&clusterMountInformers{pool: newBoundedPool(tc.clusterLimit, clusterResource.key,
					func(_ context.Context, p clusterResource) (func(), error) {
						perCluster[string(p.cluster)] = true
						return func() { delete(perCluster, string(p.cluster)) }, nil
					})}).sync
			}
			for _, step := range tc.steps {
				workspaces = nil
				for _, cluster := range step.clusters {
					workspaces = append(workspaces, exampleWorkspace(cluster, "Plain", "ws"))
				}
				require.NoError(t, r.reconcile(context.Background(), exampleKind("Plain")))
				require.Equal(t, step.wantMetadata, acrossClusters[resourceOf("Plain").Key()], "clusters %v", step.clusters)
				require.LessOrEqual(t, len(perCluster), tc.clusterLimit, "clusters %v", step.clusters)
			}
		})
	}
}

// BenchmarkMountObjectInformers reports the heap the mount object informers
// of one CRD resource keep per mount object, as the controller runs them:
// 10,000 KubeClusters in 100 clusters (test/bench/scale's layout), one
// reconcile of their kind by the real informer sets, their real clients
// reading a kcp stand-in over HTTP/2 (as kcp serves the objects, metadata
// at * and full objects per cluster), until every informer started has
// synced. Per --max-cluster-mount-informers: 500 (the default: a full
// informer for every pair, no metadata informer), 50 (half the pairs
// beyond it: the metadata informer too), 0 (the metadata informer alone).
func BenchmarkMountObjectInformers(b *testing.B) {
	const n, clusters = 10000, 100
	resource := kubeClusterResource
	workspaces := make([]*tenancyv1alpha1.Workspace, 0, n)
	server := newMountObjectServer(b, n, clusters)
	for i := range n {
		workspaces = append(workspaces, exampleMountingWorkspace(fmt.Sprintf("root:org-%d", i%clusters), fmt.Sprintf("mount-%d", i)))
	}
	for _, clusterLimit := range []int{DefaultMaxClusterMountInformers, clusters / 2, 0} {
		b.Run(fmt.Sprintf("max-cluster-mount-informers=%d", clusterLimit), func(b *testing.B) {
			wantSynced := min(clusterLimit, clusters)
			if clusterLimit < clusters {
				wantSynced++ // the metadata informer
			}
			var perObject float64
			for range b.N {
				ctx, cancel := context.WithCancel(context.Background())
				synced := make(chan struct{}, wantSynced)
				onSynced := func() { synced <- struct{}{} }
				before := liveHeap()
				caches := &mountCaches{}
				m := newMountInformers(server.metadata, server.dynamic, caches, 10, "", func(restmapping.Resource, interface{}) {},
					func(restmapping.Resource) { onSynced() })
				r := &mountsReconciler{
					workspacesOfKind: func(string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces, nil },
					resolve:          func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) { return resource, nil },
					enqueueWorkspace: func(*tenancyv1alpha1.Workspace) {},
					enqueueKind:      func(string) {},
					syncInformers:    m.sync,
					runInformers:     m.run,
					kinds:            map[string]kindResolution{},
				}
				if clusterLimit > 0 {
					r.syncClusterInformers = newClusterMountInformers(server.dynamic, caches, clusterLimit, "", func(restmapping.Resource, interface{}) {},
						func(logicalcluster.Name, restmapping.Resource) { onSynced() }, nil).sync
				}
				if err := r.reconcile(ctx, kindKey(kubeClusterGVK)); err != nil {
					b.Fatal(err)
				}
				for range wantSynced {
					select {
					case <-synced:
					case <-time.After(time.Minute):
						b.Fatal("the informers did not sync")
					}
				}
				perObject = float64(liveHeap()-before) / n
				runtime.KeepAlive(m)
				runtime.KeepAlive(caches)
				cancel()
				time.Sleep(time.Second) // the informers stopped, their memory freed before the next liveHeap
			}
			b.ReportMetric(perObject, "bytes/object")
		})
	}
}

// mountObjectServer is a kcp stand-in for BenchmarkMountObjectInformers:
// kubeClusterResource's objects, their metadata at * and full objects per
// cluster, as kcp serves them, and watches that send nothing; with the
// controller's clients of it.
type mountObjectServer struct {
	metadata kcpmetadata.ClusterInterface
	dynamic  kcpdynamic.ClusterInterface
	// streams and pages count the streaming lists asked for and the pages listed.
	streams, pages atomic.Int32
}

// newMountObjectServer serves n objects fullMountObject, mount-<i> in
// cluster root:org-<i % clusters>.
func newMountObjectServer(b testing.TB, n, clusters int) *mountObjectServer {
	const listRV = "999999"
	metadataList := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: listRV}}
	lists := map[string]*unstructured.UnstructuredList{}
	for i := range n {
		cluster := fmt.Sprintf("root:org-%d", i%clusters)
		obj := fullMountObject(cluster, fmt.Sprintf("mount-%d", i), strconv.Itoa(1000+i))
		if lists[cluster] == nil {
			lists[cluster] = &unstructured.UnstructuredList{Object: map[string]interface{}{
				"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeClusterList", "metadata": map[string]interface{}{"resourceVersion": listRV}}}
		}
		lists[cluster].Items = append(lists[cluster].Items, *obj)
		var partial metav1.PartialObjectMetadata
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &partial); err != nil {
			b.Fatal(err)
		}
		partial.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
		metadataList.Items = append(metadataList.Items, partial)
	}
	bodies := map[string][]byte{}
	var err error
	if bodies["*"], err = json.Marshal(metadataList); err != nil {
		b.Fatal(err)
	}
	for cluster, list := range lists {
		if bodies[cluster], err = list.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}

	s := &mountObjectServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		if query.Get("watch") == "true" {
			if query.Get("sendInitialEvents") == "true" {
				s.streams.Add(1)
				http.Error(w, "streaming lists are not served", http.StatusBadRequest) // as kcp v0.28: the reflector lists
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		// /clusters/<cluster>/apis/contrib.kcp.io/v1alpha1/kubeclusters
		parts := strings.Split(r.URL.Path, "/")
		body, found := bodies[parts[2]]
		if len(parts) < 3 || !found {
			http.NotFound(w, r)
			return
		}
		if query.Get("limit") != "" {
			s.pages.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	b.Cleanup(srv.Close)
	config := &rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
	}}
	if s.metadata, err = kcpmetadata.NewForConfig(config); err != nil {
		b.Fatal(err)
	}
	if s.dynamic, err = kcpdynamic.NewForConfig(config); err != nil {
		b.Fatal(err)
	}
	return s
}

// exampleMountingWorkspace is a Workspace in cluster mounting KubeCluster name.
func exampleMountingWorkspace(cluster, name string) *tenancyv1alpha1.Workspace {
	ref := kubeClusterRef
	ref.Name = name
	w := mountedWorkspace(ref)
	w.Name = name
	w.Annotations[logicalcluster.AnnotationKey] = cluster
	return w
}

// TestTrimMountObject: a mount object's metadata keeps what its event needs,
// the same trimmed once or twice (listed, then cached), and the objects of
// a cluster share their annotations.
func TestTrimMountObject(t *testing.T) {
	t.Parallel()
	full := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: "uid-" + types.UID(name), ResourceVersion: "12", GenerateName: "m-", Generation: 3,
			Labels:          map[string]string{"a": "b"},
			Annotations:     map[string]string{logicalcluster.AnnotationKey: "root:org", "kubectl.kubernetes.io/last-applied-configuration": "{}", mount.IsMountAnnotationKey: "true"},
			OwnerReferences: []metav1.OwnerReference{{Name: "owner"}},
			Finalizers:      []string{"f"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}}
	}
	once, err := TrimMountObject(full("a"))
	require.NoError(t, err)
	twice, err := TrimMountObject(once.(*mountObjectMeta).DeepCopyObject())
	require.NoError(t, err)
	want := &mountObjectMeta{metav1.ObjectMeta{
		Name: "a", Namespace: "ns", ResourceVersion: "12", Annotations: map[string]string{logicalcluster.AnnotationKey: "root:org"},
	}}
	require.Equal(t, want, once)
	require.Equal(t, want, twice)
	other, err := TrimMountObject(full("b"))
	require.NoError(t, err)
	require.Equal(t, reflect.ValueOf(once.(*mountObjectMeta).Annotations).Pointer(),
		reflect.ValueOf(other.(*mountObjectMeta).Annotations).Pointer(), "one annotation map per cluster")
	m, err := meta.Accessor(once)
	require.NoError(t, err)
	require.Equal(t, "root:org", logicalcluster.From(m).String(), "what the handlers read")
	tombstone := cache.DeletedFinalStateUnknown{Key: "k", Obj: once}
	kept, err := TrimMountObject(tombstone)
	require.NoError(t, err)
	require.Equal(t, tombstone, kept)
}
