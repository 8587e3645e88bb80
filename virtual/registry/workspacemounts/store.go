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
	"cmp"
	"slices"
	"sync"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// Store holds the WorkspaceMount of every mounted Workspace of its
// [source]s, each as an [entry] never modified once stored, and fans the
// changes out to watchers. Its resource version is the vector of its
// sources' (see docs/design/registry-resource-versions.md).
type Store struct {
	rule mount.Rule

	lock    sync.RWMutex
	sources map[string]*source // by shard name, "" for --kubeconfig's
	items   map[string]*entry  // by cluster|name
	// byCluster holds a cluster from its first object to its last.
	byCluster map[logicalcluster.Name]map[string]*entry
	slots     clusterSlots

	// watchersLock is taken after lock, by pushes under the write lock.
	watchersLock sync.Mutex
	watchers     map[*watcher]struct{}

	history history

	// sorted and clusterOrder cache sorted lists: readers fill them under the
	// read lock and sortedLock, writers empty them.
	sortedLock   sync.Mutex
	sorted       map[logicalcluster.Name][]*entry
	clusterOrder []logicalcluster.Name
}

const allClusters = logicalcluster.Name("")

// NewStore is a store of the Workspaces rule says are mounted.
func NewStore(rule mount.Rule) *Store {
	return &Store{
		rule:      rule,
		sources:   map[string]*source{},
		items:     map[string]*entry{},
		byCluster: map[logicalcluster.Name]map[string]*entry{},
		slots:     clusterSlots{byName: map[logicalcluster.Name]uint32{}},
		watchers:  map[*watcher]struct{}{},
		sorted:    map[logicalcluster.Name][]*entry{},
	}
}

func (s *Store) get(cluster logicalcluster.Name, name string) (*entry, bool) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	e, found := s.items[kcpcache.ToClusterAwareKey(cluster.String(), "", name)]
	return e, found
}

// list returns the entries of one cluster, or of all, in [listKey] order,
// and the resource version of that snapshot. The slice is shared: read only.
func (s *Store) list(cluster logicalcluster.Name) ([]*entry, string) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	s.sortedLock.Lock()
	defer s.sortedLock.Unlock()
	if cluster == allClusters {
		return s.sortedAllLocked(), s.versionLocked()
	}
	return s.sortedClusterLocked(cluster), s.versionLocked()
}

// setLocked keeps e, a new entry no reader has yet, in its cluster's slot.
func (s *Store) setLocked(key string, e *entry) {
	e.slot = s.slotLocked(e.cluster)
	s.invalidateSortedLocked(e.cluster)
	s.items[key] = e
	if s.byCluster[e.cluster] == nil {
		s.byCluster[e.cluster] = map[string]*entry{}
		s.clusterOrder = nil
	}
	s.byCluster[e.cluster][key] = e
}

// deleteLocked forgets e and tells whether that emptied its cluster.
func (s *Store) deleteLocked(key string, e *entry) (emptied bool) {
	s.invalidateSortedLocked(e.cluster)
	delete(s.items, key)
	delete(s.byCluster[e.cluster], key)
	if len(s.byCluster[e.cluster]) > 0 {
		return false
	}
	delete(s.byCluster, e.cluster)
	s.clusterOrder = nil
	s.releaseSlotLocked(e.cluster)
	return true
}

// sortedClusterLocked is the cached sorted list of a cluster, nil for one
// without objects. The caller holds a store lock and sortedLock.
func (s *Store) sortedClusterLocked(cluster logicalcluster.Name) []*entry {
	if sorted, cached := s.sorted[cluster]; cached {
		return sorted
	}
	entries := s.byCluster[cluster]
	if len(entries) == 0 {
		return nil
	}
	sorted := make([]*entry, 0, len(entries))
	for _, e := range entries {
		sorted = append(sorted, e)
	}
	sortEntries(sorted)
	s.sorted[cluster] = sorted
	return sorted
}

// sortedClustersLocked is the cached sorted list of clusters with objects.
func (s *Store) sortedClustersLocked() []logicalcluster.Name {
	if s.clusterOrder == nil {
		s.clusterOrder = make([]logicalcluster.Name, 0, len(s.byCluster))
		for cluster := range s.byCluster {
			s.clusterOrder = append(s.clusterOrder, cluster)
		}
		slices.Sort(s.clusterOrder)
	}
	return s.clusterOrder
}

// sortedAllLocked is every entry, the clusters' sorted lists one after another.
func (s *Store) sortedAllLocked() []*entry {
	if sorted, cached := s.sorted[allClusters]; cached {
		return sorted
	}
	sorted := make([]*entry, 0, len(s.items))
	for _, cluster := range s.sortedClustersLocked() {
		sorted = append(sorted, s.sortedClusterLocked(cluster)...)
	}
	s.sorted[allClusters] = sorted
	return sorted
}

func (s *Store) invalidateSortedLocked(cluster logicalcluster.Name) {
	delete(s.sorted, cluster)
	delete(s.sorted, allClusters)
}

// listKey is where an object sorts in a list: by cluster, then name.
type listKey struct {
	cluster logicalcluster.Name
	name    string
}

func (k listKey) compare(other listKey) int {
	return cmp.Or(cmp.Compare(k.cluster, other.cluster), cmp.Compare(k.name, other.name))
}

func sortEntries(entries []*entry) {
	slices.SortFunc(entries, func(a, b *entry) int { return a.listKey().compare(b.listKey()) })
}
