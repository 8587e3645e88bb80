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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpfake "github.com/kcp-dev/sdk/client/clientset/versioned/cluster/fake"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/shards"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// servedShard is a shard holding the given logical clusters, with a
// Workspace named after each cluster's child in it.
func servedShard(t *testing.T, name string, clusters ...string) *shard {
	t.Helper()
	workspaces := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc})
	logicalClusters := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
	for _, cluster := range clusters {
		annotations := map[string]string{logicalcluster.AnnotationKey: cluster}
		require.NoError(t, logicalClusters.Add(&corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: annotations}}))
		require.NoError(t, workspaces.Add(&tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "child-of-" + cluster, Annotations: annotations}}))
	}
	s := &shard{name: name, contact: kcpcontact.NewForShard(name), started: time.Now(),
		review: func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			return name == "shard-2", nil
		}}
	s.setSynced(workspaces, logicalClusters)
	return s
}

// TestShards: lookups go to the shard holding the cluster; a path's parent
// and child may be on different shards.
func TestShards(t *testing.T) {
	t.Parallel()
	shards := newShards()
	require.False(t, shards.Synced())
	_, err := shards.GetWorkspace("c-root", "child-of-c-root")
	require.True(t, apierrors.IsNotFound(err), "no shard yet: %v", err)

	root, two := servedShard(t, "root", "c-root", "c-org"), servedShard(t, "shard-2", "c-team")
	starting := &shard{name: "shard-3", contact: kcpcontact.NewForShard("shard-3"), started: time.Now()}
	shards.add(root)
	shards.add(two)
	shards.add(starting)
	require.True(t, shards.Synced())
	require.Equal(t, []string{"root", "shard-2", "shard-3"}, shards.Names())

	for cluster, want := range map[logicalcluster.Name]string{"c-root": "root", "c-org": "root", "c-team": "shard-2"} {
		ws, err := shards.GetWorkspace(cluster, "child-of-"+cluster.String())
		require.NoError(t, err, cluster)
		require.Equal(t, cluster, logicalcluster.From(ws))
		require.True(t, shards.ClusterExists(cluster))
		review, found := shards.ReviewerOf(cluster)
		require.True(t, found, cluster)
		allowed, err := review(t.Context(), cluster, authorizationv1.SubjectAccessReviewSpec{})
		require.NoError(t, err)
		require.Equal(t, want == "shard-2", allowed, "%s is reviewed by %s", cluster, want)
	}
	_, err = shards.GetWorkspace("c-team", "child-of-c-root")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	require.False(t, shards.ClusterExists("c-nowhere"))
	_, found := shards.ReviewerOf("c-nowhere")
	require.False(t, found, "a cluster no shard holds has no reviewer: denied")
	require.Len(t, shards.List(), 3, "the Workspaces of the synced shards")

	require.False(t, shards.syncedOrLate([]string{"root", "shard-2", "shard-3"}, time.Minute), "shard-3 is still syncing")
	require.True(t, shards.syncedOrLate([]string{"root", "shard-2", "shard-3"}, time.Nanosecond), "shard-3 had its grace")
	require.False(t, shards.syncedOrLate([]string{"root", "shard-3"}, 0), "no grace: shard-3 is waited for")
	require.False(t, shards.syncedOrLate([]string{"root", "shard-4"}, time.Nanosecond), "shard-4's runner has not started")
	require.Equal(t, []string{"root", "shard-2"}, shardNames([]interface{}{
		&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "root"}, Spec: corev1alpha1.ShardSpec{BaseURL: "https://root"}},
		&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "shard-2"}, Spec: corev1alpha1.ShardSpec{BaseURL: "https://two"}},
		&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "no-url"}},
		&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1alpha1.ShardSpec{BaseURL: "http://plain"}},
	}), "a Shard without baseURL, or not at https://, is not waited for")

	unnamed := servedShard(t, "", "c-alone")
	shards.add(unnamed)
	require.Equal(t, []string{"root", "shard-2", "shard-3"}, shards.Names(), "the unnamed shard of --kubeconfig is kcp itself: not a named shard")
	require.True(t, shards.ClusterExists("c-alone"))
	require.True(t, shards.syncedOrLate([]string{""}, 0))
	shards.remove(unnamed)

	shards.remove(&shard{name: "shard-2"})
	require.True(t, shards.ClusterExists("c-team"), "only the runner that added a shard removes it")
	shards.remove(two)
	require.False(t, shards.ClusterExists("c-team"))
	_, answered := shards.LastContact("shard-2")
	require.False(t, answered, "not served")
}

// TestShardsPathOf: a cluster's path is read from whichever synced shard
// holds it, and names its tenant; a cluster no shard knows the path of is
// a tenant of its own.
func TestShardsPathOf(t *testing.T) {
	t.Parallel()
	withPath := func(s *shard, cluster, path string) {
		_, logicalClusters := s.caches()
		require.NoError(t, logicalClusters.Update(&corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{
			Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster, core.LogicalClusterPathAnnotationKey: path},
		}}))
	}
	root, two := servedShard(t, "root", "c-org", "c-nopath"), servedShard(t, "shard-2", "c-child")
	withPath(root, "c-org", "root:org")
	withPath(two, "c-child", "root:org:child")
	served := newShards()
	served.add(root)
	served.add(two)
	served.add(&shard{name: "shard-3", contact: kcpcontact.NewForShard("shard-3"), started: time.Now()}) // not synced

	require.Equal(t, "root:org:child", served.PathOf("c-child").String())
	require.Equal(t, tenant.Name("root:org"), tenant.Of("c-child", served.PathOf))
	require.Equal(t, tenant.Of("c-org", served.PathOf), tenant.Of("c-child", served.PathOf))
	require.Equal(t, tenant.Name("cluster:c-nopath"), tenant.Of("c-nopath", served.PathOf))
	require.Equal(t, tenant.Name("cluster:c-nowhere"), tenant.Of("c-nowhere", served.PathOf))
}

// TestListShardsRefusesPlainHTTP: cleanup and doctor reach the Shards at
// https:// only; one elsewhere is skipped, the others kept.
func TestListShardsRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	object := func(name, baseURL string) *corev1alpha1.Shard {
		return &corev1alpha1.Shard{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: core.RootCluster.String()}},
			Spec:       corev1alpha1.ShardSpec{BaseURL: baseURL},
		}
	}
	client := kcpfake.NewClientset(object("root", "https://root:6443"), object("plain", "http://plain:6443"), object("shard-2", "https://two:6443/"), object("no-url", ""))
	c := &Config{
		ClientConfig:                 &rest.Config{Host: "https://root:6443"},
		ShardCredentials:             &rest.Config{BearerToken: "t"},
		RootKcpSharedInformerFactory: kcpinformers.NewSharedScopedInformerFactory(client.Cluster(core.RootCluster.Path()), 0, ""),
	}
	found, err := c.ListShards(t.Context())
	require.NoError(t, err)
	require.Equal(t, []shards.Shard{{Name: "root", BaseURL: "https://root:6443"}, {Name: "shard-2", BaseURL: "https://two:6443"}}, withoutConfigs(found))
}
