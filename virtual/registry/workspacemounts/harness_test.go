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
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// How long a test waits for something that should happen at once.
const (
	eventually = 5 * time.Second
	tick       = 5 * time.Millisecond
	// quiet is how long a test waits to see that nothing happens; it is only
	// used after a sentinel change, so that in practice it is never waited out
	// for an event that is merely late.
	quiet = 50 * time.Millisecond
)

// noWatchList is a ListWatch that tells the reflector to list, then watch
// (a fake watcher sends no initial-events-end bookmark).
type noWatchList struct {
	*cache.ListWatch
}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// harness is a Store over a real (kcp, cluster-aware) shared informer whose
// list and watch are fakes the test drives.
type harness struct {
	t        *testing.T
	store    *Store
	informer cache.SharedIndexInformer
	source   *watch.FakeWatcher

	lock     sync.Mutex
	rv       int
	sentinel *tenancyv1alpha1.Workspace
}

// newHarness starts an informer listing initial, and a store over it, and
// waits for the store to sync.
func newHarness(t *testing.T, initial ...*tenancyv1alpha1.Workspace) *harness {
	t.Helper()
	h := newUnstartedHarness(t, initial...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.informer.Run(ctx.Done())
	require.Eventually(t, h.store.HasSynced, eventually, tick, "the store did not sync")
	return h
}

// newUnstartedHarness is newHarness without starting the informer: its
// store never syncs.
func newUnstartedHarness(t *testing.T, initial ...*tenancyv1alpha1.Workspace) *harness {
	t.Helper()
	return newUnstartedHarnessWithPaths(t, nil, initial...)
}

// newUnstartedHarnessWithPaths is newUnstartedHarness whose store reads the
// paths of the clusters from a LogicalCluster informer (nil: none).
func newUnstartedHarnessWithPaths(t *testing.T, logicalClusters cache.SharedIndexInformer, initial ...*tenancyv1alpha1.Workspace) *harness {
	t.Helper()
	h := &harness{t: t, source: watch.NewFakeWithChanSize(10000, false), rv: 100}
	list := &tenancyv1alpha1.WorkspaceList{}
	for _, ws := range initial {
		ws = ws.DeepCopy()
		ws.ResourceVersion = h.nextRV()
		list.Items = append(list.Items, *ws)
	}
	list.ResourceVersion = h.nextRV()
	watched := false
	var watchLock sync.Mutex
	h.informer = kcpinformers.NewSharedIndexInformer(noWatchList{&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return list.DeepCopy(), nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			watchLock.Lock()
			defer watchLock.Unlock()
			if watched {
				// A second watch would mean the first one broke: the test
				// would lose events. Block instead of answering.
				t.Errorf("the informer watched twice")
				return watch.NewFake(), nil
			}
			watched = true
			return h.source, nil
		},
	}}, &tenancyv1alpha1.Workspace{}, 0, cache.Indexers{})
	h.store = NewStore(mount.Rule{})
	require.NoError(t, h.store.AddShard("", h.informer, logicalClusters))
	return h
}

// nextRV returns a new, larger resource version.
func (h *harness) nextRV() string {
	h.lock.Lock()
	defer h.lock.Unlock()
	h.rv++
	return strconv.Itoa(h.rv)
}

// add sends an ADDED event for a copy of ws with a new resource version, and returns the copy.
func (h *harness) add(ws *tenancyv1alpha1.Workspace) *tenancyv1alpha1.Workspace {
	ws = ws.DeepCopy()
	ws.ResourceVersion = h.nextRV()
	h.source.Add(ws)
	return ws
}

// update sends a MODIFIED event for a copy of ws with a new resource version, and returns the copy.
func (h *harness) update(ws *tenancyv1alpha1.Workspace) *tenancyv1alpha1.Workspace {
	ws = ws.DeepCopy()
	ws.ResourceVersion = h.nextRV()
	h.source.Modify(ws)
	return ws
}

// delete sends a DELETED event for ws with a new resource version, as
// kcp does (the object as it was last, at the revision of its deletion).
func (h *harness) delete(ws *tenancyv1alpha1.Workspace) {
	ws = ws.DeepCopy()
	ws.ResourceVersion = h.nextRV()
	h.source.Delete(ws)
}

// flush waits until the store has handled every event sent so far: it
// sends a change of an unmounted sentinel Workspace and waits for the store
// to see its resource version. It returns that resource version.
func (h *harness) flush() string {
	h.t.Helper()
	h.lock.Lock()
	sentinel := h.sentinel
	h.lock.Unlock()
	if sentinel == nil {
		sentinel = h.add(workspace("zzz-sentinel", "sentinel"))
	} else {
		sentinel = h.update(sentinel)
	}
	h.lock.Lock()
	h.sentinel = sentinel
	h.lock.Unlock()
	require.Eventually(h.t, func() bool { return h.storeResourceVersion() == sentinel.ResourceVersion },
		eventually, tick, "the store did not see resource version %s", sentinel.ResourceVersion)
	return sentinel.ResourceVersion
}

func (h *harness) storeResourceVersion() string {
	h.store.lock.RLock()
	defer h.store.lock.RUnlock()
	return h.store.versionLocked()
}

// workspace is an unmounted Workspace in a logical cluster.
func workspace(cluster, name string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			UID:         types.UID("uid-" + cluster + "-" + name),
			Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "c-" + name},
	}
}

// mounted is a Workspace mounting a KubeCluster named like it, with a status
// annotation of the given phase.
// testNow is a day after the mounted Workspaces' lastTransitionTime.
var testNow = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

func mounted(cluster, name string, phase mount.Phase, labels map[string]string) *tenancyv1alpha1.Workspace {
	ws := workspace(cluster, name)
	ws.Labels = labels
	ws.Spec.Cluster = ""
	ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
		APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name,
	}}
	ws.Status.Phase = "Ready"
	status := mount.Status{
		Phase: phase, Ready: phase == mount.PhaseReady, Reason: string(phase) + "Reason",
		MountRef:           mount.Reference(ws.Spec.Mount.Reference),
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	if status.Ready {
		status.URL = "https://" + name + ".example.io"
	}
	ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
	ws.Annotations[mount.PhaseAnnotationKey] = string(phase)
	return ws
}

// requestContext is the context of a request by alice to target: a cluster
// name, or * for all.
func requestContext(target string) context.Context {
	t := clusterpath.Target{Wildcard: true}
	if target != "*" {
		t = clusterpath.Target{Path: logicalcluster.NewPath(target), Cluster: logicalcluster.Name(target)}
	}
	ctx := clusterpath.WithTarget(context.Background(), t)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})
}

// allVisible is a VisibilityFunc that lets everything through.
func allVisible(context.Context, logicalcluster.Name, time.Duration) (bool, error) { return true, nil }

// asObject is the WorkspaceMount an answer or an event's object stands for
// (what the API server encodes), and whether it is one.
func asObject(obj runtime.Object) (*wsmv1alpha1.WorkspaceMount, bool) {
	if cacheable, ok := obj.(runtime.CacheableObject); ok {
		obj = cacheable.GetObject()
	}
	wsm, ok := obj.(*wsmv1alpha1.WorkspaceMount)
	return wsm, ok
}

// objectOf is the WorkspaceMount of an answer or a watch event.
func objectOf(t testing.TB, obj runtime.Object) *wsmv1alpha1.WorkspaceMount {
	t.Helper()
	wsm, ok := asObject(obj)
	require.True(t, ok, "%T", obj)
	return wsm
}

// listOf is the WorkspaceMountList a list answer stands for.
func listOf(t testing.TB, obj runtime.Object) *wsmv1alpha1.WorkspaceMountList {
	t.Helper()
	if cacheable, ok := obj.(runtime.CacheableObject); ok {
		obj = cacheable.GetObject()
	}
	list, ok := obj.(*wsmv1alpha1.WorkspaceMountList)
	require.True(t, ok, "%T", obj)
	return list
}
