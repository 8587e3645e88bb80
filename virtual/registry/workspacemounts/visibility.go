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
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
)

// VisibilityFunc tells whether a request's user may see the WorkspaceMounts
// of a cluster, for lists and watches at *. maxAge 0 takes any answer the
// authorizer keeps, a stale one included; above 0, only one kcp gave at
// most maxAge ago, without stale grace.
type VisibilityFunc func(ctx context.Context, cluster logicalcluster.Name, maxAge time.Duration) (bool, error)

// clusterVisibility is what one list or watch knows of the clusters its user
// may see: two bits at each cluster's slot, known and allowed. A list takes
// an error for "not visible"; a watch keeps the error, which ends it. It
// belongs to one goroutine. See docs/design/registry-watch-visibility.md.
type clusterVisibility struct {
	ctx        context.Context //nolint:containedctx // the request's, for as long as its list or watch runs
	ask        VisibilityFunc
	maxAge     time.Duration
	askTimeout time.Duration
	known      bitset
	allowed    bitset
	err        error
}

func newClusterVisibility(ctx context.Context, ask VisibilityFunc, maxAge, askTimeout time.Duration) *clusterVisibility {
	return &clusterVisibility{ctx: ctx, ask: ask, maxAge: maxAge, askTimeout: askTimeout}
}

// visible is the kept answer for cluster at slot, asked for if there is none.
func (v *clusterVisibility) visible(cluster logicalcluster.Name, slot uint32) bool {
	if answer, known := v.answer(slot); known {
		return answer
	}
	if v.maxAge == 0 {
		answer, err := v.ask(v.ctx, cluster, 0)
		v.set(slot, answer && err == nil)
		return answer && err == nil
	}
	ctx, cancel := context.WithTimeout(v.ctx, v.askTimeout)
	defer cancel()
	answer, err := askWithin(ctx, v.ask, cluster, v.maxAge)
	if err != nil {
		if v.err == nil {
			v.err = fmt.Errorf("asking whether cluster %s is visible: %w", cluster, err)
		}
		return false
	}
	v.set(slot, answer)
	return answer
}

func (v *clusterVisibility) answer(slot uint32) (visible, known bool) {
	return v.allowed.get(slot), v.known.get(slot)
}

func (v *clusterVisibility) set(slot uint32, visible bool) {
	v.known.set(slot, true)
	v.allowed.set(slot, visible)
}

// forget drops the answer at slot, whose cluster has no objects left.
func (v *clusterVisibility) forget(slot uint32) {
	v.known.set(slot, false)
	v.allowed.set(slot, false)
	v.known.trim()
	v.allowed.trim()
}

// askWithin waits for ask until ctx is done, whether or not ask heeds ctx.
func askWithin(ctx context.Context, ask VisibilityFunc, cluster logicalcluster.Name, maxAge time.Duration) (bool, error) {
	type answer struct {
		visible bool
		err     error
	}
	answered := make(chan answer, 1)
	go func() {
		visible, err := ask(ctx, cluster, maxAge)
		answered <- answer{visible: visible, err: err}
	}()
	select {
	case a := <-answered:
		return a.visible && a.err == nil, a.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// clusterSlots number the clusters with objects densely, under the store's
// lock; a released slot is taken again only once every watcher is past its
// release. See docs/design/registry-watch-visibility.md.
type clusterSlots struct {
	byName map[logicalcluster.Name]uint32
	// names are the clusters by slot, a released one's until taken again.
	names    []logicalcluster.Name
	released []releasedSlot // oldest first
	pushed   uint64
}

// releasedSlot is free once every watcher has processed after changes.
type releasedSlot struct {
	slot  uint32
	after uint64
}

type slotCluster struct {
	slot    uint32
	cluster logicalcluster.Name
}

// slotLocked is the slot of cluster, taken for it if it has none.
func (s *Store) slotLocked(cluster logicalcluster.Name) uint32 {
	if slot, found := s.slots.byName[cluster]; found {
		return slot
	}
	var slot uint32
	if len(s.slots.released) > 0 && s.slots.released[0].after <= s.watchersProcessedLocked() {
		slot = s.slots.released[0].slot
		s.slots.released = s.slots.released[1:]
		s.slots.names[slot] = cluster
	} else {
		if len(s.slots.names) == math.MaxUint32 {
			panic("more than 2^32 clusters with objects")
		}
		slot = uint32(len(s.slots.names)) //nolint:gosec // bounded just above
		s.slots.names = append(s.slots.names, cluster)
	}
	s.slots.byName[cluster] = slot
	return slot
}

// releaseSlotLocked releases a cluster's slot with the change pushed next.
func (s *Store) releaseSlotLocked(cluster logicalcluster.Name) {
	slot, found := s.slots.byName[cluster]
	if !found {
		return
	}
	delete(s.slots.byName, cluster)
	s.slots.released = append(s.slots.released, releasedSlot{slot: slot, after: s.slots.pushed + 1})
}

// watchersProcessedLocked is how many changes every watcher has processed.
func (s *Store) watchersProcessedLocked() uint64 {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	processed := s.slots.pushed
	for w := range s.watchers {
		processed = min(processed, w.processed.Load())
	}
	return processed
}

// clustersOfSlots are the clusters holding slots now; released ones are left out.
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
	slices.SortFunc(clusters, func(a, b slotCluster) int { return strings.Compare(string(a.cluster), string(b.cluster)) })
	return clusters
}

// bitset is a set of slots, as long as its highest member needs.
type bitset []uint64

func (b bitset) get(i uint32) bool {
	word := int(i / 64)
	return word < len(b) && b[word]&(1<<(i%64)) != 0
}

func (b *bitset) set(i uint32, on bool) {
	word := int(i / 64)
	if word >= len(*b) {
		if !on {
			return
		}
		*b = append(*b, make([]uint64, word+1-len(*b))...)
	}
	if on {
		(*b)[word] |= 1 << (i % 64)
	} else {
		(*b)[word] &^= 1 << (i % 64)
	}
}

// trim drops the empty words at the end, and the memory when none is left.
func (b *bitset) trim() {
	n := len(*b)
	for n > 0 && (*b)[n-1] == 0 {
		n--
	}
	switch {
	case n == 0:
		*b = nil
	case n < len(*b):
		*b = (*b)[:n]
	}
}

// ones are the members, in order.
func (b bitset) ones() []uint32 {
	var ones []uint32
	for word, w := range b {
		for w != 0 {
			bit := bits.TrailingZeros64(w)
			ones = append(ones, uint32(word*64+bit)) //nolint:gosec // a slot is a uint32
			w &^= 1 << bit
		}
	}
	return ones
}
