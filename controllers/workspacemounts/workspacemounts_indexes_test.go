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
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

func TestIndexes(t *testing.T) {
	t.Parallel()
	// Each case runs with both rules: a Workspace mounted by the legacy
	// annotation (legacy) is indexed only with the annotation honoured.
	for _, tc := range []struct {
		name       string
		obj        interface{}
		wantKind   []string
		wantObject []string
		legacy     bool
	}{
		{
			name: "spec.mount", obj: mountedWorkspace(kubeClusterRef),
			wantKind:   []string{"contrib.kcp.io/v1alpha1/KubeCluster"},
			wantObject: []string{"root:org|contrib.kcp.io|KubeCluster||proxy"},
		},
		{
			name: "namespaced reference", obj: mountedWorkspace(mount.Reference{APIVersion: "example.io/v1", Kind: "Thing", Name: "cm", Namespace: "ns"}),
			wantKind:   []string{"example.io/v1/Thing"},
			wantObject: []string{"root:org|example.io|Thing|ns|cm"},
		},
		{
			name: "legacy annotation", legacy: true,
			obj:        legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`),
			wantKind:   []string{"contrib.kcp.io/v1alpha1/KubeCluster"},
			wantObject: []string{"root:org|contrib.kcp.io|KubeCluster||proxy"},
		},
		// An index error would make client-go's store panic and take every
		// Workspace down with one bad reference, so none of these may error.
		{name: "malformed legacy JSON", obj: legacyWorkspace(`{`)},
		{name: "apiVersion kcp's own index errors on", obj: mountedWorkspace(mount.Reference{APIVersion: "a/b/c", Kind: "K", Name: "n"})},
		{name: "empty reference", obj: mountedWorkspace(mount.Reference{})},
		// Nor are kinds that are never mount kinds: they never reach
		// workspacemounts-mounts, nor an informer.
		{name: "kcp's Workspace", obj: mountedWorkspace(mount.Reference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "ws-ready"})},
		{name: "core ConfigMap", obj: mountedWorkspace(mount.Reference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", Namespace: "ns"})},
		{name: "legacy, apps Deployment", obj: legacyWorkspace(`{"spec":{"ref":{"apiVersion":"apps/v1","kind":"Deployment","name":"d","namespace":"ns"}}}`)},
		{name: "not mounted", obj: &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}},
		{name: "not a workspace", obj: "something else"},
	} {
		for _, rule := range []mount.Rule{{LegacyAnnotation: true}, {}} {
			t.Run(fmt.Sprintf("%s, legacy annotation honoured %v", tc.name, rule.LegacyAnnotation), func(t *testing.T) {
				t.Parallel()
				wantKind, wantObject := tc.wantKind, tc.wantObject
				if tc.legacy && !rule.LegacyAnnotation {
					wantKind, wantObject = nil, nil
				}
				indexers := mountIndexers(rule)
				kinds, err := indexers[WorkspacesByMountKind](tc.obj)
				require.NoError(t, err)
				require.Equal(t, wantKind, kinds)
				index := NewMountObjectIndex(rule)
				ws, _ := tc.obj.(*tenancyv1alpha1.Workspace)
				index.Update(nil, ws)
				require.Len(t, index.first, len(wantObject))
				for _, key := range wantObject {
					parts := strings.Split(key, "|")
					get := func(logicalcluster.Name, string) *tenancyv1alpha1.Workspace { return ws }
					require.Equal(t, []*tenancyv1alpha1.Workspace{ws}, index.Workspaces(get, logicalcluster.Name(parts[0]), parts[1], parts[2], parts[3], parts[4]))
				}
			})
		}
	}
}

// TestMountObjectIndex follows Workspaces mounting the same object, moving
// to another and going away; candidates the cache no longer confirms are not
// returned.
func TestMountObjectIndex(t *testing.T) {
	t.Parallel()
	index := NewMountObjectIndex(mount.Rule{})
	cache := map[string]*tenancyv1alpha1.Workspace{}
	get := func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.Workspace {
		return cache[cluster.String()+"|"+name]
	}
	put := func(old, ws *tenancyv1alpha1.Workspace) {
		if ws != nil {
			cache[logicalcluster.From(ws).String()+"|"+ws.Name] = ws
		} else {
			delete(cache, logicalcluster.From(old).String()+"|"+old.Name)
		}
		index.Update(old, ws)
	}
	mounting := func(ws ...*tenancyv1alpha1.Workspace) []string {
		names := make([]string, 0, len(ws))
		for _, ws := range ws {
			names = append(names, ws.Name)
		}
		return names
	}
	names := func(object string) []string {
		found := index.Workspaces(get, "root:org", kubeClusterGVK.Group, kubeClusterGVK.Kind, "", object)
		names := make([]string, 0, len(found))
		for _, ws := range found {
			names = append(names, ws.Name)
		}
		return names
	}
	a, b, other := workspaceIn("root:org", "a"), workspaceIn("root:org", "b"), workspaceIn("root:other", "c")
	put(nil, a)
	put(nil, b)
	put(nil, other)
	require.ElementsMatch(t, mounting(a, b), names("proxy"), "an object mounted twice")

	moved := workspaceIn("root:org", "a")
	moved.Spec.Mount.Reference.Name = "elsewhere"
	put(a, moved)
	require.Equal(t, mounting(b), names("proxy"))
	require.Equal(t, mounting(moved), names("elsewhere"))

	put(b, nil)
	require.Empty(t, names("proxy"))
	require.Empty(t, index.more)
	put(moved, nil)
	require.Len(t, index.first, 1, "root:other's")

	// The cache is ahead of the index: its Workspace is checked.
	stale := workspaceIn("root:org", "d")
	index.Update(nil, stale)
	changed := workspaceIn("root:org", "d")
	changed.Spec.Mount.Reference.Name = "new"
	cache["root:org|d"] = changed
	require.Empty(t, names("proxy"), "d mounts another object now")
}

// indexedMountObjects is the index the Workspace handler would have made of the Workspaces in indexer.
func indexedMountObjects(indexer cache.Indexer, rule mount.Rule) *MountObjectIndex {
	index := NewMountObjectIndex(rule)
	for _, obj := range indexer.List() {
		index.Update(nil, obj.(*tenancyv1alpha1.Workspace))
	}
	return index
}

func TestKindKeyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, gvk := range []schema.GroupVersionKind{kubeClusterGVK, {Version: "v1", Kind: "ConfigMap"}} {
		got, ok := parseKindKey(kindKey(gvk))
		require.True(t, ok)
		require.Equal(t, gvk, got)
	}
	for _, bad := range []string{"", "a/b", "a//c", "a/b/", "a/b/c/d"} {
		_, ok := parseKindKey(bad)
		require.False(t, ok, bad)
	}
}

func workspaceIn(cluster, name string) *tenancyv1alpha1.Workspace {
	ws := mountedWorkspace(kubeClusterRef)
	ws.Name = name
	ws.Annotations[logicalcluster.AnnotationKey] = cluster
	return ws
}

// TestKindReconciler follows one kind through its life: referenced from two
// clusters, served by a CRD in one and a binding in the other, a CRD going
// away, and the last reference going away.
func TestKindReconciler(t *testing.T) {
	t.Parallel()
	key := kindKey(kubeClusterGVK)
	bound := kubeClusterResource
	bound.Identity = "abc"

	workspaces := []*tenancyv1alpha1.Workspace{workspaceIn("c1", "a"), workspaceIn("c1", "b"), workspaceIn("c2", "c")}
	served := map[logicalcluster.Name]restmapping.Resource{"c1": kubeClusterResource, "c2": bound}
	var enqueued []string
	var informers []string

	r := &mountsReconciler{
		workspacesOfKind: func(string) ([]*tenancyv1alpha1.Workspace, error) { return workspaces, nil },
		resolve: func(cluster logicalcluster.Name, _ schema.GroupVersionKind) (restmapping.Resource, error) {
			if res, found := served[cluster]; found {
				return res, nil
			}
			return restmapping.Resource{}, restmapping.ErrKindNotServed
		},
		enqueueWorkspace: func(ws *tenancyv1alpha1.Workspace) { enqueued = append(enqueued, ws.Name) },
		enqueueKind:      func(string) { t.Fatal("no other kind") },
		syncInformers: func(_ context.Context, wanted []restmapping.Resource) map[string]bool {
			informers = informers[:0]
			for _, resource := range wanted {
				informers = append(informers, resource.Key())
			}
			return nil
		},
		runInformers: func(context.Context, map[string]bool) {},
		kinds:        map[string]kindResolution{},
	}
	ctx := context.Background()

	require.NoError(t, r.reconcile(ctx, key))
	require.ElementsMatch(t, []string{"kubeclusters.v1alpha1.contrib.kcp.io", "kubeclusters.v1alpha1.contrib.kcp.io:abc"}, informers,
		"one informer per resource: the CRD one and the bound one need different wildcard requests")
	require.ElementsMatch(t, []string{"a", "b", "c"}, enqueued)

	// Nothing changed: nobody is sent to workspacemounts-workspaces again.
	enqueued = nil
	require.NoError(t, r.reconcile(ctx, key))
	require.Empty(t, enqueued)

	// The CRD in c1 goes away: only c1's Workspaces are redone, and only the bound informer stays.
	delete(served, "c1")
	require.NoError(t, r.reconcile(ctx, key))
	require.ElementsMatch(t, []string{"a", "b"}, enqueued)
	require.Equal(t, []string{"kubeclusters.v1alpha1.contrib.kcp.io:abc"}, informers)

	// No Workspace references the kind any more: no informer is left.
	workspaces = nil
	require.NoError(t, r.reconcile(ctx, key))
	require.Empty(t, informers)
	require.Empty(t, r.kinds)

	// A malformed key is dropped, not retried forever.
	require.NoError(t, r.reconcile(ctx, "nonsense"))
}
