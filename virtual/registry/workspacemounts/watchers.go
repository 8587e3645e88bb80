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
	"sync"

	"k8s.io/utils/buffer"

	"github.com/kcp-dev/logicalcluster/v3"
)

const (
	// watcherBuffer is how far a watcher may lag before it is closed.
	watcherBuffer = 1000
	// maxIdleQueue is the most changes an empty queue keeps room for.
	maxIdleQueue = 16
)

// change is one event for watchers at version, the store's after it; emptied
// marks the deletion of a cluster's last object, releasing its slot. encoded
// is shared by the watchers it was pushed to, nil in the history.
type change struct {
	old, new *entry
	version  string
	emptied  bool
	encoded  *changeEncodings
}

// watchStart is what a watcher sends first: the current objects, one shared
// sorted list per cluster, or the changes since a resource version.
type watchStart struct {
	clusters [][]*entry
	changes  []change
}

// watch registers a watcher with its [watchStart], atomically, under the
// read lock only: lists and other watch starts go on, changes wait.
func (s *Store) watch(initial bool, cluster logicalcluster.Name, since map[string]uint64, newWatcher func(first watchStart, resourceVersion string) *watcher) (*watcher, error) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	var first watchStart
	if initial {
		s.sortedLock.Lock()
		if cluster != allClusters {
			if entries := s.sortedClusterLocked(cluster); len(entries) > 0 {
				first.clusters = [][]*entry{entries}
			}
		} else {
			for _, c := range s.sortedClustersLocked() {
				first.clusters = append(first.clusters, s.sortedClusterLocked(c))
			}
		}
		s.sortedLock.Unlock()
	} else {
		var err error
		if first.changes, err = s.replayLocked(since); err != nil {
			return nil, err
		}
	}
	w := newWatcher(first, s.versionLocked())
	w.processed.Store(s.slots.pushed) // pushes hold the write lock
	s.watchersLock.Lock()
	s.watchers[w] = struct{}{}
	s.watchersLock.Unlock()
	return w, nil
}

func (s *Store) pushLocked(c change) {
	s.slots.pushed++
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	if len(s.watchers) > 1 {
		c.encoded = &changeEncodings{}
	}
	for w := range s.watchers {
		w.push(c)
	}
}

func (s *Store) unregister(w *watcher) {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	delete(s.watchers, w)
}

// StopWatchesWhenDone ends every watch when ctx is done.
func (s *Store) StopWatchesWhenDone(ctx context.Context) {
	go func() {
		<-ctx.Done()
		s.watchersLock.Lock()
		watchers := make([]*watcher, 0, len(s.watchers))
		for w := range s.watchers {
			watchers = append(watchers, w)
		}
		s.watchersLock.Unlock()
		for _, w := range watchers {
			w.Stop()
		}
	}()
}

// clustersSnapshot is some clusters' objects at one version, and how many
// changes before it the watcher has yet to process.
type clustersSnapshot struct {
	entries         map[logicalcluster.Name][]*entry
	resourceVersion string
	queued          int
}

// snapshotClusters reads a [clustersSnapshot] under the lock every push
// holds. Only w's goroutine may call it: nothing else takes from its queue.
func (s *Store) snapshotClusters(w *watcher, clusters []logicalcluster.Name) clustersSnapshot {
	snapshot := clustersSnapshot{entries: make(map[logicalcluster.Name][]*entry, len(clusters))}
	s.lock.RLock()
	defer s.lock.RUnlock()
	s.sortedLock.Lock()
	for _, cluster := range clusters {
		snapshot.entries[cluster] = s.sortedClusterLocked(cluster)
	}
	s.sortedLock.Unlock()
	snapshot.resourceVersion = s.versionLocked()
	snapshot.queued = w.incoming.len()
	return snapshot
}

// changeQueue is a watcher's changes pushed and not yet processed, at most
// [watcherBuffer]; ready holds a signal whenever changes wait.
type changeQueue struct {
	lock    sync.Mutex
	changes *buffer.Ring[change]
	ready   chan struct{}
}

func newChangeQueue() changeQueue {
	return changeQueue{changes: buffer.NewRing[change](buffer.RingOptions{NormalSize: maxIdleQueue}), ready: make(chan struct{}, 1)}
}

func (q *changeQueue) push(c change) bool {
	q.lock.Lock()
	defer q.lock.Unlock()
	if q.changes.Len() >= watcherBuffer {
		return false
	}
	q.changes.WriteOne(c)
	q.signal()
	return true
}

func (q *changeQueue) pop() (change, bool) {
	q.lock.Lock()
	defer q.lock.Unlock()
	c, ok := q.changes.ReadOne()
	if q.changes.Len() > 0 {
		q.signal()
	}
	return c, ok
}

func (q *changeQueue) len() int {
	q.lock.Lock()
	defer q.lock.Unlock()
	return q.changes.Len()
}

func (q *changeQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
