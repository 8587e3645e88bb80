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
	"sort"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

const (
	// watcherBuffer is how many changes a watcher may lag behind before it is
	// closed (the client then lists and watches again), so that one slow
	// client cannot hold up the others or grow without bound.
	watcherBuffer = 1000
	// bookmarkInterval is how often a watcher that asked for bookmarks gets one.
	bookmarkInterval = 30 * time.Second
)

// watchOptions is what a watch request asks of its watcher.
type watchOptions struct {
	// matches is the target cluster and the selectors.
	matches func(*entry) bool
	// jsonEncoder is the identifier of the encoder whose output the
	// store's JSON is (REST.WithEncodedJSON).
	jsonEncoder runtime.Identifier
	// cluster is the watch's one cluster (its path's, for a path); empty at *.
	cluster logicalcluster.Name
	// visibility is what the watcher knows of the clusters its user may
	// see, asked with watchVisibilityMaxAge: at one cluster, that cluster
	// (visible: the authorizer let the request in); at *, each cluster it
	// has an answer for.
	visibility *clusterVisibility
	// visibilityTicks starts the clock of the visibility re-checks;
	// recheckTimeout bounds one re-check.
	visibilityTicks func() (ticks <-chan time.Time, stop func())
	recheckTimeout  time.Duration
	// initialEventsEnd asks for a bookmark marking the end of the initial events.
	initialEventsEnd bool
	bookmarks        bool
	// resumed: the watch starts from a resource version, not with the
	// current objects; the client has them already, from a list or an
	// earlier watch.
	resumed bool
}

// watcher is one watch request: it sends the initial objects, then the
// changes that match its filter, as ADDED, MODIFIED or DELETED as seen
// through the filter (an object leaving the filter is DELETED for it).
//
// Every watch follows its user's access, one way for all: every
// visibilityRecheckInterval the watcher asks again about each cluster it
// shows (recheckVisibility), for an answer kcp gave at most
// watchVisibilityMaxAge ago (no stale answer: the authorizer asks kcp when
// it has none that fresh), and the re-check must be over within
// recheckTimeout. A watch of one cluster (or path) ends when its cluster is
// no longer visible; a watch at * sends DELETED for the objects of a
// cluster gone out of sight (ADDED for one come into sight). When kcp does
// not answer, or not in time, the watch ends: its client lists again, and
// the list is authorized anew. So a revoked access shows in a watch within
// watchAccessBound.
//
// At *, the filter includes visibility, decided before the selectors (what
// a watch asks of kcp does not depend on the objects its user cannot
// see), and what the watcher has sent
// depends on it: for every cluster the watcher has an answer for
// (visibility, two bits at the cluster's slot), the client has, as of the
// last change the watcher processed, every matching object of the cluster
// if it is visible, none if not; of a cluster without an answer, nothing
// (an answer is asked for the first matching object). The change that
// empties a cluster forgets its answer, so that what a watcher keeps is
// bounded by the store's slots (slots.go), two bits per cluster. Only the
// watcher's goroutine (run) reads or changes the answers, so that they
// always describe what it has sent.
type watcher struct {
	store *Store
	watchOptions
	// first is what to send before the live changes: the current objects
	// as additions, or the history since the requested resource version.
	first watchStart
	// resourceVersion is the store's when the watcher was registered, then
	// that of the last change (or visibility re-check) it processed.
	resourceVersion string

	// position counts the store's changes the watcher has processed: those
	// pushed before it registered, and since, each once translated. A slot
	// given back is taken again only once every watcher is past the change
	// that gave it back (slots.go).
	position atomic.Uint64

	incoming changeQueue
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func newWatcher(store *Store, options watchOptions) func(watchStart, string) *watcher {
	return func(first watchStart, resourceVersion string) *watcher {
		return &watcher{
			store: store, watchOptions: options, first: first, resourceVersion: resourceVersion,
			incoming: changeQueue{ready: make(chan struct{}, 1)},
			result:   make(chan watch.Event),
			done:     make(chan struct{}),
		}
	}
}

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event {
	return w.result
}

// Stop implements watch.Interface.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.store.unregister(w)
	})
}

// push is called with the store locked: it must not block.
func (w *watcher) push(c change) {
	if !w.incoming.push(c) {
		// Too slow: end the watch. The store lock is held, so unregister later.
		go w.Stop()
	}
}

// changeQueue is a watcher's queue of the changes pushed to it and not yet
// processed: at most watcherBuffer, in a slice as long as the watcher lags
// behind (a hundred idle watchers hold almost nothing, where a buffered
// channel of watcherBuffer changes would be 32 KB each). ready holds a
// signal whenever changes wait.
type changeQueue struct {
	lock    sync.Mutex
	changes []change
	head    int // changes[head:] wait
	ready   chan struct{}
}

// push appends c, unless watcherBuffer changes wait already.
func (q *changeQueue) push(c change) bool {
	q.lock.Lock()
	defer q.lock.Unlock()
	if len(q.changes)-q.head >= watcherBuffer {
		return false
	}
	q.changes = append(q.changes, c)
	q.signal()
	return true
}

// pop takes the oldest change, if one waits.
func (q *changeQueue) pop() (change, bool) {
	q.lock.Lock()
	defer q.lock.Unlock()
	if q.head == len(q.changes) {
		return change{}, false
	}
	c := q.changes[q.head]
	q.changes[q.head] = change{}
	q.head++
	switch {
	case q.head < len(q.changes):
		q.signal()
	case cap(q.changes) > maxIdleQueue:
		q.changes, q.head = nil, 0 // a burst is over: its memory goes
	default:
		q.changes, q.head = q.changes[:0], 0
	}
	return c, true
}

// len is how many changes wait.
func (q *changeQueue) len() int {
	q.lock.Lock()
	defer q.lock.Unlock()
	return len(q.changes) - q.head
}

func (q *changeQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// maxIdleQueue is the most changes an empty queue keeps room for.
const maxIdleQueue = 16

// run sends the events until the watch stops; it closes the result channel.
func (w *watcher) run() {
	defer close(w.result)
	// The clock runs from the start: a re-check falls due while the first
	// events are sent, and comes right after them.
	rechecks, stop := w.visibilityTicks()
	defer stop()
	registeredAt := w.resourceVersion // the store's, when the watcher was registered
	for _, entries := range w.first.clusters {
		// One answer per cluster, before any selector: the objects of a
		// cluster the user may not see are not looked at.
		if w.cluster == "" && !w.visibility.visible(entries[0].cluster, entries[0].slot) {
			if w.failed() {
				return
			}
			continue
		}
		for _, e := range entries {
			if w.matches(e) && !w.send(watch.Event{Type: watch.Added, Object: w.object(e, "")}) {
				return
			}
		}
	}
	for _, c := range w.first.changes {
		if event, ok := w.translate(c); ok && !w.send(event) || w.failed() {
			return
		}
	}
	if w.cluster == "" && w.resumed {
		// The client has what a list (or an earlier watch) showed it: the
		// objects of the clusters visible then. The watcher takes the
		// answers of now for those it has none for yet, as they were a
		// moment ago, so that a cluster that goes out of sight later is
		// DELETED; a cluster without an answer would be taken for one never
		// shown. After the changes replayed: their slots are those of their
		// moment, the current ones those of now (slots.go).
		for _, c := range w.store.currentClusters() {
			w.visibility.visible(c.cluster, c.slot)
			if w.failed() {
				return
			}
		}
	}
	w.first, w.resourceVersion = watchStart{}, registeredAt
	if w.initialEventsEnd && !w.send(w.bookmark(true)) {
		return
	}

	var bookmarks <-chan time.Time
	if w.bookmarks {
		ticker := time.NewTicker(bookmarkInterval)
		defer ticker.Stop()
		bookmarks = ticker.C
	}
	for {
		select {
		case <-w.done:
			return
		case <-w.incoming.ready:
			c, ok := w.incoming.pop()
			if !ok {
				continue
			}
			event, ok := w.translate(c)
			w.position.Add(1)
			if ok && !w.send(event) || w.failed() {
				return
			}
		case <-bookmarks:
			if !w.send(w.bookmark(false)) {
				return
			}
		case <-rechecks:
			if !w.recheckVisibility() {
				return
			}
		}
	}
}

// failed tells whether asking kcp about a cluster the watch came upon
// failed, which ends the watch (logged): the client lists again.
func (w *watcher) failed() bool {
	if w.visibility.err == nil {
		return false
	}
	klog.FromContext(w.visibility.ctx).V(2).Info("Ending a watch: kcp did not tell whether its user may see a cluster", "err", w.visibility.err)
	return true
}

// translate turns a store change into the event this watcher sees; the
// change that empties a cluster forgets the answer for it (its slot is
// given back).
func (w *watcher) translate(c change) (watch.Event, bool) {
	wasIn := c.old != nil && w.shows(c.old)
	isIn := c.new != nil && w.shows(c.new)
	if c.version != "" {
		w.resourceVersion = c.version
	}
	if c.emptied {
		w.visibility.forget(c.old.slot)
	}
	switch {
	case isIn && wasIn:
		return watch.Event{Type: watch.Modified, Object: w.object(c.new, c.version)}, true
	case isIn:
		return watch.Event{Type: watch.Added, Object: w.object(c.new, c.version)}, true
	case wasIn:
		return watch.Event{Type: watch.Deleted, Object: w.object(c.old, c.version)}, true
	default:
		return watch.Event{}, false
	}
}

// object is the object of an event: with the store's version at the
// change, from which a client resumes (an initial event keeps its own).
func (w *watcher) object(e *entry, version string) *eventObject {
	return &eventObject{entry: e, resourceVersion: version, jsonEncoder: w.jsonEncoder}
}

// shows tells whether the client of this watcher sees e: at one cluster,
// it matches (the cluster is visible while the watch lasts); at *, its
// cluster is visible by the answer the watcher keeps, asked before the
// selectors are, and it matches.
func (w *watcher) shows(e *entry) bool {
	if w.cluster != "" {
		return w.matches(e)
	}
	return w.visibility.visible(e.cluster, e.slot) && w.matches(e)
}

// recheckVisibility asks again, within recheckTimeout, about the watch's
// one cluster, or at * about every cluster the watcher has an answer for
// and that has objects in the store, one VisibilityFunc call each (an
// answer at most watchVisibilityMaxAge old) and without the store lock. A
// watch of one cluster ends when its cluster is no longer visible; at *,
// the watcher brings the client in line with the new answers: DELETED for
// the matching objects of a cluster no longer visible, ADDED for those of
// one now visible. A cluster emptied meanwhile is left to the change that
// emptied it, which forgets its answer. An error, or a re-check
// that does not end in time, ends the watch. It returns false when the
// watch ended.
//
// At *, the events must describe the cluster as of the watcher's position, the
// last change it processed, while the store has moved on: changes already
// pushed wait in incoming. So the objects of the clusters that changed are
// read under the store lock together with how many changes are queued then
// (pushes hold the lock; only this goroutine takes from incoming): exactly
// those happened before the snapshot. The watcher processes them first,
// with the old answers, which brings its position to the snapshot's; then
// it sends the events for the snapshot's objects and takes the new answers,
// which hold for every change pushed after it. Each synthetic event
// carries the snapshot's resource version, as kube-apiserver's watch cache
// gives an object leaving a filter the resource version of the event: the
// client's resource version never goes back, and a watch resumed from it
// replays nothing the snapshot already covers.
func (w *watcher) recheckVisibility() bool {
	ctx, cancel := context.WithTimeout(w.visibility.ctx, w.recheckTimeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	if w.cluster != "" {
		visible, err := askWithin(ctx, w.visibility.ask, w.cluster, watchVisibilityMaxAge)
		switch {
		case err != nil:
			logger.V(2).Info("Ending a watch: kcp did not tell in time whether its user may still see its cluster", "cluster", w.cluster, "err", err)
			return false
		case !visible:
			logger.V(2).Info("Ending a watch: its user may no longer see its cluster", "cluster", w.cluster)
			return false
		}
		return true
	}

	type recheck struct {
		slotCluster
		visible bool
	}
	var changed []recheck
	for _, c := range w.store.clustersOfSlots(w.visibility.knownSlots()) {
		if w.stopped() {
			return false
		}
		visible, err := askWithin(ctx, w.visibility.ask, c.cluster, watchVisibilityMaxAge)
		if err != nil {
			logger.V(2).Info("Ending a watch at *: kcp did not tell in time whether its user may still see a cluster", "cluster", c.cluster, "err", err)
			return false
		}
		if kept, _ := w.visibility.answer(c.slot); visible != kept {
			changed = append(changed, recheck{slotCluster: c, visible: visible})
		}
	}
	if ctx.Err() != nil {
		return false // the request is over, or the re-check took too long
	}
	if len(changed) == 0 {
		return true
	}

	sort.Slice(changed, func(i, j int) bool { return changed[i].cluster < changed[j].cluster })
	clusters := make([]logicalcluster.Name, 0, len(changed))
	for _, c := range changed {
		clusters = append(clusters, c.cluster)
	}
	snapshot := w.store.snapshotClusters(w, clusters)
	for range snapshot.queued {
		c, _ := w.incoming.pop() // only this goroutine takes from the queue: they are there
		event, ok := w.translate(c)
		w.position.Add(1)
		if ok && !w.send(event) {
			return false
		}
	}
	w.resourceVersion = snapshot.resourceVersion

	for _, c := range changed {
		entries := snapshot.entries[c.cluster]
		if len(entries) == 0 || entries[0].slot != c.slot {
			// Emptied meanwhile: its answer went with its last object (and
			// its objects since, under another slot, got an answer of now).
			continue
		}
		if _, known := w.visibility.answer(c.slot); !known {
			continue
		}
		w.visibility.set(c.slot, c.visible)
		eventType := watch.Deleted
		if c.visible {
			eventType = watch.Added
		}
		for _, e := range entries {
			if !w.matches(e) {
				continue
			}
			if !w.send(watch.Event{Type: eventType, Object: w.object(e, snapshot.resourceVersion)}) {
				return false
			}
		}
	}
	return true
}

// stopped tells whether the watch has ended.
func (w *watcher) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// bookmark carries the resource version of the last change this watcher
// processed (or of its snapshot), never one of a change still queued.
func (w *watcher) bookmark(initialEventsEnd bool) watch.Event {
	wsm := &wsmv1alpha1.WorkspaceMount{
		TypeMeta:   metav1.TypeMeta{APIVersion: wsmv1alpha1.SchemeGroupVersion.String(), Kind: wsmv1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: w.resourceVersion},
	}
	if initialEventsEnd {
		wsm.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watch.Event{Type: watch.Bookmark, Object: wsm}
}

func (w *watcher) send(event watch.Event) bool {
	select {
	case w.result <- event:
		return true
	case <-w.done:
		return false
	}
}
