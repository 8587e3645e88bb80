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
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// eventsEncoder stands for the server's encoder of whole watch events: it
// writes the event's object with its object encoder, and counts its calls.
type eventsEncoder struct {
	t      *testing.T
	object runtime.Encoder
	calls  int
	fail   bool
}

func (e *eventsEncoder) identifier(embedded runtime.Identifier, eventType watch.EventType) runtime.Identifier {
	// The fields of handlers.watchEncoderIdentifier, in its order.
	return runtime.Identifier(string(mustJSON(e.t, struct {
		Name            string `json:"name"`
		EmbeddedEncoder string `json:"embeddedEncoder"`
		Encoder         string `json:"encoder"`
		EventType       string `json:"eventType"`
	}{Name: "watch", EmbeddedEncoder: string(embedded), Encoder: "events", EventType: string(eventType)})))
}

func (e *eventsEncoder) encode(obj runtime.Object, w io.Writer) error {
	e.calls++
	if e.fail {
		return errors.New("failed")
	}
	if _, err := w.Write([]byte(`{"object":`)); err != nil {
		return err
	}
	if err := e.object.Encode(obj, w); err != nil {
		return err
	}
	_, err := w.Write([]byte("}\n"))
	return err
}

// write writes event as the server does, and returns what it wrote.
func (e *eventsEncoder) write(t *testing.T, embedded runtime.Identifier, event watch.Event) string {
	t.Helper()
	var written bytes.Buffer
	co, ok := event.Object.(runtime.CacheableObject)
	require.True(t, ok)
	require.NoError(t, co.CacheEncode(e.identifier(embedded, event.Type), e.encode, &written))
	return written.String()
}

// TestWatchersShareEncodings: the watchers of a change write its events,
// for the encoder of whole events over the plain JSON encoder, from one
// encoding, the bytes each would have written alone; any other encoder,
// an encoding that failed, and a watch from a resource version (whose first
// changes come from the history) encode theirs.
func TestWatchersShareEncodings(t *testing.T) {
	t.Parallel()
	jsonEncoder := encoderFor(t, codecsFor(t, true), "application/json")
	id := jsonEncoder.Identifier()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(h.store, allVisible).WithEncodedJSON(id)
	from := h.flush()
	first := startWatch(t, r, "*", &metainternalversion.ListOptions{ResourceVersion: from})
	second := startWatch(t, r, "c1", &metainternalversion.ListOptions{ResourceVersion: from})
	require.Eventually(t, func() bool { return allWaiting(h.store, []watch.Interface{first, second}) }, eventually, tick)

	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	events := []watch.Event{expect(t, first, event{watch.Modified, "c1/a"})[0], expect(t, second, event{watch.Modified, "c1/a"})[0]}
	alone := &eventsEncoder{t: t, object: jsonEncoder}
	unshared := *events[0].Object.(*eventObject)
	unshared.shared = nil
	want := alone.write(t, id, watch.Event{Type: watch.Modified, Object: &unshared})
	require.Contains(t, want, `"phase":"Connecting"`)

	shared := &eventsEncoder{t: t, object: jsonEncoder}
	for _, e := range events {
		require.Equal(t, want, shared.write(t, id, e))
	}
	require.Equal(t, 1, shared.calls, "the watchers share one encoding")
	require.Equal(t, 1, alone.calls)

	other := &eventsEncoder{t: t, object: jsonEncoder}
	for _, e := range events {
		other.write(t, `{"name":"watch-embedded","encoder":"x","target":"meta.k8s.io/v1, Kind=Table"}`, e)
	}
	require.Equal(t, 2, other.calls, "events through a Table are not shared")

	failing := &eventsEncoder{t: t, object: jsonEncoder, fail: true}
	deleted := watch.Event{Type: watch.Deleted, Object: events[0].Object}
	co := deleted.Object.(runtime.CacheableObject)
	require.Error(t, co.CacheEncode(failing.identifier(id, watch.Deleted), failing.encode, io.Discard))
	failing.fail = false
	require.Equal(t, `{"object":`+encode(t, jsonEncoder, events[0].Object.(*eventObject).GetObject())+"}\n", failing.write(t, id, deleted))
	require.Equal(t, 2, failing.calls, "a failed encoding is not kept")

	replayed := startWatch(t, r, "*", &metainternalversion.ListOptions{ResourceVersion: from})
	fromHistory := &eventsEncoder{t: t, object: jsonEncoder}
	require.Equal(t, want, fromHistory.write(t, id, expect(t, replayed, event{watch.Modified, "c1/a"})[0]))
	require.Equal(t, 1, fromHistory.calls, "a change from the history is encoded anew")
}
