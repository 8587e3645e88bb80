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
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// slotOf is the slot of a cluster with objects.
func slotOf(t *testing.T, s *Store, cluster logicalcluster.Name) uint32 {
	t.Helper()
	s.lock.RLock()
	defer s.lock.RUnlock()
	slot, found := s.slots.byName[cluster]
	require.True(t, found, "%s has no slot", cluster)
	return slot
}

// TestSlotsWaitForEveryWatcher: a slot given back is taken again by a new
// cluster only once every watcher has processed the change that gave it
// back; a watcher that lags keeps it from being taken.
func TestSlotsWaitForEveryWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c2", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible)
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "c1/a"}, event{watch.Added, "c2/a"})
	freed := slotOf(t, h.store, "c1")

	// The watcher's client reads nothing: the change that empties c1 waits
	// behind the one before it, which the watcher is trying to send.
	h.add(mounted("c2", "b", mount.PhaseReady, nil))
	h.delete(mounted("c1", "a", mount.PhaseReady, nil))
	h.add(mounted("c3", "a", mount.PhaseReady, nil))
	h.flush()
	require.NotEqual(t, freed, slotOf(t, h.store, "c3"), "a lagging watcher has not forgotten c1's answer")

	expect(t, w, event{watch.Added, "c2/b"}, event{watch.Deleted, "c1/a"}, event{watch.Added, "c3/a"})
	h.flush()
	require.Eventually(t, func() bool {
		h.store.lock.RLock()
		defer h.store.lock.RUnlock()
		return h.store.watchersProcessedLocked() == h.store.slots.pushed
	}, eventually, tick)
	h.add(mounted("c4", "a", mount.PhaseReady, nil))
	h.flush()
	require.Equal(t, freed, slotOf(t, h.store, "c4"), "once every watcher is past it, the slot is taken again")
	expect(t, w, event{watch.Added, "c4/a"})
}

// TestSlotsNoAnswerForAnotherCluster: a cluster that takes the slot of one
// its watcher's user could see is not shown for that: it gets its own
// answer, and the cluster that left gets a fresh one when it comes back.
func TestSlotsNoAnswerForAnotherCluster(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "c2": errInvisible})
	r := NewREST(h.store, v.visible)
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "c1/a"})
	freed := slotOf(t, h.store, "c1")

	h.delete(mounted("c1", "a", mount.PhaseReady, nil))
	expect(t, w, event{watch.Deleted, "c1/a"})
	h.flush()
	require.Eventually(t, func() bool {
		h.store.lock.RLock()
		defer h.store.lock.RUnlock()
		return h.store.watchersProcessedLocked() == h.store.slots.pushed
	}, eventually, tick)
	h.add(mounted("c2", "secret", mount.PhaseReady, nil))
	h.flush()
	require.Equal(t, freed, slotOf(t, h.store, "c2"), "c2 takes c1's slot")
	expectQuiet(t, h, w)
	require.Equal(t, 1, v.callCounts()["c2"], "c2 is asked about")

	v.set("c1", errInvisible)
	h.add(mounted("c1", "b", mount.PhaseReady, nil))
	expectQuiet(t, h, w)
	require.Equal(t, 2, v.callCounts()["c1"], "c1 is asked again")
}

// TestSlotsBoundedByClusters: clusters that come and go, with watchers at
// * following, take no more slots than the most clusters at once (plus
// the ones a watcher was behind on), and each watcher's answers none
// beyond them.
func TestSlotsBoundedByClusters(t *testing.T) {
	t.Parallel()
	s := NewStore(mount.Rule{})
	src := &source{synced: true}
	s.sources[""] = src
	r := NewREST(s, allVisible)
	const clusters, rounds = 50, 20
	watchers := make([]watch.Interface, 3)
	for i := range watchers {
		watchers[i] = startWatch(t, r, "*", &metainternalversion.ListOptions{})
		go func() {
			for range watchers[i].ResultChan() { // the client reads every event
			}
		}()
	}
	rv := 0
	for round := range rounds {
		names := make([]string, clusters)
		for i := range names {
			names[i] = fmt.Sprintf("r%02d-c%02d", round, i)
			rv++
			ws := mounted(names[i], "a", mount.PhaseReady, nil)
			ws.ResourceVersion = fmt.Sprint(rv)
			s.upsert(src, ws)
		}
		for _, name := range names {
			rv++
			ws := mounted(name, "a", mount.PhaseReady, nil)
			ws.ResourceVersion = fmt.Sprint(rv)
			s.remove(src, ws)
		}
		// The watchers catch up before the next round.
		require.Eventually(t, func() bool {
			s.lock.RLock()
			defer s.lock.RUnlock()
			return s.watchersProcessedLocked() == s.slots.pushed
		}, eventually, tick)
	}
	s.lock.RLock()
	slots := len(s.slots.names)
	s.lock.RUnlock()
	require.LessOrEqual(t, slots, 2*clusters, "%d rounds of %d clusters", rounds, clusters)
	s.watchersLock.Lock()
	known := 0
	for w := range s.watchers {
		known += len(w.visibility.known.ones())
	}
	s.watchersLock.Unlock()
	require.Zero(t, known, "no answer kept for clusters gone")
}

func TestBitset(t *testing.T) {
	t.Parallel()
	var b bitset
	require.False(t, b.get(1000))
	b.set(3, true)
	b.set(130, true)
	b.set(64, true)
	b.set(5000, false)
	require.Len(t, b, 3, "a bit off past the end takes no room")
	require.Equal(t, []uint32{3, 64, 130}, b.ones())
	require.True(t, b.get(130))
	b.set(130, false)
	b.trim()
	require.Len(t, b, 2)
	b.set(3, false)
	b.set(64, false)
	b.trim()
	require.Nil(t, b)
}
