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

// bookmarkInterval is how often a watcher that asked for bookmarks gets one.
const bookmarkInterval = 30 * time.Second

// watchOptions is what a watch request asks of its watcher.
type watchOptions struct {
	matches     func(*entry) bool // the target cluster and the selectors
	jsonEncoder runtime.Identifier
	plainEvents string
	// cluster is the watch's one cluster, empty at *.
	cluster         logicalcluster.Name
	visibility      *clusterVisibility
	visibilityTicks func() (ticks <-chan time.Time, stop func())
	recheckTimeout  time.Duration
	// initialEventsEnd asks for a bookmark at the end of the initial events.
	initialEventsEnd bool
	bookmarks        bool
	// resumed: from a resource version, its client has the objects already.
	resumed bool
}

// watcher is one watch: the initial objects, then the changes as its filter
// sees them, following its user's access; only its goroutine touches its
// answers. See docs/design/registry-watch-visibility.md.
type watcher struct {
	store *Store
	watchOptions
	first watchStart
	// resourceVersion is that of the last change or re-check processed.
	resourceVersion string

	// processed counts the store's changes the watcher has processed.
	processed atomic.Uint64

	incoming changeQueue
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func newWatcher(store *Store, options watchOptions) func(watchStart, string) *watcher {
	return func(first watchStart, resourceVersion string) *watcher {
		return &watcher{
			store: store, watchOptions: options, first: first, resourceVersion: resourceVersion,
			incoming: newChangeQueue(),
			result:   make(chan watch.Event),
			done:     make(chan struct{}),
		}
	}
}

func (w *watcher) ResultChan() <-chan watch.Event {
	return w.result
}

func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.store.unregister(w)
	})
}

// push runs under the store lock: a watcher too slow stops later.
func (w *watcher) push(c change) {
	if !w.incoming.push(c) {
		go w.Stop()
	}
}

// run sends the events until the watch stops; it closes the result channel.
func (w *watcher) run() {
	defer close(w.result)
	rechecks, stop := w.visibilityTicks() // due while the first events are sent
	defer stop()
	registeredAt := w.resourceVersion // the store's, when the watcher was registered
	for _, entries := range w.first.clusters {
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
		// Answers of now, so that a cluster going out of sight is DELETED.
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
			w.processed.Add(1)
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

// failed tells whether asking kcp about a cluster failed, which ends the watch.
func (w *watcher) failed() bool {
	if w.visibility.err == nil {
		return false
	}
	klog.FromContext(w.visibility.ctx).V(2).Info("Ending a watch: kcp did not tell whether its user may see a cluster", "err", w.visibility.err)
	return true
}

// translate turns a store change into the event the watcher sees.
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
		return watch.Event{Type: watch.Modified, Object: w.changed(c, false)}, true
	case isIn:
		return watch.Event{Type: watch.Added, Object: w.changed(c, false)}, true
	case wasIn:
		return watch.Event{Type: watch.Deleted, Object: w.changed(c, true)}, true
	default:
		return watch.Event{}, false
	}
}

// changed is the object of c's event, its new one or old, sharing the
// change's encodings with the other watchers.
func (w *watcher) changed(c change, old bool) *eventObject {
	if old {
		o := w.object(c.old, c.version)
		if c.encoded != nil {
			o.shared = &c.encoded.old
		}
		return o
	}
	o := w.object(c.new, c.version)
	if c.encoded != nil {
		o.shared = &c.encoded.new
	}
	return o
}

// object is an event's object at version, the store's; empty keeps its own.
func (w *watcher) object(e *entry, version string) *eventObject {
	return &eventObject{entry: e, resourceVersion: version, jsonEncoder: w.jsonEncoder, plainEvents: w.plainEvents}
}

// shows tells whether the client sees e, visibility asked before selectors.
func (w *watcher) shows(e *entry) bool {
	if w.cluster != "" {
		return w.matches(e)
	}
	return w.visibility.visible(e.cluster, e.slot) && w.matches(e)
}

// recheckVisibility asks again about the watch's clusters, sending DELETED
// or ADDED where an answer changed at *; false ends the watch. See
// docs/design/registry-watch-visibility.md.
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
	for _, c := range w.store.clustersOfSlots(w.visibility.known.ones()) {
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
		c, _ := w.incoming.pop() // only this goroutine takes from the queue
		event, ok := w.translate(c)
		w.processed.Add(1)
		if ok && !w.send(event) {
			return false
		}
	}
	w.resourceVersion = snapshot.resourceVersion

	for _, c := range changed {
		entries := snapshot.entries[c.cluster]
		if len(entries) == 0 || entries[0].slot != c.slot {
			continue // emptied meanwhile: its answer went with its last object
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

func (w *watcher) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// bookmark carries the version of the last change processed, none queued.
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
