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
	"math"
	"sort"

	"github.com/kcp-dev/logicalcluster/v3"
)

// clusterSlots number the clusters with objects densely (a slot each, from
// 0), so that what a list or watch at * keeps per cluster is two bits at
// the cluster's slot (clusterVisibility), not a map entry keyed by its
// name: what grows with the clusters is 2 bits per cluster and watch.
// Every entry carries its cluster's slot (entry.slot), given when the
// store takes it.
//
// A cluster takes a slot with its first object and gives it back with its
// last (the change that empties it says so: change.emptied), and a slot
// given back is taken again by a new cluster only once every registered
// watcher has processed that change (watcher.position), which forgets the
// watcher's answer for the slot: no watcher ever takes an answer about one
// cluster for another's. So the slots are at most the clusters with
// objects at once, plus those given back while a watcher lagged (at most
// its buffer of changes, watcherBuffer, before it is closed).
//
// The store's lock guards them: taken and given back under the write lock.
type clusterSlots struct {
	byName map[logicalcluster.Name]uint32
	// names are the clusters by slot; a slot given back keeps its last
	// cluster's name until taken again, for the watchers that have not yet
	// processed the change that gave it back (Store.clustersOfSlots).
	names []logicalcluster.Name
	// released are the slots given back, oldest first, with the number of
	// changes pushed once the change that gave each back was.
	released []releasedSlot
	// pushed counts the changes pushed to the watchers.
	pushed uint64
}

type releasedSlot struct {
	slot  uint32
	after uint64
}

// slotCluster is a cluster and its slot.
type slotCluster struct {
	slot    uint32
	cluster logicalcluster.Name
}

// slotLocked is the slot of cluster, taken for it if it has none: the
// oldest slot given back that every watcher is past, else a new one.
func (s *Store) slotLocked(cluster logicalcluster.Name) uint32 {
	if slot, found := s.slots.byName[cluster]; found {
		return slot
	}
	var slot uint32
	if len(s.slots.released) > 0 && s.slots.released[0].after <= s.watchersPositionLocked() {
		slot = s.slots.released[0].slot
		s.slots.released = s.slots.released[1:]
		s.slots.names[slot] = cluster
	} else {
		if len(s.slots.names) == math.MaxUint32 {
			panic("more than 2^32 clusters with objects") // the store would hold terabytes first
		}
		slot = uint32(len(s.slots.names)) //nolint:gosec // bounded just above
		s.slots.names = append(s.slots.names, cluster)
	}
	s.slots.byName[cluster] = slot
	return slot
}

// releaseSlotLocked gives back the slot of a cluster that has just lost its
// last object, with the change that says so (pushed next, emptied): it is
// taken again only once every watcher has processed that change.
func (s *Store) releaseSlotLocked(cluster logicalcluster.Name) {
	slot, found := s.slots.byName[cluster]
	if !found {
		return
	}
	delete(s.slots.byName, cluster)
	s.slots.released = append(s.slots.released, releasedSlot{slot: slot, after: s.slots.pushed + 1})
}

// watchersPositionLocked is how many changes every registered watcher has
// processed at least (all pushed, without watchers).
func (s *Store) watchersPositionLocked() uint64 {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	position := s.slots.pushed
	for w := range s.watchers {
		position = min(position, w.position.Load())
	}
	return position
}

// clustersOfSlots are the clusters that hold the slots now and have
// objects; a slot given back (or taken by a cluster emptied and filled
// again under another slot) is left out: the watcher asking has yet to
// process the change that gave it back, which forgets its answer.
func (s *Store) clustersOfSlots(slots []uint32) []slotCluster {
	s.lock.RLock()
	defer s.lock.RUnlock()
	clusters := make([]slotCluster, 0, len(slots))
	for _, slot := range slots {
		if int(slot) >= len(s.slots.names) {
			continue
		}
		cluster := s.slots.names[slot]
		if current, found := s.slots.byName[cluster]; found && current == slot {
			clusters = append(clusters, slotCluster{slot: slot, cluster: cluster})
		}
	}
	return clusters
}

// currentClusters are the clusters with objects and their slots, sorted by name.
func (s *Store) currentClusters() []slotCluster {
	s.lock.RLock()
	defer s.lock.RUnlock()
	clusters := make([]slotCluster, 0, len(s.slots.byName))
	for cluster, slot := range s.slots.byName {
		clusters = append(clusters, slotCluster{slot: slot, cluster: cluster})
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].cluster < clusters[j].cluster })
	return clusters
}
