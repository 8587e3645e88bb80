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
	"os"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/indexers"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// churnWorkspacesEnv sets how many Workspaces BenchmarkWorkspaceChurn
// creates, flips and deletes per cycle (default churnWorkspaces).
const churnWorkspacesEnv = "WORKSPACEMOUNTS_CHURN_WORKSPACES"

const (
	churnWorkspaces = 10000
	churnCycles     = 4
)

// BenchmarkWorkspaceChurn is the controller's heap across the lives of
// many mounted Workspaces, without kcp: each cycle creates Workspaces
// (each in a logical cluster of the cycle, mounting a KubeCluster there,
// reconciled once), flips their mount objects' phase (each Workspace
// reconciled and written again), flips half of them once more and deletes
// them all before that change is reconciled (a tenth of the deletes as
// tombstones, as a relist reports them), and lets the queues drain. It
// reports the live heap after each cycle (cycleN-heap-B) and its growth
// per Workspace deleted after the first cycle (grown-B/workspace): what the
// controller keeps of Workspaces that no longer exist. The Workspace cache
// and the queues are client-go's, driven by hand as the informer would
// (the echo of each patch lands in the cache, not in the handler);
// kcp's side is function fields. WORKSPACEMOUNTS_CHURN_WORKSPACES sets the
// Workspaces per cycle.
func BenchmarkWorkspaceChurn(b *testing.B) {
	n := churnWorkspaces
	if v := os.Getenv(churnWorkspacesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", churnWorkspacesEnv, v)
		}
	}
	h := newChurnHarness(b)
	b.ReportAllocs()
	for b.Loop() {
		before := liveHeap()
		heaps := make([]uint64, 0, churnCycles)
		for cycle := range churnCycles {
			h.cycle(b, fmt.Sprintf("churn%011d", cycle), n)
			heaps = append(heaps, liveHeap())
		}
		b.ReportMetric(float64(before), "start-heap-B")
		for cycle, heap := range heaps {
			b.ReportMetric(float64(heap), fmt.Sprintf("cycle%d-heap-B", cycle+1))
		}
		b.ReportMetric((float64(heaps[len(heaps)-1])-float64(heaps[0]))/float64((len(heaps)-1)*n), "grown-B/workspace")
	}
}

// churnHarness is a controller on client-go's in-memory Workspace cache
// and queues, with kcp's side as function fields: every mount object
// exists, in the phase ready says; a patch of a Workspace's annotations
// lands in the cache, as kcp's watch would bring it.
type churnHarness struct {
	c       *Controller
	indexer cache.Indexer
	ready   bool
	// conflict names the Workspaces whose next patch conflicts.
	conflict map[string]bool
	// reading, if set, is called while a mount object is read.
	reading func(name string)
}

func newChurnHarness(tb testing.TB) *churnHarness {
	tb.Helper()
	// The metrics it records are registered first: a test registering them
	// meanwhile would race its writes (component-base's lazy metrics).
	metrics.Register()
	h := &churnHarness{conflict: map[string]bool{}}
	h.indexer = cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, mountIndexers(mount.Rule{}))
	resource := kubeClusterResource
	resolve := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) { return resource, nil }
	h.c = &Controller{
		mountsQueue:      newQueue(""),
		workspacesQueue:  newQueue(""),
		workspaceIndexer: h.indexer,
		mountObjects:     NewMountObjectIndex(mount.Rule{}),
		workspaceLister:  tenancyv1alpha1listers.NewWorkspaceClusterLister(h.indexer),
		workspaces: &workspacesReconciler{
			resolve:        resolve,
			getMountObject: h.getMountObject,
			informerDenied: neverDenied,
			now:            time.Now,
		},
		patchWorkspace: h.patch,
		getWorkspace: func(_ context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return tenancyv1alpha1listers.NewWorkspaceClusterLister(h.indexer).Cluster(cluster).Get(name)
		},
	}
	h.c.mounts = &mountsReconciler{
		workspacesOfKind: func(key string) ([]*tenancyv1alpha1.Workspace, error) {
			return indexers.ByIndex[*tenancyv1alpha1.Workspace](h.indexer, WorkspacesByMountKind, key)
		},
		resolve:          resolve,
		enqueueWorkspace: h.c.enqueueWorkspace,
		enqueueKind:      h.c.mountsQueue.Add,
		syncInformers:    func(context.Context, []restmapping.Resource) map[string]bool { return nil },
		runInformers:     func(context.Context, map[string]bool) {},
		kinds:            map[string]kindResolution{},
	}
	return h
}

func (h *churnHarness) getMountObject(_ context.Context, cluster logicalcluster.Name, _ restmapping.Resource, _, name string) (*unstructured.Unstructured, error) {
	if h.reading != nil {
		h.reading(name)
	}
	status := map[string]interface{}{"phase": "Connecting"}
	if h.ready {
		status = map[string]interface{}{"phase": "Ready", "URL": "https://kc.example/clusters/" + name}
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeCluster",
		"metadata": map[string]interface{}{
			"name": name, "resourceVersion": "2000", "annotations": map[string]interface{}{logicalcluster.AnnotationKey: cluster.String()},
		},
		"status": status,
	}}, nil
}

// patch applies a merge patch of the annotations to the cached Workspace;
// a status patch changes nothing here (no routing options).
func (h *churnHarness) patch(_ context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
	obj, found, err := h.indexer.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", name))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	if h.conflict[name] {
		delete(h.conflict, name)
		return nil, apierrors.NewConflict(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name, errors.New("the object has been modified"))
	}
	written := obj.(*tenancyv1alpha1.Workspace).DeepCopy()
	if len(subresources) > 0 {
		return written, nil
	}
	var p struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	for k, v := range p.Metadata.Annotations {
		if v == nil {
			delete(written.Annotations, k)
		} else {
			written.Annotations[k] = *v
		}
	}
	version, _ := strconv.Atoi(written.ResourceVersion)
	written.ResourceVersion = strconv.Itoa(version + 1)
	if err := h.indexer.Update(written); err != nil {
		return nil, err
	}
	return written, nil
}

// workspace is a new mounted Workspace name in cluster, as the informer
// caches it.
func (h *churnHarness) workspace(cluster logicalcluster.Name, name string) *tenancyv1alpha1.Workspace {
	ws := benchWorkspace(cluster, name)
	delete(ws.Annotations, mount.PhaseAnnotationKey)
	delete(ws.Annotations, mount.StatusAnnotationKey)
	TrimWorkspace(ws, mount.Rule{})
	return ws
}

// create adds the Workspaces to the cache and tells the handler.
func (h *churnHarness) create(tb testing.TB, workspaces []*tenancyv1alpha1.Workspace) {
	tb.Helper()
	for _, ws := range workspaces {
		if err := h.indexer.Add(ws); err != nil {
			tb.Fatal(err)
		}
		h.c.handleWorkspace(nil, ws)
	}
}

// flip changes the phase of every mount object and reports the change of
// those of the Workspaces given, as the mount object informers would.
func (h *churnHarness) flip(workspaces []*tenancyv1alpha1.Workspace) {
	h.ready = !h.ready
	for _, ws := range workspaces {
		h.c.enqueueMountObject(kubeClusterResource, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: ws.Name, Annotations: map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(ws).String()},
		}})
	}
}

// remove deletes the Workspaces from the cache and tells the handler, every
// tenth with a tombstone (a delete found by a relist).
func (h *churnHarness) remove(tb testing.TB, workspaces []*tenancyv1alpha1.Workspace) {
	tb.Helper()
	for i, ws := range workspaces {
		key, _ := kcpcache.MetaClusterNamespaceKeyFunc(ws)
		obj, _, _ := h.indexer.GetByKey(key)
		if err := h.indexer.Delete(obj); err != nil {
			tb.Fatal(err)
		}
		if i%10 == 0 {
			h.c.handleWorkspace(cache.DeletedFinalStateUnknown{Key: key, Obj: obj}, nil)
		} else {
			h.c.handleWorkspace(obj, nil)
		}
	}
}

// drain reconciles until both queues are empty; a conflict is tried again
// (at once, where the controller waits for its rate limiter).
func (h *churnHarness) drain(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	for h.c.mountsQueue.Len() > 0 || h.c.workspacesQueue.Len() > 0 {
		for h.c.mountsQueue.Len() > 0 {
			key, _ := h.c.mountsQueue.Get()
			if err := h.c.mounts.reconcile(ctx, key); err != nil {
				tb.Fatal(err)
			}
			h.c.mountsQueue.Done(key)
			h.c.mountsQueue.Forget(key)
		}
		for h.c.workspacesQueue.Len() > 0 {
			key, _ := h.c.workspacesQueue.Get()
			err := h.c.processWorkspace(ctx, key)
			if err != nil && !apierrors.IsConflict(err) {
				tb.Fatal(err)
			}
			h.c.workspacesQueue.Done(key)
			h.c.workspacesQueue.Forget(key)
			if err != nil {
				h.c.workspacesQueue.Add(key)
			}
		}
	}
}

// cycle creates n Workspaces in cluster, flips their mount objects, flips
// half of them again and deletes them all before that is reconciled.
func (h *churnHarness) cycle(tb testing.TB, cluster string, n int) {
	tb.Helper()
	workspaces := make([]*tenancyv1alpha1.Workspace, n)
	for i := range workspaces {
		workspaces[i] = h.workspace(logicalcluster.Name(cluster), fmt.Sprintf("ws-%05d", i))
	}
	h.create(tb, workspaces)
	h.drain(tb)
	h.flip(workspaces)
	h.drain(tb)
	h.flip(workspaces[:n/2])
	h.remove(tb, workspaces)
	h.drain(tb)
}
