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
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// indexedClusters are the clusters the store keeps anything for: in its
// per-cluster index, its sorted lists (allClusters aside) and its sorted
// names of clusters.
func indexedClusters(s *Store) (byCluster, sorted, order []string) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	s.sortedLock.Lock()
	defer s.sortedLock.Unlock()
	for cluster := range s.byCluster {
		byCluster = append(byCluster, cluster.String())
	}
	for cluster := range s.sorted {
		if cluster != allClusters {
			sorted = append(sorted, cluster.String())
		}
	}
	for _, cluster := range s.clusterOrder {
		order = append(order, cluster.String())
	}
	sort.Strings(byCluster)
	sort.Strings(sorted)
	return byCluster, sorted, order
}

// TestStoreForgetsEmptyClusters: the store keeps nothing for a cluster
// without objects: not for one whose last object went, not for one listed
// or watched that never had any, whatever its name.
func TestStoreForgetsEmptyClusters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c2", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible)
	for _, target := range []string{"c1", "c2", "*", "never-had-any", "made-up-42"} {
		list(t, r, target, nil)
		w := startWatch(t, r, target, &metainternalversion.ListOptions{})
		w.Stop()
	}
	byCluster, sorted, order := indexedClusters(h.store)
	require.Equal(t, []string{"c1", "c2"}, byCluster)
	require.Equal(t, []string{"c1", "c2"}, sorted)
	require.Equal(t, []string{"c1", "c2"}, order)

	h.delete(mounted("c2", "a", mount.PhaseReady, nil))
	h.flush()
	list(t, r, "c2", nil)
	list(t, r, "*", nil)
	byCluster, sorted, order = indexedClusters(h.store)
	require.Equal(t, []string{"c1"}, byCluster)
	require.Equal(t, []string{"c1"}, sorted)
	require.Equal(t, []string{"c1"}, order)
	require.Equal(t, []string{"c1/a"}, names(list(t, r, "*", nil)))

	h.add(mounted("c2", "b", mount.PhaseReady, nil))
	h.flush()
	require.Equal(t, []string{"c1/a", "c2/b"}, names(list(t, r, "*", nil)))
	require.Equal(t, []string{"c2/b"}, names(list(t, r, "c2", nil)))
}
