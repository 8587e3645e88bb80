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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

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

// watcher is one watch request: it sends the initial objects, then the
// changes that match its filter, as ADDED, MODIFIED or DELETED as seen
// through the filter (an object leaving the filter is DELETED for it).
type watcher struct {
	store  *Store
	filter func(*wsmv1alpha1.WorkspaceMount) bool
	// first are the changes to send before the live ones: the whole store
	// as additions, or the history since the requested resource version.
	first []change
	// initialEventsEnd asks for a bookmark marking the end of the initial events.
	initialEventsEnd bool
	bookmarks        bool
	resourceVersion  string

	incoming chan change
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func newWatcher(store *Store, filter func(*wsmv1alpha1.WorkspaceMount) bool, initialEventsEnd, bookmarks bool) func([]change, string) *watcher {
	return func(first []change, resourceVersion string) *watcher {
		return &watcher{
			store: store, filter: filter, first: first,
			initialEventsEnd: initialEventsEnd, bookmarks: bookmarks, resourceVersion: resourceVersion,
			incoming: make(chan change, watcherBuffer),
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
	select {
	case w.incoming <- c:
	default:
		// Too slow: end the watch. The store lock is held, so unregister later.
		go w.Stop()
	}
}

// run sends the events until the watch stops; it closes the result channel.
func (w *watcher) run() {
	defer close(w.result)
	registeredAt := w.resourceVersion // the store's, when the watcher was registered
	for _, c := range w.first {
		if event, ok := w.translate(c); ok && !w.send(event) {
			return
		}
	}
	w.first, w.resourceVersion = nil, registeredAt
	if w.initialEventsEnd && !w.send(w.bookmark(true)) {
		return
	}

	var ticks <-chan time.Time
	if w.bookmarks {
		ticker := time.NewTicker(bookmarkInterval)
		defer ticker.Stop()
		ticks = ticker.C
	}
	for {
		select {
		case <-w.done:
			return
		case c := <-w.incoming:
			if event, ok := w.translate(c); ok && !w.send(event) {
				return
			}
		case <-ticks:
			if !w.send(w.bookmark(false)) {
				return
			}
		}
	}
}

// translate turns a store change into the event this watcher sees.
func (w *watcher) translate(c change) (watch.Event, bool) {
	wasIn := c.old != nil && w.filter(c.old)
	isIn := c.new != nil && w.filter(c.new)
	if c.new != nil {
		w.resourceVersion = c.new.ResourceVersion
	}
	switch {
	case isIn && wasIn:
		return watch.Event{Type: watch.Modified, Object: shallowCopy(c.new)}, true
	case isIn:
		return watch.Event{Type: watch.Added, Object: shallowCopy(c.new)}, true
	case wasIn:
		return watch.Event{Type: watch.Deleted, Object: shallowCopy(c.old)}, true
	default:
		return watch.Event{}, false
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

// shallowCopy gives the API server an object of its own to set the kind on
// while encoding; the maps and slices inside are shared and never written.
func shallowCopy(wsm *wsmv1alpha1.WorkspaceMount) *wsmv1alpha1.WorkspaceMount {
	copied := *wsm
	return &copied
}
