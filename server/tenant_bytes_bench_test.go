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
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// tenantLabelsWorkspacesEnv sets how many Workspaces
// BenchmarkTenantLabelsMemory lists (default 1,000).
const tenantLabelsWorkspacesEnv = "WORKSPACEMOUNTS_TENANT_LABELS_WORKSPACES"

// BenchmarkTenantLabelsMemory is what a tenant's labels cost the plugin:
// the live heap, after a GC, of a shard's Workspace informer (with the
// informers' transform, TrimForCache) and the virtual workspace's store fed
// by it, holding n mounted Workspaces of one tenant, each with 0 or 1,500
// labels of about 60 bytes (labels-B/ws: the bytes of each one's labels).
// heap-B/ws is the heap per Workspace, grown-B/ws what 1,500 labels add to
// it against none. The Workspaces are made fresh by each list, each string
// its own, as decoding kcp's answer makes them.
func BenchmarkTenantLabelsMemory(b *testing.B) {
	n := 1000
	if v := os.Getenv(tenantLabelsWorkspacesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", tenantLabelsWorkspacesEnv, v)
		}
	}
	for b.Loop() {
		heap := map[int]float64{}
		for _, labels := range []int{0, 1500} {
			heap[labels] = tenantHeapPerWorkspace(b, n, labels)
			b.ReportMetric(heap[labels], fmt.Sprintf("labels=%d-heap-B/ws", labels))
		}
		b.ReportMetric(heap[1500]-heap[0], "grown-B/ws")
		b.ReportMetric(float64(len(tenantLabels(0, 1500).String())), "labels-B/ws")
	}
}

type labelSet map[string]string

func (l labelSet) String() string {
	s := ""
	for k, v := range l {
		s += k + v
	}
	return s
}

// tenantLabels are the labels of Workspace i: n of about 60 bytes.
func tenantLabels(i, n int) labelSet {
	if n == 0 {
		return nil
	}
	labels := make(labelSet, n)
	for j := range n {
		labels[fmt.Sprintf("team.tenant.example.io/label-%04d", j)] = fmt.Sprintf("value-%04d-%06d-abcdefghijklmnopq", j, i)
	}
	return labels
}

// tenantWorkspaces is what kcp answers a list of the Workspaces: n mounted
// Workspaces in 10 logical clusters of one tenant, each with labels labels.
func tenantWorkspaces(n, labels int) *tenancyv1alpha1.WorkspaceList {
	list := &tenancyv1alpha1.WorkspaceList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(n + 1)}}
	status := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, Message: "KubeCluster is Ready.",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	for i := range n {
		name := fmt.Sprintf("mount-%05d", i)
		status.MountRef = mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}
		list.Items = append(list.Items, tenancyv1alpha1.Workspace{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, UID: types.UID("uid-" + name), ResourceVersion: strconv.Itoa(i + 1),
				Labels: tenantLabels(i, labels),
				Annotations: map[string]string{
					logicalcluster.AnnotationKey: fmt.Sprintf("tenant-cluster-%d", i%10),
					mount.PhaseAnnotationKey:     string(mount.PhaseReady),
					mount.StatusAnnotationKey:    status.Encode(),
				},
			},
			Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
				APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}}},
			Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady},
		})
	}
	return list
}

// tenantHeapPerWorkspace is the live heap a synced informer and store
// hold per Workspace, of n Workspaces each with that many labels.
func tenantHeapPerWorkspace(b *testing.B, n, labels int) float64 {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	indexers := cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc, kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc}
	informer := func(list func() runtime.Object, obj runtime.Object) cache.SharedIndexInformer {
		lw := listOnly{&cache.ListWatch{
			ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list(), nil },
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
		}}
		i := kcpinformers.NewSharedIndexInformer(lw, obj, 0, indexers)
		if err := i.SetTransform(TrimForCache(mount.Rule{})); err != nil {
			b.Fatal(err)
		}
		return i
	}
	before := liveHeap()
	workspaces := informer(func() runtime.Object { return tenantWorkspaces(n, labels) }, &tenancyv1alpha1.Workspace{})
	logicalClusters := informer(func() runtime.Object {
		return &corev1alpha1.LogicalClusterList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	}, &corev1alpha1.LogicalCluster{})
	store := wsmregistry.NewStore(mount.Rule{})
	if err := store.AddShard("", workspaces, logicalClusters); err != nil {
		b.Fatal(err)
	}
	go workspaces.RunWithContext(ctx)
	go logicalClusters.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), store.HasSynced) {
		b.Fatal("the store did not sync")
	}
	after := liveHeap()
	if got := len(workspaces.GetStore().List()); got != n {
		b.Fatalf("%d Workspaces cached, want %d", got, n)
	}
	goruntime.KeepAlive(store)
	return (float64(after) - float64(before)) / float64(n)
}

// listOnly lists, then watches: the informer's initial list is a list, as
// kcp answers it.
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// liveHeap is the heap in use after a GC.
func liveHeap() uint64 {
	var stats goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&stats)
	return stats.HeapAlloc
}
