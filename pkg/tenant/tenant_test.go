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
// Package retry is the process's one way of trying again while kcp, or one
package tenant

import (
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
)

func TestOfPath(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]Name{
		"":                  "",
		"root":              Root,
		"root:org":          "root:org",
		"root:org:team":     "root:org",
		"root:org:team:dev": "root:org",
		"other:x":           "other",
	} {
		require.Equal(t, want, OfPath(logicalcluster.NewPath(path)), path)
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
	lc := func(cluster, path string) *corev1alpha1.LogicalCluster {
		annotations := map[string]string{"kcp.io/cluster": cluster}
		if path != "" {
			annotations["kcp.io/path"] = path
		}
		return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: annotations}}
	}
	require.NoError(t, indexer.Add(lc("c1", "root:org")))
	require.NoError(t, indexer.Add(lc("c2", "root:org:team")))
	require.NoError(t, indexer.Add(lc("c3", "")))
	pathOf := PathsFrom(cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{}), indexer)

	require.Equal(t, Root, Of("root", pathOf))
	require.Equal(t, Name("root:org"), Of("c1", pathOf))
	require.Equal(t, Name("root:org"), Of("c2", pathOf), "a child workspace counts with its org")
	require.Equal(t, Name("cluster:c3"), Of("c3", pathOf), "no path: the cluster alone")
	require.Equal(t, Name("cluster:c4"), Of("c4", pathOf), "unknown: the cluster alone")
	require.Equal(t, Name("cluster:c1"), Of("c1", nil))
}
