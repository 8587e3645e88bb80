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
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// event is what a test expects of a watch event: its type, and for other
// than bookmarks the object as cluster/name.
type event struct {
	typ    watch.EventType
	object string
}

func (e event) String() string { return string(e.typ) + " " + e.object }

func describe(e watch.Event) event {
	wsm, ok := asObject(e.Object)
	if !ok {
		return event{typ: e.Type, object: fmt.Sprintf("%T", e.Object)}
	}
	if e.Type == watch.Bookmark {
		return event{typ: e.Type}
	}
	return event{typ: e.Type, object: logicalcluster.From(wsm).String() + "/" + wsm.Name}
}

// next returns the next event of a watch, failing after a few seconds.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		require.True(t, ok, "the watch ended")
		return e
	case <-time.After(eventually):
		t.Fatal("no watch event in time")
		return watch.Event{}
	}
}

// expect reads len(want) events and compares them.
func expect(t *testing.T, w watch.Interface, want ...event) []watch.Event {
	t.Helper()
	got := make([]watch.Event, 0, len(want))
	for range want {
		got = append(got, next(t, w))
	}
	described := make([]event, 0, len(got))
	for _, e := range got {
		described = append(described, describe(e))
	}
	require.Equal(t, append([]event{}, want...), described)
	return got
}

// expectQuiet checks that no event is waiting, once the store has handled
// everything sent so far.
func expectQuiet(t *testing.T, h *harness, w watch.Interface) {
	t.Helper()
	h.flush()
	select {
	case e, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s", describe(e))
		}
		t.Fatal("the watch ended")
	case <-time.After(quiet):
	}
}

func startWatch(t *testing.T, r *REST, target string, options *metainternalversion.ListOptions) watch.Interface {
	t.Helper()
	ctx, cancel := context.WithCancel(requestContext(target))
	t.Cleanup(cancel)
	w, err := r.Watch(ctx, options)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

func ptrTo[T any](v T) *T { return &v }

func TestWatchInitialEvents(t *testing.T) {
	t.Parallel()

	initial := []event{{watch.Added, "c1/a"}, {watch.Added, "c1/b"}}
	for _, tc := range []struct {
		name    string
		options func(rv string) *metainternalversion.ListOptions
		want    []event
	}{
		{
			name:    "no resource version",
			options: func(string) *metainternalversion.ListOptions { return &metainternalversion.ListOptions{} },
			want:    initial,
		},
		{
			name: "resource version 0",
			options: func(string) *metainternalversion.ListOptions {
				return &metainternalversion.ListOptions{ResourceVersion: "0"}
			},
			want: initial,
		},
		{
			name: "sendInitialEvents",
			options: func(string) *metainternalversion.ListOptions {
				return &metainternalversion.ListOptions{
					SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true,
					ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				}
			},
			want: append(append([]event{}, initial...), event{typ: watch.Bookmark}),
		},
		{
			// What the handler makes of a watch from no resource version:
			// no bookmark ends the initial events without bookmarks allowed.
			name: "sendInitialEvents without bookmarks",
			options: func(string) *metainternalversion.ListOptions {
				return &metainternalversion.ListOptions{
					SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				}
			},
			want: initial,
		},
		{
			name: "the current resource version",
			options: func(rv string) *metainternalversion.ListOptions {
				return &metainternalversion.ListOptions{ResourceVersion: rv}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t,
				mounted("c1", "b", mount.PhaseReady, nil),
				mounted("c2", "other", mount.PhaseReady, nil),
				mounted("c1", "a", mount.PhaseReady, nil),
				workspace("c1", "plain"),
			)
			rv := h.flush()
			r := NewREST(h.store, allVisible)

			w := startWatch(t, r, "c1", tc.options(rv))
			got := expect(t, w, tc.want...)
			for _, e := range got {
				wsm := objectOf(t, e.Object)
				require.Equal(t, wsmv1alpha1.Kind, wsm.Kind)
				if e.Type != watch.Bookmark {
					continue
				}
				require.Equal(t, map[string]string{metav1.InitialEventsAnnotationKey: "true"}, wsm.Annotations)
				require.Equal(t, rv, wsm.ResourceVersion, "the bookmark carries the resource version of the snapshot")
				require.Empty(t, wsm.Name)
			}

			// Then the changes, and only them.
			h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
			expect(t, w, event{watch.Modified, "c1/a"})
			expectQuiet(t, h, w)
		})
	}
}

func TestWatchChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), workspace("c1", "plain"))
	r := NewREST(h.store, allVisible)
	w := startWatch(t, r, "c1", &metainternalversion.ListOptions{ResourceVersion: h.flush()})

	// A new mounted Workspace.
	b := h.add(mounted("c1", "b", mount.PhaseInitializing, nil))
	e := expect(t, w, event{watch.Added, "c1/b"})[0]
	require.Equal(t, "Initializing", objectOf(t, e.Object).Status.Phase)
	require.Equal(t, b.ResourceVersion, objectOf(t, e.Object).ResourceVersion)

	// Its status changes.
	b = h.update(mounted("c1", "b", mount.PhaseReady, nil))
	e = expect(t, w, event{watch.Modified, "c1/b"})[0]
	require.Equal(t, "Ready", objectOf(t, e.Object).Status.Phase)
	require.True(t, objectOf(t, e.Object).Status.Ready)
	require.Equal(t, b.ResourceVersion, objectOf(t, e.Object).ResourceVersion)

	// Only the Workspace's resource version changes (another annotation, its
	// conditions, ...): nothing to tell.
	touched := b.DeepCopy()
	touched.Annotations["unrelated.io/touch"] = "1"
	h.update(touched)
	expectQuiet(t, h, w)
	// ... but the store has the new resource version for gets.
	got, err := r.Get(requestContext("c1"), "b", &metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEqual(t, b.ResourceVersion, objectOf(t, got).ResourceVersion)

	// A label change is a change.
	labeled := touched.DeepCopy()
	labeled.Labels = map[string]string{"team": "x"}
	h.update(labeled)
	expect(t, w, event{watch.Modified, "c1/b"})

	// An unmounted Workspace that changes: nothing. Mounting it: ADDED.
	plain := workspace("c1", "plain")
	plain.Labels = map[string]string{"x": "y"}
	h.update(plain)
	expectQuiet(t, h, w)
	h.update(mounted("c1", "plain", mount.PhaseReady, nil))
	expect(t, w, event{watch.Added, "c1/plain"})

	// Unmounting (spec.mount removed): DELETED, with the last state.
	h.update(workspace("c1", "plain"))
	e = expect(t, w, event{watch.Deleted, "c1/plain"})[0]
	require.Equal(t, "Ready", objectOf(t, e.Object).Status.Phase)

	// The legacy annotation alone, with what the controller wrote when it
	// honoured it: not mounted by the store's rule (no
	// --legacy-mount-annotation), so nothing (FromWorkspace's table has
	// both rules).
	legacy := mounted("c1", "legacy", mount.PhaseNotFound, nil)
	legacy.Spec.Mount = nil
	legacy.Annotations[mount.LegacyAnnotationKey] = `{"spec":{"ref":{"apiVersion":"v1","kind":"K","name":"n"}}}`
	h.add(legacy)
	expectQuiet(t, h, w)

	// Deleting a mounted Workspace: DELETED.
	h.delete(b)
	expect(t, w, event{watch.Deleted, "c1/b"})

	// Changes in other clusters are not seen.
	h.add(mounted("c2", "a", mount.PhaseReady, nil))
	h.update(mounted("c2", "a", mount.PhaseConnecting, nil))
	expectQuiet(t, h, w)
}

func TestWatchSelectors(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		options *metainternalversion.ListOptions
		// in and out are the states of c1/a inside and outside the selector.
		in, out func() *tenancyv1alpha1.Workspace
	}{
		{
			name:    "label selector",
			options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "x"})},
			in: func() *tenancyv1alpha1.Workspace {
				return mounted("c1", "a", mount.PhaseReady, map[string]string{"team": "x"})
			},
			out: func() *tenancyv1alpha1.Workspace {
				return mounted("c1", "a", mount.PhaseReady, map[string]string{"team": "y"})
			},
		},
		{
			name:    "status.phase",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", "Ready")},
			in:      func() *tenancyv1alpha1.Workspace { return mounted("c1", "a", mount.PhaseReady, nil) },
			out:     func() *tenancyv1alpha1.Workspace { return mounted("c1", "a", mount.PhaseConnecting, nil) },
		},
		{
			name:    "status.ready",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.ready", "false")},
			in:      func() *tenancyv1alpha1.Workspace { return mounted("c1", "a", mount.PhaseNotFound, nil) },
			out:     func() *tenancyv1alpha1.Workspace { return mounted("c1", "a", mount.PhaseReady, nil) },
		},
		{
			name:    "metadata.name",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "a")},
			in:      func() *tenancyv1alpha1.Workspace { return mounted("c1", "a", mount.PhaseReady, nil) },
			out:     func() *tenancyv1alpha1.Workspace { return workspace("c1", "a") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.in())
			r := NewREST(h.store, allVisible)
			options := *tc.options
			w := startWatch(t, r, "c1", &options)
			expect(t, w, event{watch.Added, "c1/a"})

			// Changing inside the selector: MODIFIED.
			changed := tc.in()
			changed.Annotations[mount.StatusAnnotationKey] = changeMessage(t, changed.Annotations[mount.StatusAnnotationKey], "changed")
			h.update(changed)
			expect(t, w, event{watch.Modified, "c1/a"})

			// Leaving it: DELETED, with the object as it was last seen inside.
			h.update(tc.out())
			e := expect(t, w, event{watch.Deleted, "c1/a"})[0]
			require.Equal(t, "changed", objectOf(t, e.Object).Status.Message)

			// Changing outside: nothing.
			outside := tc.out()
			outside.Annotations["unrelated.io/x"] = "1"
			outside.Labels = mergeLabels(outside.Labels, map[string]string{"other": "1"})
			h.update(outside)
			expectQuiet(t, h, w)

			// Entering: ADDED.
			h.update(tc.in())
			expect(t, w, event{watch.Added, "c1/a"})

			// Other objects outside the selector are not seen at all.
			other := tc.out()
			other.Name = "b"
			h.add(other)
			expectQuiet(t, h, w)
		})
	}
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func changeMessage(t *testing.T, annotation, message string) string {
	t.Helper()
	s, err := mount.ParseStatus(annotation)
	require.NoError(t, err)
	s.Message = message
	return s.Encode()
}

func TestWatchStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible)

	t.Run("Stop", func(t *testing.T) {
		t.Parallel()
		w, err := r.Watch(requestContext("c1"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		// Stop while the initial event waits to be read.
		w.Stop()
		w.Stop() // twice is fine
		requireClosed(t, w, 1)
		require.Eventually(t, func() bool { return !isRegistered(h.store, w) }, eventually, tick)
	})
	t.Run("context done", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(requestContext("c1"))
		w, err := r.Watch(ctx, &metainternalversion.ListOptions{})
		require.NoError(t, err)
		expect(t, w, event{watch.Added, "c1/a"})
		cancel()
		requireClosed(t, w, 0)
		require.Eventually(t, func() bool { return !isRegistered(h.store, w) }, eventually, tick)
	})
}

func isRegistered(s *Store, w watch.Interface) bool {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	_, found := s.watchers[w.(*watcher)]
	return found
}

// requireClosed reads a watch until its result channel closes, at most
// maxEvents events more, within a few seconds.
func requireClosed(t *testing.T, w watch.Interface, maxEvents int) {
	t.Helper()
	deadline := time.After(eventually)
	for n := 0; ; n++ {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
			require.LessOrEqual(t, n+1, maxEvents, "more events than expected after the stop")
		case <-deadline:
			t.Fatal("the result channel was not closed")
		}
	}
}

// TestWatchSlowWatcher: a watcher that does not read is closed once its
// buffer overflows; the store and the other watchers go on.
func TestWatchSlowWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible)
	rv := h.flush()

	slow := startWatch(t, r, "c1", &metainternalversion.ListOptions{ResourceVersion: rv})
	fast := startWatch(t, r, "c1", &metainternalversion.ListOptions{ResourceVersion: rv})

	var lock sync.Mutex
	var received []string
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for e := range fast.ResultChan() {
			lock.Lock()
			wsm, _ := asObject(e.Object)
			received = append(received, wsm.Labels["n"])
			lock.Unlock()
		}
	}()
	receivedCount := func() int {
		lock.Lock()
		defer lock.Unlock()
		return len(received)
	}

	// Enough changes to overflow the slow watcher's buffer, sent in batches
	// the fast watcher is given time to read, so that only the slow one lags.
	const changes = watcherBuffer + 100
	const batch = 100
	for i := 0; i < changes; i += batch {
		for j := i; j < i+batch && j < changes; j++ {
			h.update(mounted("c1", "a", mount.PhaseReady, map[string]string{"n": strconv.Itoa(j)}))
		}
		h.flush() // the store is not blocked by the slow watcher
		want := min(i+batch, changes)
		require.Eventually(t, func() bool { return receivedCount() == want }, eventually, tick,
			"the fast watcher got %d of %d events", receivedCount(), want)
	}

	require.Eventually(t, func() bool { return !isRegistered(h.store, slow) }, eventually, tick, "the slow watcher was not dropped")
	require.True(t, isRegistered(h.store, fast))
	// The slow watcher's channel closes; at most what it had taken from its
	// buffer, and what is left in it, can still come out.
	requireClosed(t, slow, watcherBuffer+1)

	// The fast watcher got everything, in order, and goes on.
	lock.Lock()
	for i, n := range received {
		require.Equal(t, strconv.Itoa(i), n)
	}
	lock.Unlock()
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	require.Eventually(t, func() bool { return receivedCount() == changes+1 }, eventually, tick)
	fast.Stop()
	select {
	case <-readerDone:
	case <-time.After(eventually):
		t.Fatal("the fast watcher did not close")
	}
}

func TestWatchVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("visible", "a", mount.PhaseReady, nil),
		mounted("hidden", "a", mount.PhaseReady, nil),
		mounted("visible", "b", mount.PhaseReady, nil),
	)
	v := newVisibility(map[logicalcluster.Name]error{
		"visible": nil, "also-visible": nil,
		"hidden": errInvisible,
	})
	r := NewREST(h.store, v.visible)

	w := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "visible/a"}, event{watch.Added, "visible/b"})

	h.update(mounted("hidden", "a", mount.PhaseConnecting, nil))
	h.add(mounted("hidden", "new", mount.PhaseReady, nil))
	h.update(mounted("visible", "a", mount.PhaseConnecting, nil))
	expect(t, w, event{watch.Modified, "visible/a"})
	h.add(mounted("also-visible", "z", mount.PhaseReady, nil))
	expect(t, w, event{watch.Added, "also-visible/z"})
	h.delete(mounted("visible", "b", mount.PhaseReady, nil))
	expect(t, w, event{watch.Deleted, "visible/b"})
	h.delete(mounted("hidden", "a", mount.PhaseReady, nil))
	expectQuiet(t, h, w)

	// Until the watch re-checks, an answer is asked once per cluster.
	for cluster, n := range v.callCounts() {
		require.Equal(t, 1, n, "visibility of %s asked %d times", cluster, n)
	}
	require.Contains(t, v.callCounts(), logicalcluster.Name("also-visible"))
}

// TestWatchFromAResourceVersion: a client whose watch ended (a timeout, a
// dropped connection, the server closing a slow watcher, or a restart of the
// server) watches again from the last resource version it saw, as
// client-go's reflector does; and a client watches from the resource version
// of the list it just made. The changes since then must reach it: as
// events, or by a 410 Gone that makes it list again.
func TestWatchFromAResourceVersion(t *testing.T) {
	t.Parallel()

	watchFrom := func(t *testing.T, r *REST, rv string) (watch.Interface, error) {
		t.Helper()
		ctx, cancel := context.WithCancel(requestContext("c1"))
		t.Cleanup(cancel)
		w, err := r.Watch(ctx, &metainternalversion.ListOptions{ResourceVersion: rv})
		if err == nil {
			t.Cleanup(w.Stop)
		}
		return w, err
	}

	t.Run("the changes since a list are replayed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c1", "b", mount.PhaseReady, nil))
		h.flush()
		r := NewREST(h.store, allVisible)
		listed := list(t, r, "c1", nil)
		require.Equal(t, []string{"c1/a", "c1/b"}, names(listed))

		// While the client is not watching: a changes, c is added, then
		// changed, in c2 something happens.
		h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
		h.add(mounted("c1", "c", mount.PhaseInitializing, nil))
		h.add(mounted("c2", "x", mount.PhaseReady, nil))
		h.update(mounted("c1", "c", mount.PhaseReady, nil))
		h.flush()

		w, err := watchFrom(t, r, listed.ResourceVersion)
		require.NoError(t, err)
		got := expect(t, w, event{watch.Modified, "c1/a"}, event{watch.Added, "c1/c"}, event{watch.Modified, "c1/c"})
		require.Equal(t, "Ready", objectOf(t, got[2].Object).Status.Phase)
		expectQuiet(t, h, w)

		// Then the live changes.
		h.update(mounted("c1", "b", mount.PhaseNotFound, nil))
		expect(t, w, event{watch.Modified, "c1/b"})
	})

	t.Run("from the current resource version, nothing is replayed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
		h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
		h.flush()
		r := NewREST(h.store, allVisible)
		w, err := watchFrom(t, r, list(t, r, "c1", nil).ResourceVersion)
		require.NoError(t, err)
		expectQuiet(t, h, w)
	})

	t.Run("a deletion since a list is replayed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c1", "b", mount.PhaseReady, nil))
		h.flush()
		r := NewREST(h.store, allVisible)
		listed := list(t, r, "c1", nil)
		require.Equal(t, []string{"c1/a", "c1/b"}, names(listed))

		// b is deleted (its Workspace object), nothing else changes.
		h.delete(mounted("c1", "b", mount.PhaseReady, nil))
		h.flush()

		w, err := watchFrom(t, r, listed.ResourceVersion)
		if err != nil {
			require.True(t, apierrors.IsResourceExpired(err), "%v", err)
			return
		}
		select {
		case e := <-w.ResultChan():
			require.Equal(t, event{watch.Deleted, "c1/b"}, describe(e))
		case <-time.After(time.Second):
			t.Fatalf("a watch from the list's resource version %s did not get the deletion of c1/b made since: "+
				"the client keeps it forever", listed.ResourceVersion)
		}
	})

	t.Run("older than the kept history", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
		h.flush()
		r := NewREST(h.store, allVisible)
		early := list(t, r, "c1", nil).ResourceVersion
		for i := range historySize + 10 {
			h.update(mounted("c1", "a", mount.PhaseReady, map[string]string{"n": strconv.Itoa(i)}))
		}
		recent := h.flush()
		for i := range 3 {
			h.update(mounted("c1", "a", mount.PhaseReady, map[string]string{"m": strconv.Itoa(i)}))
		}
		h.flush()

		_, err := watchFrom(t, r, early)
		require.True(t, apierrors.IsResourceExpired(err), "a watch from before the history: %v", err)
		require.Equal(t, int32(http.StatusGone), err.(apierrors.APIStatus).Status().Code)

		w, err := watchFrom(t, r, recent)
		require.NoError(t, err)
		got := expect(t, w, event{watch.Modified, "c1/a"}, event{watch.Modified, "c1/a"}, event{watch.Modified, "c1/a"})
		for i, e := range got {
			require.Equal(t, strconv.Itoa(i), objectOf(t, e.Object).Labels["m"])
		}
		expectQuiet(t, h, w)
	})

	t.Run("older than the server", func(t *testing.T) {
		t.Parallel()
		// The server (re)started and listed a and b; the client had watched
		// an earlier instance up to resource version 50, and who knows what
		// was deleted since: it must list again.
		h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c1", "b", mount.PhaseReady, nil))
		h.flush()
		r := NewREST(h.store, allVisible)
		w, err := watchFrom(t, r, "50")
		if err == nil {
			e := next(t, w)
			t.Fatalf("a watch from resource version 50, older than the informer's first list, was answered with %s "+
				"instead of 410 Gone: what was deleted before the server started is never told", describe(e))
		}
		require.True(t, apierrors.IsResourceExpired(err), "%v", err)

		// A client that lists, then watches from the list, is not sent back to list.
		w, err = watchFrom(t, r, list(t, r, "c1", nil).ResourceVersion)
		require.NoError(t, err)
		expectQuiet(t, h, w)
	})

	t.Run("invalid resource version", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		r := NewREST(h.store, allVisible)
		for _, rv := range []string{"abc", "-1", "1.5"} {
			_, err := watchFrom(t, r, rv)
			require.True(t, apierrors.IsBadRequest(err), "%s: %v", rv, err)
		}
	})
}

func TestStopWatchesWhenDone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible)
	ctx, cancel := context.WithCancel(context.Background())
	h.store.StopWatchesWhenDone(ctx)

	first := startWatch(t, r, "c1", &metainternalversion.ListOptions{})
	second := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, first, event{watch.Added, "c1/a"})
	cancel()
	requireClosed(t, first, 0)
	requireClosed(t, second, 1)
	require.False(t, isRegistered(h.store, first))
	require.False(t, isRegistered(h.store, second))
}

// manualClock stands in for the clock of visibility re-checks: every watch
// at * gets a channel of its own, which the test ticks.
type manualClock struct {
	lock  sync.Mutex
	ticks []chan time.Time
}

// useManualClock makes the watches of r re-check visibility when the test says so.
func useManualClock(r *REST) *manualClock {
	c := &manualClock{}
	r.visibilityTicks = c.start
	return c
}

func (c *manualClock) start() (<-chan time.Time, func()) {
	c.lock.Lock()
	defer c.lock.Unlock()
	ticks := make(chan time.Time)
	c.ticks = append(c.ticks, ticks)
	return ticks, func() {}
}

// started is how many watches started their clock.
func (c *manualClock) started() int {
	c.lock.Lock()
	defer c.lock.Unlock()
	return len(c.ticks)
}

// tick makes the n-th watch (from 0, in the order they started their
// clocks) re-check, and returns once the watch has begun to: a watch takes
// its tick only once it is done with the one before.
func (c *manualClock) tick(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.started() > n }, eventually, tick, "watch %d has no clock", n)
	c.lock.Lock()
	ticks := c.ticks[n]
	c.lock.Unlock()
	select {
	case ticks <- time.Now():
	case <-time.After(eventually):
		t.Fatalf("watch %d did not take its tick", n)
	}
}

// TestWatchFollowsVisibility: a watch at * re-checks visibility and tells
// its client about the clusters that went out of sight (DELETED) or came
// into it (ADDED), and nothing else.
func TestWatchFollowsVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		mounted("c1", "b", mount.PhaseReady, nil),
		mounted("c2", "a", mount.PhaseReady, nil),
		mounted("c3", "a", mount.PhaseReady, nil),
		mounted("c4", "x", mount.PhaseReady, nil),
	)
	rv := h.flush()
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "c2": nil, "c3": errInvisible, "c4": nil})
	r := NewREST(h.store, v.visible)
	clock := useManualClock(r)

	w := startWatch(t, r, "*", &metainternalversion.ListOptions{
		SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	got := expect(t, w,
		event{watch.Added, "c1/a"}, event{watch.Added, "c1/b"}, event{watch.Added, "c2/a"}, event{watch.Added, "c4/x"},
		event{typ: watch.Bookmark})
	require.Equal(t, rv, objectOf(t, got[4].Object).ResourceVersion)

	// Nothing changed: a re-check asks once per cluster and sends nothing.
	v.reset()
	clock.tick(t, 0)
	clock.tick(t, 0) // the first one is done
	expectQuiet(t, h, w)
	require.Equal(t, map[logicalcluster.Name]int{"c1": 2, "c2": 2, "c3": 2, "c4": 2}, v.callCounts())

	// c1 is revoked: its objects are DELETED, at the store's resource
	// version (not older than anything the client saw).
	h.update(mounted("c4", "x", mount.PhaseConnecting, nil))
	expect(t, w, event{watch.Modified, "c4/x"})
	now := h.flush()
	v.set("c1", errInvisible)
	clock.tick(t, 0)
	got = expect(t, w, event{watch.Deleted, "c1/a"}, event{watch.Deleted, "c1/b"})
	for _, e := range got {
		require.Equal(t, now, objectOf(t, e.Object).ResourceVersion)
	}
	expectQuiet(t, h, w)

	// Changes in c1 are no longer seen; in other clusters they are.
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	h.add(mounted("c1", "new", mount.PhaseReady, nil))
	h.update(mounted("c4", "x", mount.PhaseReady, nil))
	expect(t, w, event{watch.Modified, "c4/x"})
	expectQuiet(t, h, w)

	// c2 is revoked too.
	v.set("c2", errInvisible)
	clock.tick(t, 0)
	expect(t, w, event{watch.Deleted, "c2/a"})
	expectQuiet(t, h, w)

	// c1 comes back, c3 comes into sight: ADDED, with their current objects, once.
	v.set("c1", nil)
	v.set("c3", nil)
	clock.tick(t, 0)
	got = expect(t, w, event{watch.Added, "c1/a"}, event{watch.Added, "c1/b"}, event{watch.Added, "c1/new"}, event{watch.Added, "c3/a"})
	require.Equal(t, "Connecting", objectOf(t, got[0].Object).Status.Phase)
	clock.tick(t, 0)
	expectQuiet(t, h, w)

	// And their changes are seen again.
	h.update(mounted("c3", "a", mount.PhaseConnecting, nil))
	expect(t, w, event{watch.Modified, "c3/a"})
	h.delete(mounted("c1", "b", mount.PhaseReady, nil))
	expect(t, w, event{watch.Deleted, "c1/b"})
	expectQuiet(t, h, w)
}

// TestWatchVisibilityRecheckOrdering: changes queued while a watch
// re-checks visibility are told as they were seen before the new answer,
// and the new answer holds for what comes after: no object is left behind
// at the client, none is sent twice.
func TestWatchVisibilityRecheckOrdering(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		mounted("c1", "b", mount.PhaseReady, nil),
		mounted("c2", "a", mount.PhaseReady, nil),
		mounted("c3", "a", mount.PhaseReady, nil),
	)
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "c2": nil, "c3": errInvisible})
	// The test holds the watch inside its re-check, asking about gated.
	var lock sync.Mutex
	var gated logicalcluster.Name
	asking, release := make(chan struct{}), make(chan struct{})
	visible := func(ctx context.Context, cluster logicalcluster.Name, maxAge time.Duration) (bool, error) {
		lock.Lock()
		hold := cluster == gated
		lock.Unlock()
		if hold {
			asking <- struct{}{}
			<-release
		}
		return v.visible(ctx, cluster, maxAge)
	}
	gate := func(cluster logicalcluster.Name) {
		lock.Lock()
		defer lock.Unlock()
		gated = cluster
	}
	r := NewREST(h.store, visible)
	clock := useManualClock(r)
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "c1/a"}, event{watch.Added, "c1/b"}, event{watch.Added, "c2/a"})

	// c1 is revoked while a, b and c of it change.
	gate("c1")
	v.set("c1", errInvisible)
	clock.tick(t, 0)
	<-asking
	gate("")
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	h.delete(mounted("c1", "b", mount.PhaseReady, nil))
	h.add(mounted("c1", "c", mount.PhaseReady, nil))
	h.update(mounted("c2", "a", mount.PhaseConnecting, nil))
	rv := h.flush()
	release <- struct{}{}
	got := expect(t, w,
		event{watch.Modified, "c1/a"}, event{watch.Deleted, "c1/b"}, event{watch.Added, "c1/c"}, event{watch.Modified, "c2/a"},
		event{watch.Deleted, "c1/a"}, event{watch.Deleted, "c1/c"})
	require.Equal(t, "Connecting", objectOf(t, got[4].Object).Status.Phase, "the last state the client has")
	require.Equal(t, rv, objectOf(t, got[4].Object).ResourceVersion)
	expectQuiet(t, h, w)

	// c3 is granted while it changes: ADDED once for each of its objects.
	gate("c3")
	v.set("c3", nil)
	clock.tick(t, 0)
	<-asking
	gate("")
	h.add(mounted("c3", "b", mount.PhaseReady, nil))
	h.update(mounted("c3", "a", mount.PhaseConnecting, nil))
	h.flush()
	release <- struct{}{}
	got = expect(t, w, event{watch.Added, "c3/a"}, event{watch.Added, "c3/b"})
	require.Equal(t, "Connecting", objectOf(t, got[0].Object).Status.Phase)
	expectQuiet(t, h, w)

	// After the re-check, the new answers hold.
	h.update(mounted("c3", "b", mount.PhaseConnecting, nil))
	h.update(mounted("c1", "c", mount.PhaseConnecting, nil))
	expect(t, w, event{watch.Modified, "c3/b"})
	expectQuiet(t, h, w)
}

// TestWatchFromAResourceVersionFollowsVisibility: a watch at * from a
// list's resource version knows the clusters the list showed, and tells of
// their going out of sight, though none of their objects changed since.
func TestWatchFromAResourceVersionFollowsVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, map[string]string{"team": "x"}),
		mounted("c1", "b", mount.PhaseReady, map[string]string{"team": "y"}),
		mounted("c2", "a", mount.PhaseReady, map[string]string{"team": "x"}),
		mounted("c3", "a", mount.PhaseReady, map[string]string{"team": "x"}),
	)
	h.flush()
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "c2": nil, "c3": errInvisible})
	r := NewREST(h.store, v.visible)
	clock := useManualClock(r)
	team := labels.SelectorFromSet(labels.Set{"team": "x"})

	listed := list(t, r, "*", &metainternalversion.ListOptions{LabelSelector: team})
	require.Equal(t, []string{"c1/a", "c2/a"}, names(listed))
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{LabelSelector: team, ResourceVersion: listed.ResourceVersion})
	// Once the watch has its answers, the answers change.
	want := map[logicalcluster.Name]int{"c1": 2, "c2": 2, "c3": 2}
	require.Eventually(t, func() bool { return reflect.DeepEqual(want, v.callCounts()) }, eventually, tick, "asked by the list, then by the watch")
	v.set("c1", errInvisible)
	v.set("c3", nil)
	clock.tick(t, 0)
	expect(t, w, event{watch.Deleted, "c1/a"}, event{watch.Added, "c3/a"})
	expectQuiet(t, h, w)
}

// TestWatchVisibilityForgetsEmptyClusters: a re-check asks only about
// clusters with objects, and forgets the answers for the others: a cluster
// that has objects again gets a fresh answer.
func TestWatchVisibilityForgetsEmptyClusters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c2", "a", mount.PhaseReady, nil))
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "c2": nil})
	r := NewREST(h.store, v.visible)
	clock := useManualClock(r)
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "c1/a"}, event{watch.Added, "c2/a"})

	h.delete(mounted("c2", "a", mount.PhaseReady, nil))
	expect(t, w, event{watch.Deleted, "c2/a"})
	v.reset()
	clock.tick(t, 0)
	clock.tick(t, 0)
	expectQuiet(t, h, w)
	require.Equal(t, map[logicalcluster.Name]int{"c1": 2}, v.callCounts(), "c2 has no objects: not asked")

	// c2 is revoked, then has an object again: asked, and not shown.
	v.set("c2", errInvisible)
	h.add(mounted("c2", "b", mount.PhaseReady, nil))
	expectQuiet(t, h, w)
	require.Equal(t, 1, v.callCounts()["c2"])
}

// TestWatchOneClusterFollowsAccess: a watch of one cluster, or of a path,
// asks again about its cluster at every re-check, whether or not the
// cluster has objects, with watchVisibilityMaxAge, and ends once the
// cluster is no longer visible.
func TestWatchOneClusterFollowsAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	v := newVisibility(map[logicalcluster.Name]error{"c1": nil, "empty": nil})
	r := NewREST(h.store, v.visible)
	clock := useManualClock(r)
	w := startWatch(t, r, "c1", &metainternalversion.ListOptions{})
	expect(t, w, event{watch.Added, "c1/a"})
	expectQuiet(t, h, w)
	require.Empty(t, v.callCounts(), "the authorizer let the request in: no question before the first re-check")

	clock.tick(t, 0)
	clock.tick(t, 0)
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	expect(t, w, event{watch.Modified, "c1/a"})
	require.Equal(t, map[logicalcluster.Name]int{"c1": 2}, v.callCounts())
	require.Equal(t, []time.Duration{watchVisibilityMaxAge, watchVisibilityMaxAge}, v.maxAges())
	require.Equal(t, 60*time.Second, watchAccessBound, "docs/virtual-workspace.md's bound")

	empty := startWatch(t, r, "empty", &metainternalversion.ListOptions{})
	expectQuiet(t, h, empty)
	clock.tick(t, 1)
	clock.tick(t, 1)
	require.Eventually(t, func() bool { return v.callCounts()["empty"] == 2 }, eventually, tick, "a cluster without objects is asked about too")

	// A path is its cluster's: root:org:ws leads to c1.
	pathCtx, cancel := context.WithCancel(genericapirequest.WithUser(clusterpath.WithTarget(context.Background(),
		clusterpath.Target{Path: logicalcluster.NewPath("root:org:ws"), Cluster: "c1"}), &user.DefaultInfo{Name: "alice"}))
	t.Cleanup(cancel)
	path, err := r.Watch(pathCtx, &metainternalversion.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(path.Stop)
	expect(t, path, event{watch.Added, "c1/a"})

	v.set("c1", errInvisible)
	v.set("empty", errInvisible)
	clock.tick(t, 0)
	requireClosed(t, w, 0)
	clock.tick(t, 1)
	requireClosed(t, empty, 0)
	clock.tick(t, 2)
	requireClosed(t, path, 0)
	require.Equal(t, 4, v.callCounts()["c1"], "two re-checks of the cluster's watch, one of the path's, one of each after the revocation")
}

// TestWatchEndsWhenKcpDoesNotAnswer: a watch takes no answer it could not
// get for an answer: an error, or a re-check that is not over within
// recheckTimeout, ends it, at one cluster and at * (the client lists
// again); so does an error about a cluster a watch at * comes upon.
func TestWatchEndsWhenKcpDoesNotAnswer(t *testing.T) {
	t.Parallel()
	errDown := errors.New("kcp is down")
	for _, tc := range []struct {
		name   string
		target string
		// hang: no answer rather than an error; comeUpon: about a cluster
		// the watch comes upon (c2), not at a re-check (c1).
		hang, comeUpon bool
	}{
		{name: "one cluster, an error", target: "c1"},
		{name: "one cluster, no answer in time", target: "c1", hang: true},
		{name: "all, an error", target: "*"},
		{name: "all, no answer in time", target: "*", hang: true},
		{name: "all, an error about a cluster come upon", target: "*", comeUpon: true},
		{name: "all, no answer in time about a cluster come upon", target: "*", hang: true, comeUpon: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
			v := newVisibility(map[logicalcluster.Name]error{"c1": nil})
			t.Cleanup(v.release)
			r := NewREST(h.store, v.visible)
			r.recheckTimeout = 200 * time.Millisecond
			clock := useManualClock(r)
			w := startWatch(t, r, tc.target, &metainternalversion.ListOptions{})
			expect(t, w, event{watch.Added, "c1/a"})
			failing := logicalcluster.Name("c1")
			if tc.comeUpon {
				failing = "c2"
			}
			if tc.hang {
				v.hang(failing)
			} else {
				v.set(failing, errDown)
			}
			if tc.comeUpon {
				h.add(mounted("c2", "a", mount.PhaseReady, nil))
			} else {
				clock.tick(t, 0)
			}
			requireClosed(t, w, 0)
		})
	}
}

// TestWatchTimeout: a watch lasts what its request asked when that is at
// most maxWatchTimeout, else a random time between half of it and it.
func TestWatchTimeout(t *testing.T) {
	t.Parallel()
	const maxTimeout = 30 * time.Minute
	require.Equal(t, 10*time.Minute, watchTimeout(10*time.Minute, maxTimeout))
	require.Equal(t, maxTimeout, watchTimeout(maxTimeout, maxTimeout))
	seen := map[bool]bool{} // below and above three quarters of the bound
	for _, requested := range []time.Duration{0, maxTimeout + time.Second, 365 * 24 * time.Hour} {
		for range 100 {
			got := watchTimeout(requested, maxTimeout)
			require.GreaterOrEqual(t, got, maxTimeout/2)
			require.Less(t, got, maxTimeout)
			seen[got < maxTimeout*3/4] = true
		}
	}
	require.Len(t, seen, 2, "the timeouts are spread")

	// A watch asking for a year ends within the bound.
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible).WithMaxWatchTimeout(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(requestContext("c1"), 365*24*time.Hour)
	t.Cleanup(cancel)
	began := time.Now()
	w, err := r.Watch(ctx, &metainternalversion.ListOptions{})
	require.NoError(t, err)
	expect(t, w, event{watch.Added, "c1/a"})
	requireClosed(t, w, 0)
	require.Less(t, time.Since(began), 200*time.Millisecond+eventually/2)
	require.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond)
}

// TestChangeQueue: a watcher's queue gives the changes back in order, takes
// no more than watcherBuffer waiting, signals while some wait, and lets the
// memory of a burst go once it is drained.
func TestChangeQueue(t *testing.T) {
	t.Parallel()
	q := newChangeQueue()
	_, ok := q.pop()
	require.False(t, ok, "an empty queue gives nothing")
	for i := range watcherBuffer {
		require.True(t, q.push(change{version: strconv.Itoa(i)}), "change %d", i)
	}
	require.False(t, q.push(change{version: "over"}), "the queue holds watcherBuffer changes at most")
	require.Equal(t, watcherBuffer, q.len())
	for i := range watcherBuffer {
		select {
		case <-q.ready:
		default:
			t.Fatalf("no signal while %d changes wait", q.len())
		}
		c, ok := q.pop()
		require.True(t, ok)
		require.Equal(t, strconv.Itoa(i), c.version)
		if i == 0 {
			require.True(t, q.push(change{version: "after"}), "room for one once one is taken")
		}
	}
	c, ok := q.pop()
	require.True(t, ok, "the change pushed once there was room")
	require.Equal(t, "after", c.version)
	require.Zero(t, q.len())
	require.LessOrEqual(t, q.changes.Cap(), maxIdleQueue, "a drained burst keeps a small buffer only")
	require.True(t, q.push(change{version: "next"}))
	c, ok = q.pop()
	require.True(t, ok)
	require.Equal(t, "next", c.version)
	require.LessOrEqual(t, q.changes.Cap(), maxIdleQueue, "a watcher that keeps up keeps a small buffer")
}
