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
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// TestHandlerForAllIgnoresRelistedObjects: a relist (kcp's watch cache gone,
// 410 Gone) reports every object again as an update of itself; only a new
// resourceVersion is a change worth reconciling.
func TestHandlerForAllIgnoresRelistedObjects(t *testing.T) {
	t.Parallel()
	var seen []string
	handler := handlerForAll(func(obj interface{}) { seen = append(seen, obj.(*metav1.PartialObjectMetadata).ResourceVersion) })
	object := func(rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
	}
	handler.OnAdd(object("1"), false)
	handler.OnUpdate(object("1"), object("1"))
	handler.OnUpdate(object("1"), object("2"))
	handler.OnUpdate(object(""), object("")) // no version to compare: a change
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "a", Obj: object("2")})
	require.Equal(t, []string{"1", "2", "", "2"}, seen)
}

// TestRetryRateLimiterIsCapped: a key that keeps failing (conflicts from a
// cache that catches up late after a kcp outage) is tried again at least
// every MaxRetryDelay, not after client-go's default of up to 1000s.
func TestRetryRateLimiterIsCapped(t *testing.T) {
	t.Parallel()
	limiter := retryRateLimiter()
	var last time.Duration
	for range 30 {
		last = limiter.When("root|ws")
	}
	require.Equal(t, MaxRetryDelay, last)
	limiter.Forget("root|ws")
	require.Less(t, limiter.When("root|ws"), time.Second, "a success starts the backoff again")
}

// fakeKCP holds Workspaces as kcp does: a merge patch applies when its
// resourceVersion is the current one, else it conflicts; a status patch
// changes only the status, any other only metadata and spec, and never
// unsets spec.URL ("URL cannot be unset"); each write bumps the
// resourceVersion.
type fakeKCP struct {
	workspaces map[string]*tenancyv1alpha1.Workspace // by name
	version    int
	patches    []fakePatch
	reads      int
}

type fakePatch struct {
	subresource string
	patch       map[string]interface{}
	conflicted  bool
}

func newFakeKCP(workspaces ...*tenancyv1alpha1.Workspace) *fakeKCP {
	k := &fakeKCP{workspaces: map[string]*tenancyv1alpha1.Workspace{}, version: 1}
	for _, ws := range workspaces {
		ws = ws.DeepCopy()
		ws.ResourceVersion = strconv.Itoa(k.version)
		k.workspaces[ws.Name] = ws
	}
	return k
}

func (k *fakeKCP) get(_ context.Context, _ logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
	k.reads++
	ws, found := k.workspaces[name]
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	return ws.DeepCopy(), nil
}

func (k *fakeKCP) patch(_ context.Context, _ logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
	current, found := k.workspaces[name]
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	recorded := fakePatch{subresource: strings.Join(subresources, "/")}
	if err := json.Unmarshal(patch, &recorded.patch); err != nil {
		return nil, err
	}
	if version, _, _ := unstructured.NestedString(recorded.patch, "metadata", "resourceVersion"); version != current.ResourceVersion {
		recorded.conflicted = true
		k.patches = append(k.patches, recorded)
		return nil, apierrors.NewConflict(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name, errors.New("the object has been modified"))
	}
	k.patches = append(k.patches, recorded)
	currentJSON, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	patchedJSON, err := jsonpatch.MergePatch(currentJSON, patch)
	if err != nil {
		return nil, err
	}
	patched := &tenancyv1alpha1.Workspace{}
	if err := json.Unmarshal(patchedJSON, patched); err != nil {
		return nil, err
	}
	if recorded.subresource == "status" {
		current.Status = patched.Status
	} else {
		if current.Spec.URL != "" && patched.Spec.URL == "" { // WorkspaceSpec's validation rule
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: "tenancy.kcp.io", Kind: "Workspace"}, name, nil)
		}
		current.ObjectMeta, current.Spec = patched.ObjectMeta, patched.Spec
	}
	k.version++
	current.ResourceVersion = strconv.Itoa(k.version)
	return current.DeepCopy(), nil
}

// cached is what the informer holds of the Workspace kcp has.
func (k *fakeKCP) cached(name string) *tenancyv1alpha1.Workspace {
	ws := k.workspaces[name].DeepCopy()
	TrimWorkspace(ws, mount.Rule{LegacyAnnotation: true})
	return ws
}

// testController is a controller over k whose informer cache holds what
// cache returns, reading mount objects with getMountObject.
func testController(k *fakeKCP, routing RoutingOptions, getMountObject func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error)) (*Controller, cache.Indexer) {
	indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
	return &Controller{
		tenantOf:        func(cluster logicalcluster.Name) tenant.Name { return tenant.Of(cluster, nil) },
		workspaceLister: tenancyv1alpha1listers.NewWorkspaceClusterLister(indexer),
		workspaces: &workspacesReconciler{
			resolve: servedEverywhere, getMountObject: getMountObject, informerDenied: neverDenied, routing: routing,
			now: func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) },
		},
		patchWorkspace: k.patch,
		getWorkspace:   k.get,
		mountObjects:   NewMountObjectIndex(mount.Rule{LegacyAnnotation: true}),
	}, indexer
}

// syncCache puts what kcp has of the Workspace into the informer cache, as its watch does.
func syncCache(t *testing.T, k *fakeKCP, indexer cache.Indexer, name string) string {
	t.Helper()
	ws := k.cached(name)
	require.NoError(t, indexer.Update(ws))
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	require.NoError(t, err)
	return key
}

// TestProcessWorkspaceRetriesAConflictFromKCP: after a patch conflicted (the
// cache is behind kcp, as while a watch catches up after kcp came back), the
// next try reads the Workspace from kcp and patches against that version,
// instead of conflicting again from the cache; the try after reads the
// cache again.
func TestProcessWorkspaceRetriesAConflictFromKCP(t *testing.T) {
	t.Parallel()
	k := newFakeKCP(mountedWorkspace(kubeClusterRef))
	c, indexer := testController(k, RoutingOptions{}, returns(mountObject(map[string]interface{}{"phase": "Ready"}), nil))
	stale := k.cached("mounted")
	k.workspaces["mounted"].ResourceVersion = "5" // kcp moved on; the cache has "1"
	k.version = 5
	require.NoError(t, indexer.Add(stale))
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(stale)
	require.NoError(t, err)

	ctx := context.Background()
	require.True(t, apierrors.IsConflict(c.processWorkspace(ctx, key)), "the cache's version conflicts")
	// kcp just started: it answers 404 for Workspaces, not served yet. The
	// key is retried (and read from kcp again), not dropped.
	c.getWorkspace = func(context.Context, logicalcluster.Name, string) (*tenancyv1alpha1.Workspace, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, "")
	}
	require.True(t, apierrors.IsNotFound(c.processWorkspace(ctx, key)), "a 404 from kcp is retried")
	c.getWorkspace = k.get
	require.NoError(t, c.processWorkspace(ctx, key), "the retry patches kcp's version")
	require.Len(t, k.patches, 2)
	require.True(t, k.patches[0].conflicted)
	require.False(t, k.patches[1].conflicted)
	require.Equal(t, 1, k.reads)

	k.workspaces["mounted"].Annotations[mount.PhaseAnnotationKey] = "Connecting" // someone else writes
	k.workspaces["mounted"].ResourceVersion = "9"
	require.True(t, apierrors.IsConflict(c.processWorkspace(ctx, key)), "after a success, the cache again")
	require.Equal(t, 1, k.reads)
}

// kcpConditions are what kcp keeps on a Workspace; no patch may lose them.
var kcpConditions = conditionsv1alpha1.Conditions{
	{Type: "WorkspaceScheduled", Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
	{Type: "WorkspaceInitialized", Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
}

// TestProcessWorkspaceRouting: with both options, a change of the mount is
// one patch of metadata and spec and one of the status, made on the
// Workspace the first answered with (no read, no conflict, kcp's conditions
// kept); the steady state writes nothing; without the condition option the
// condition is removed, and only it.
func TestProcessWorkspaceRouting(t *testing.T) {
	t.Parallel()
	ws := mountedWorkspace(kubeClusterRef)
	ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseScheduling, Conditions: kcpConditions}
	k := newFakeKCP(ws)
	mountStatus := map[string]interface{}{"phase": "Ready", "URL": "https://shard.example/clusters/target"}
	getMountObject := func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return mountObject(mountStatus), nil
	}
	both := RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}
	c, indexer := testController(k, both, getMountObject)
	ctx := context.Background()

	key := syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 2)
	require.Empty(t, k.patches[0].subresource)
	require.Equal(t, "status", k.patches[1].subresource)
	require.Zero(t, k.reads, "the status patch is made on the Workspace the first patch returned")
	for _, p := range k.patches {
		require.False(t, p.conflicted)
	}
	written := k.workspaces["mounted"]
	require.Equal(t, "https://shard.example/clusters/target", written.Spec.URL)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, written.Status.Phase, "out of Scheduling once the mount is ready")
	require.Equal(t, "Ready", written.Annotations[mount.PhaseAnnotationKey])
	require.Len(t, written.Status.Conditions, 4)
	requireSemanticEqual(t, kcpConditions, written.Status.Conditions[:2], "kcp's conditions are kept, in place")
	requireSemanticEqual(t, conditionsv1alpha1.Condition{
		Type: mount.ConditionType, Status: corev1.ConditionTrue, Reason: mount.ReasonMountReady,
		Message:            "KubeCluster proxy (contrib.kcp.io/v1alpha1) is ready at https://shard.example/clusters/target.",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
	}, written.Status.Conditions[2])
	requireSemanticEqual(t, conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
	}, written.Status.Conditions[3], "kcp's own condition, as its in-tree controller writes it, in the same patch")

	key = syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 2, "a steady state writes nothing")

	// The mount goes down: both parts change again, still no read and no conflict.
	mountStatus = map[string]interface{}{"phase": "Connecting"}
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 4)
	require.Zero(t, k.reads)
	written = k.workspaces["mounted"]
	require.Equal(t, "https://shard.example/clusters/target", written.Spec.URL, "a mount without URL keeps the last one: kcp refuses to unset it")
	require.Equal(t, corev1.ConditionFalse, ownCondition(written).Status)
	require.Equal(t, conditionsv1alpha1.ConditionSeverityInfo, ownCondition(written).Severity)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, written.Status.Phase, "kcp's rule, in the same status patch")
	require.Equal(t, tenancyv1alpha1.MountObjectNotReadyReason, written.Status.Conditions[3].Reason)
	key = syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 4, "a steady state writes nothing")

	// Restarted without --workspace-condition: only the condition goes, from
	// a fresh read (the annotations did not change), and kcp's stay, with
	// WorkspaceMountReady, False, which --workspace-url keeps.
	c, indexer = testController(k, RoutingOptions{WorkspaceURL: true}, getMountObject)
	key = syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 5)
	require.Equal(t, "status", k.patches[4].subresource)
	require.Equal(t, 1, k.reads)
	remaining := k.workspaces["mounted"].Status.Conditions
	require.Len(t, remaining, 3)
	requireSemanticEqual(t, kcpConditions, remaining[:2])
	require.Equal(t, tenancyv1alpha1.MountConditionReady, remaining[2].Type)
	require.Equal(t, corev1.ConditionFalse, remaining[2].Status)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, k.workspaces["mounted"].Status.Phase, "kcp's condition is still False")
	key = syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 5, "a steady state writes nothing")
}

// requireSemanticEqual compares as kcp does: times by instant, not location.
func requireSemanticEqual(t *testing.T, want, got interface{}, msgAndArgs ...interface{}) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		require.Equal(t, want, got, msgAndArgs...)
	}
}

// TestProcessWorkspaceRemovesTheConditionOfAnUnmountedWorkspace: a Workspace
// mounted by the legacy annotation (--legacy-mount-annotation) that is not
// mounted any more, because the annotation is removed or because the plugin
// now runs without --legacy-mount-annotation, loses the annotations and the
// condition, and is Ready again; its spec.URL, kcp's own, is not touched.
func TestProcessWorkspaceRemovesTheConditionOfAnUnmountedWorkspace(t *testing.T) {
	t.Parallel()
	routing := RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}
	getMountObject := returns(mountObject(map[string]interface{}{"phase": "Connecting", "URL": "https://elsewhere.example"}), nil)
	for _, tc := range []struct {
		name string
		// unmount makes the Workspace unmounted for the controller it returns.
		unmount func(k *fakeKCP, c *Controller, indexer cache.Indexer) (*Controller, cache.Indexer)
	}{
		{
			name: "the legacy annotation removed",
			unmount: func(k *fakeKCP, c *Controller, indexer cache.Indexer) (*Controller, cache.Indexer) {
				delete(k.workspaces["legacy"].Annotations, mount.LegacyAnnotationKey)
				return c, indexer
			},
		},
		{
			name: "a plugin without --legacy-mount-annotation",
			unmount: func(k *fakeKCP, _ *Controller, _ cache.Indexer) (*Controller, cache.Indexer) {
				return testController(k, routing, returns(nil, errors.New("must not be read")))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`)
			ws.Spec.URL = "https://shard.example/clusters/legacy"
			ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, Conditions: kcpConditions}
			k := newFakeKCP(ws)
			c, indexer := testController(k, routing, getMountObject)
			c.rule = mount.Rule{LegacyAnnotation: true}
			c.workspaces.rule = c.rule
			ctx := context.Background()
			key := syncCache(t, k, indexer, "legacy")
			require.NoError(t, c.processWorkspace(ctx, key))
			require.Equal(t, "https://shard.example/clusters/legacy", k.workspaces["legacy"].Spec.URL, "a legacy mount keeps kcp's URL")
			require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, k.workspaces["legacy"].Status.Phase, "kcp's rule, in the same patch")
			require.Equal(t, corev1.ConditionFalse, ownCondition(k.workspaces["legacy"]).Status)
			require.Contains(t, k.workspaces["legacy"].Annotations, mount.PhaseAnnotationKey)

			c, indexer = tc.unmount(k, c, indexer)
			key = syncCache(t, k, indexer, "legacy")
			require.NoError(t, c.processWorkspace(ctx, key))
			require.Nil(t, ownCondition(k.workspaces["legacy"]))
			requireSemanticEqual(t, kcpConditions, k.workspaces["legacy"].Status.Conditions)
			require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, k.workspaces["legacy"].Status.Phase, "no False condition left: Ready, by kcp's rule")
			require.NotContains(t, k.workspaces["legacy"].Annotations, mount.PhaseAnnotationKey)
			require.NotContains(t, k.workspaces["legacy"].Annotations, mount.StatusAnnotationKey)
			require.Equal(t, "https://shard.example/clusters/legacy", k.workspaces["legacy"].Spec.URL)
			for _, p := range k.patches {
				require.False(t, p.conflicted)
			}

			// Once clean, nothing more is written.
			patches := len(k.patches)
			key = syncCache(t, k, indexer, "legacy")
			require.NoError(t, c.processWorkspace(ctx, key))
			require.Len(t, k.patches, patches, "a steady unmounted Workspace costs no write")
		})
	}
}

func TestQueueName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "workspacemounts-workspaces", QueueName(WorkspacesQueueName, ""), "one shard: the queue's name")
	require.Equal(t, "workspacemounts-mounts/shard-2", QueueName(MountsQueueName, "shard-2"), "a sharded kcp: a queue per shard, its own series")
}

// TestProcessNextWorkItemNamesItsQueue: a queue's one name is the queue of
// its reconcile series, for every result, the shard's suffix included.
func TestProcessNextWorkItemNamesItsQueue(t *testing.T) {
	t.Parallel()
	metrics.Register()
	q := newQueue(QueueName(MountsQueueName, "shard-of-"+t.Name()))
	t.Cleanup(q.ShutDown)
	for i, tc := range []struct {
		err    error
		result string
	}{
		{nil, metrics.ResultSuccess},
		{errors.New("cannot resolve"), metrics.ResultError},
		{apierrors.NewConflict(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, "a", errors.New("modified")), metrics.ResultRequeue},
	} {
		q.Add("example.io/v1/Kind")
		require.True(t, processNextWorkItem(context.Background(), q, func(context.Context, string) error { return tc.err }))
		count, err := testutil.GetCounterMetricValue(metrics.ReconcileTotal.WithLabelValues("workspacemounts-mounts/shard-of-"+t.Name(), tc.result))
		require.NoError(t, err)
		require.Equal(t, 1, int(count), tc.result)
		observed, err := testutil.GetHistogramMetricCount(metrics.ReconcileDuration.WithLabelValues(q.name))
		require.NoError(t, err)
		require.Equal(t, uint64(i+1), observed, tc.result)
	}
}

func (k *keyed[V]) len() int {
	k.lock.Lock()
	defer k.lock.Unlock()
	return len(k.byKey)
}

// remembered counts what the controller keeps per Workspace: the entries
// of its per-Workspace maps, and the kinds workspacemounts-mounts resolved.
func remembered(c *Controller) map[string]int {
	c.mounts.lock.Lock()
	defer c.mounts.lock.Unlock()
	return map[string]int{
		"observed": c.observed.len(), "conflicted": c.conflicted.len(), "reads": c.workspaces.reads.len(),
		"kinds": len(c.mounts.kinds), "served kinds": len(c.mounts.served), "gate": c.unavailable.len(),
		"refusals": c.workspaces.refusals.len(),
	}
}

var nothingRemembered = map[string]int{"observed": 0, "conflicted": 0, "reads": 0, "kinds": 0, "served kinds": 0, "gate": 0, "refusals": 0}

// TestDeletedWorkspacesAreForgotten: the controller remembers nothing of a
// Workspace once its delete is handled (a tombstone too), whatever was
// pending for it: a change of its mount object not yet written, a
// conflict to retry, a read made while it was being deleted.
func TestDeletedWorkspacesAreForgotten(t *testing.T) {
	t.Parallel()
	h := newChurnHarness(t)
	for cycle := range 3 {
		h.cycle(t, fmt.Sprintf("churn%011d", cycle), 50)
		require.Equal(t, nothingRemembered, remembered(h.c), "after cycle %d", cycle)
		require.Empty(t, h.indexer.List())
	}

	// Pending for each of them: a mount object change (observed), a read
	// (reads), and for one a conflict to retry (conflicted) and a refused
	// spec.URL (refusals). The delete
	// handler forgets them at once, before any reconcile.
	workspaces := []*tenancyv1alpha1.Workspace{h.workspace("pending", "a"), h.workspace("pending", "b"), h.workspace("pending", "c")}
	h.create(t, workspaces)
	h.drain(t)
	h.conflict["a"] = true
	h.flip(workspaces)
	key, _ := h.c.workspacesQueue.Get()
	require.True(t, apierrors.IsConflict(h.c.processWorkspace(context.Background(), key)))
	h.c.workspacesQueue.Done(key)
	h.c.workspacesQueue.AddRateLimited(key)
	h.c.workspaces.recordRefusal(key, &urlRefusedError{url: refusedURL, err: apierrors.NewForbidden(workspacesResource, "a", errors.New(policyNote))}, time.Now())
	require.Equal(t, map[string]int{"observed": 3, "conflicted": 1, "reads": 3, "kinds": 1, "served kinds": 1, "gate": 0, "refusals": 1}, remembered(h.c))
	h.remove(t, workspaces)
	require.Equal(t, map[string]int{"observed": 0, "conflicted": 0, "reads": 0, "kinds": 1, "served kinds": 1, "gate": 0, "refusals": 0}, remembered(h.c))
	h.drain(t)
	require.Equal(t, nothingRemembered, remembered(h.c))

	// Deleted while its reconcile reads its mount object: that read is
	// remembered after the delete was handled, and forgotten by the
	// reconcile the delete enqueued.
	ws := h.workspace("racing", "d")
	h.create(t, []*tenancyv1alpha1.Workspace{ws})
	h.drain(t)
	h.reading = func(string) {
		h.reading = nil
		h.remove(t, []*tenancyv1alpha1.Workspace{ws})
	}
	h.c.enqueueWorkspace(ws)
	key, _ = h.c.workspacesQueue.Get()
	require.NoError(t, h.c.processWorkspace(context.Background(), key), "the mount did not change: nothing to write")
	require.Equal(t, 1, h.c.workspaces.reads.len(), "the read ended after the delete was handled")
	h.c.workspacesQueue.Done(key)
	h.drain(t)
	require.Equal(t, nothingRemembered, remembered(h.c))
}

// TestHandleWorkspaceLegacyAnnotation: a Workspace with the legacy
// annotation alone reaches the queues as a mounted one only with
// --legacy-mount-annotation; without, its kind is never resolved (no
// informer), it is not reconciled unless it carries what the plugin wrote
// (which is then removed), and a change of the annotation alone is no event.
func TestHandleWorkspaceLegacyAnnotation(t *testing.T) {
	t.Parallel()
	const annotation = `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`
	written := legacyWorkspace(annotation)
	written.Annotations[mount.PhaseAnnotationKey] = string(mount.PhaseNotFound)
	changed := legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"other"}}}`)
	for _, tc := range []struct {
		name                 string
		old, new             *tenancyv1alpha1.Workspace
		honoured             bool
		wantKinds, wantWorks int
	}{
		{name: "created, honoured", new: legacyWorkspace(annotation), honoured: true, wantKinds: 1, wantWorks: 1},
		{name: "created, not honoured", new: legacyWorkspace(annotation)},
		{name: "created with what the plugin wrote, not honoured", new: written, wantWorks: 1},
		{name: "annotation changed, honoured", old: legacyWorkspace(annotation), new: changed, honoured: true, wantKinds: 1, wantWorks: 1},
		{name: "annotation changed, not honoured", old: legacyWorkspace(annotation), new: changed},
		{name: "annotation added, not honoured", old: &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "legacy",
			Annotations: map[string]string{logicalcluster.AnnotationKey: "root:org"}}}, new: legacyWorkspace(annotation)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &Controller{rule: mount.Rule{LegacyAnnotation: tc.honoured}, mountsQueue: newQueue(""), workspacesQueue: newQueue(""),
				mountObjects: NewMountObjectIndex(mount.Rule{LegacyAnnotation: tc.honoured})}
			t.Cleanup(c.mountsQueue.ShutDown)
			t.Cleanup(c.workspacesQueue.ShutDown)
			if tc.old == nil {
				c.handleWorkspace(nil, tc.new)
			} else {
				c.handleWorkspace(tc.old, tc.new)
			}
			require.Equal(t, tc.wantKinds, c.mountsQueue.Len(), "kinds queued")
			require.Equal(t, tc.wantWorks, c.workspacesQueue.Len(), "Workspaces queued")
		})
	}
}
