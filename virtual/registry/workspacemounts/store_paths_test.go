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
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func logicalClusterOf(cluster, path string) *corev1alpha1.LogicalCluster {
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{
		Name:        corev1alpha1.LogicalClusterName,
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
	}}
	if path != "" {
		lc.Annotations[core.LogicalClusterPathAnnotationKey] = path
	}
	return lc
}

// TestStoreClusterPaths: every WorkspaceMount carries its path once its
// cluster's LogicalCluster says it, also when the LogicalCluster comes after
// the Workspaces (two informers, no order between them); root's is known
// without one. A field selector takes the path.
func TestStoreClusterPaths(t *testing.T) {
	t.Parallel()
	clusters := watch.NewFake()
	initial := &corev1alpha1.LogicalClusterList{
		ListMeta: metav1.ListMeta{ResourceVersion: "1"},
		Items:    []corev1alpha1.LogicalCluster{*logicalClusterOf("c2", "root:org:team")},
	}
	logicalClusters := kcpinformers.NewSharedIndexInformer(noWatchList{&cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return initial.DeepCopy(), nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return clusters, nil },
	}}, &corev1alpha1.LogicalCluster{}, 0, cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc})
	h := newUnstartedHarnessWithPaths(t, logicalClusters,
		mounted("root", "org", mount.PhaseReady, nil),
		mounted("c1", "a", mount.PhaseReady, nil),
		mounted("c1", "b", mount.PhaseConnecting, nil),
		mounted("c2", "x", mount.PhaseReady, nil),
	)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go logicalClusters.Run(ctx.Done())
	require.Never(t, h.store.HasSynced, quiet, tick, "synced before the Workspace informer")
	go h.informer.Run(ctx.Done())
	require.Eventually(t, h.store.HasSynced, eventually, tick)

	paths := func() map[string]string {
		entries, _ := h.store.list(allClusters)
		got := map[string]string{}
		for _, e := range entries {
			got[e.cluster.String()+"/"+e.name] = objectOf(t, e.objectAt("")).Status.WorkspacePath
			require.Equal(t, got[e.cluster.String()+"/"+e.name], e.workspacePath)
		}
		return got
	}
	require.Eventually(t, func() bool { return paths()["c2/x"] == "root:org:team:x" }, eventually, tick)
	require.Equal(t, map[string]string{"root/org": "root:org", "c1/a": "", "c1/b": "", "c2/x": "root:org:team:x"}, paths())

	// c1's LogicalCluster, first without a path, then with one.
	clusters.Add(logicalClusterOf("c1", ""))
	h.flush()
	require.Empty(t, paths()["c1/a"])
	clusters.Modify(logicalClusterOf("c1", "root:org:other"))
	require.Eventually(t, func() bool { return paths()["c1/a"] == "root:org:other:a" }, eventually, tick)
	require.Equal(t, map[string]string{"root/org": "root:org", "c1/a": "root:org:other:a", "c1/b": "root:org:other:b", "c2/x": "root:org:team:x"}, paths())

	a, found := h.store.get("c1", "a")
	require.True(t, found)
	require.Equal(t, "root:org:other", a.objectAt("").Annotations[core.LogicalClusterPathAnnotationKey])
	selector := fields.OneTermEqualSelector("status.workspacePath", "root:org:other:a")
	require.True(t, selector.Matches(a.fieldSet()))
	other, _ := h.store.get("c1", "b")
	require.False(t, selector.Matches(other.fieldSet()))
}
