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
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// codecsFor are the API server's codecs for this API, with (as the server
// has them) or without the streaming list encoders.
func codecsFor(t testing.TB, streaming bool) serializer.CodecFactory {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, wsmv1alpha1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	if streaming {
		return serializer.NewCodecFactory(scheme, serializer.WithStreamingCollectionEncodingToJSON())
	}
	return serializer.NewCodecFactory(scheme)
}

func encoderFor(t testing.TB, codecs serializer.CodecFactory, mediaType string) runtime.Encoder {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	return codecs.EncoderForVersion(info.Serializer, wsmv1alpha1.SchemeGroupVersion)
}

// prettyEncoderFor is the pretty JSON encoder of codecs in version.
func prettyEncoderFor(t testing.TB, codecs runtime.NegotiatedSerializer, version schema.GroupVersion) runtime.Encoder {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	return codecs.EncoderForVersion(info.PrettySerializer, version)
}

// unusualWorkspace is a Workspace in c1 whose WorkspaceMount has what JSON
// escapes: quotes, HTML, U+2028, non-ASCII.
func unusualWorkspace(name string) *tenancyv1alpha1.Workspace {
	ws := mounted("c1", name, mount.PhaseConnecting, map[string]string{"team": "<&>"})
	ws.Annotations[mount.StatusAnnotationKey] = mount.Status{
		Phase: mount.PhaseConnecting, Reason: "MountNotReady", Message: "quotes \" and <html> & \u2028 and ünïcode",
		URL: "https://example.com/?a=1&b=<2>", Conditions: []mount.Condition{{Type: "A", Status: "False", Message: "m"}},
		LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour)),
		History: []mount.Transition{
			{Phase: mount.PhaseReady, Ready: true, Reason: `a "forged" <reason> \ ü`, Time: metav1.NewTime(testNow.Add(-3 * time.Hour))},
			{Phase: mount.PhaseUnknown, Reason: "MountPhaseUnrecognized", Time: metav1.NewTime(testNow.Add(-2 * time.Hour))},
		},
		Since: &metav1.Time{Time: testNow.Add(-4 * time.Hour)}, ReadySeconds: 3600,
	}.Encode()
	return ws
}

// encodeWithout encodes obj with encoder, failing the test if obj is
// encoded as an object rather than written from the store's JSON.
func encodeWithout(t *testing.T, encoder runtime.Encoder, obj runtime.CacheableObject) string {
	t.Helper()
	var written bytes.Buffer
	require.NoError(t, obj.CacheEncode(encoder.Identifier(), func(runtime.Object, io.Writer) error {
		t.Fatal("encoded as an object, not written from the store's JSON")
		return nil
	}, &written))
	return written.String()
}

func encode(t *testing.T, encoder runtime.Encoder, obj runtime.Object) string {
	t.Helper()
	var encoded bytes.Buffer
	require.NoError(t, encoder.Encode(obj, &encoded))
	return encoded.String()
}

// TestListAnswer: a list answer written from the store's JSON is, byte for
// byte, what the server's JSON encoders write of the list; other encoders
// encode the list, decoded; and the list reads as one.
func TestListAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		unusualWorkspace("b"),
		mounted("c2", "c", mount.PhaseReady, map[string]string{"team": "b"}),
	)
	streaming := codecsFor(t, true)
	jsonEncoder := encoderFor(t, streaming, runtime.ContentTypeJSON)
	r := NewREST(h.store, allVisible).WithEncodedJSON(jsonEncoder.Identifier())

	for _, tc := range []struct {
		name    string
		target  string
		options *metainternalversion.ListOptions
		items   int
	}{
		{name: "all", target: "*", options: &metainternalversion.ListOptions{}, items: 3},
		{name: "one cluster", target: "c1", options: &metainternalversion.ListOptions{}, items: 2},
		{name: "a page", target: "*", options: &metainternalversion.ListOptions{Limit: 2}, items: 2},
		{name: "a label selector", target: "*", options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "b"})}, items: 1},
		{name: "none", target: "c-none", options: &metainternalversion.ListOptions{}, items: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj, err := r.List(requestContext(tc.target), tc.options)
			require.NoError(t, err)
			answer, ok := obj.(*listAnswer)
			require.True(t, ok, "%T", obj)

			written := encodeWithout(t, jsonEncoder, answer)
			require.False(t, answer.decoded, "the JSON encoder decoded no item")
			decoded, err := r.List(requestContext(tc.target), tc.options)
			require.NoError(t, err)
			list := listOf(t, decoded)
			require.Len(t, list.Items, tc.items)
			for _, codecs := range []serializer.CodecFactory{streaming, codecsFor(t, false)} {
				require.Equal(t, encode(t, encoderFor(t, codecs, runtime.ContentTypeJSON), list.DeepCopy()), written)
			}
			// Through the encoder, as the handlers call it.
			require.Equal(t, written, encode(t, jsonEncoder, obj))

			// YAML, pretty JSON: the list, decoded, encoded.
			for _, other := range []runtime.Encoder{encoderFor(t, streaming, runtime.ContentTypeYAML), prettyEncoderFor(t, streaming, wsmv1alpha1.SchemeGroupVersion)} {
				fresh, err := r.List(requestContext(tc.target), tc.options)
				require.NoError(t, err)
				require.Equal(t, encode(t, other, list.DeepCopy()), encode(t, other, fresh))
			}

			// What the handlers read of a list (the empty-list fix-up,
			// PartialObjectMetadataList, Table) reads the list's items.
			require.True(t, meta.IsListType(obj))
			var names []string
			require.NoError(t, meta.EachListItem(obj, func(item runtime.Object) error {
				m, err := meta.Accessor(item)
				require.NoError(t, err)
				names = append(names, logicalcluster.From(m).String()+"/"+m.GetName())
				return nil
			}))
			require.Len(t, names, tc.items)
			require.Equal(t, tc.items, meta.LenList(obj))
			listAccessor, err := meta.ListAccessor(obj)
			require.NoError(t, err)
			require.Equal(t, list.ResourceVersion, listAccessor.GetResourceVersion())
			table, err := r.ConvertToTable(context.Background(), obj, &metav1.TableOptions{})
			require.NoError(t, err)
			require.Len(t, table.Rows, tc.items)
			require.Equal(t, list, answer.DeepCopyObject())
		})
	}

	t.Run("without the encoder's identifier, encoded decoded", func(t *testing.T) {
		t.Parallel()
		obj, err := NewREST(h.store, allVisible).List(requestContext("*"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		require.Equal(t, encode(t, jsonEncoder, listOf(t, obj).DeepCopy()), encode(t, jsonEncoder, obj))
	})
}

// TestListAnswerDecodesWhenRead: a list answer decodes its items when
// something reads them as objects, once, and reads, encodes and converts as
// the decoded list.
func TestListAnswerDecodesWhenRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		mounted("c1", "b", mount.PhaseConnecting, map[string]string{"team": "<&>"}),
		mounted("c2", "c", mount.PhaseReady, map[string]string{"team": "b"}),
	)
	streaming := codecsFor(t, true)
	jsonEncoder := encoderFor(t, streaming, runtime.ContentTypeJSON)
	r := NewREST(h.store, allVisible).WithEncodedJSON(jsonEncoder.Identifier())
	options := &metainternalversion.ListOptions{}
	fresh := func(t *testing.T) *listAnswer {
		t.Helper()
		obj, err := r.List(requestContext("*"), options)
		require.NoError(t, err)
		answer := obj.(*listAnswer)
		require.False(t, answer.decoded)
		require.Empty(t, answer.Items)
		return answer
	}
	want := listOf(t, fresh(t)).DeepCopy()
	require.Len(t, want.Items, 3)

	t.Run("the handlers' empty-list fix-up, then another encoder", func(t *testing.T) {
		t.Parallel()
		answer := fresh(t)
		// transformResponseObject: meta.LenList counts Items, which the
		// answer has not decoded, and sets [].
		require.NoError(t, meta.SetList(answer, []runtime.Object{}))
		require.Equal(t, encode(t, jsonEncoder, want.DeepCopy()), encodeWithout(t, jsonEncoder, answer), "the entries are the list")
		yaml := encoderFor(t, streaming, runtime.ContentTypeYAML)
		require.Equal(t, encode(t, yaml, want.DeepCopy()), encode(t, yaml, answer))
		require.Equal(t, want, answer.GetObject())
	})
	t.Run("a PartialObjectMetadataList: EachListItem", func(t *testing.T) {
		t.Parallel()
		answer := fresh(t)
		var partial []*metav1.PartialObjectMetadata
		require.NoError(t, meta.EachListItem(answer, func(item runtime.Object) error {
			m, err := meta.Accessor(item)
			require.NoError(t, err)
			partial = append(partial, meta.AsPartialObjectMetadata(m))
			return nil
		}))
		require.True(t, answer.decoded)
		require.Len(t, partial, 3)
		require.Equal(t, map[string]string{"team": "<&>"}, partial[1].Labels)
		var copies []runtime.Object
		require.NoError(t, meta.EachListItemWithAlloc(answer, func(item runtime.Object) error { copies = append(copies, item); return nil }))
		require.Len(t, copies, 3)
		require.NotSame(t, &answer.Items[0], copies[0])
		require.Equal(t, &answer.Items[0], copies[0])
	})
	t.Run("a Table: ConvertToTable", func(t *testing.T) {
		t.Parallel()
		table, err := r.ConvertToTable(context.Background(), fresh(t), &metav1.TableOptions{})
		require.NoError(t, err)
		wantTable, err := r.ConvertToTable(context.Background(), want, &metav1.TableOptions{})
		require.NoError(t, err)
		require.Equal(t, wantTable, table)
	})
	t.Run("as unstructured content", func(t *testing.T) {
		t.Parallel()
		answer := fresh(t)
		content := answer.UnstructuredContent()
		require.Len(t, content["items"], 3)
		require.True(t, answer.IsList())
		other := answer.NewEmptyInstance()
		other.SetUnstructuredContent(content)
		require.Equal(t, want, other.(*listAnswer).GetObject())
		require.Equal(t, encode(t, jsonEncoder, want.DeepCopy()), encode(t, jsonEncoder, other), "no longer its entries: encoded")
		require.ErrorIs(t, r.WriteTableJSON(io.Discard, other, &metav1.TableOptions{}), errNotWritable)
	})
}

// TestStoreEntries: the store keeps an entry of exactly the objects it
// holds, made again on every change: the JSON of the object, and its
// summary, which is the decoded object's.
func TestStoreEntries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), unusualWorkspace("b"))
	check := func() {
		t.Helper()
		entries, _ := h.store.list(allClusters)
		h.store.lock.RLock()
		require.Len(t, entries, len(h.store.items))
		h.store.lock.RUnlock()
		for _, e := range entries {
			wsm, err := e.object()
			require.NoError(t, err)
			require.JSONEq(t, string(mustJSON(t, wsm)), string(e.appendJSON(nil, nil)))
			require.Equal(t, string(mustJSON(t, wsm)), string(e.appendJSON(nil, nil)))
			require.Equal(t, summarize(wsm), e.summary)
			require.Equal(t, string(mustJSON(t, wsm.ObjectMeta)), string(e.json[e.metadata.start:e.metadata.end]))
			require.Equal(t, string(mustJSON(t, wsm.ResourceVersion)), string(e.json[e.resourceVersion.start:e.resourceVersion.end]))
		}
	}
	check()
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	require.Eventually(t, func() bool {
		e, _ := h.store.get("c1", "a")
		return e.phase == string(mount.PhaseConnecting)
	}, eventually, tick)
	check()
	h.delete(mounted("c1", "b", mount.PhaseReady, nil))
	require.Eventually(t, func() bool { _, found := h.store.get("c1", "b"); return !found }, eventually, tick)
	check()
}

// TestEntry: an entry's summary is what the decoded object reads, even of
// strings JSON changes (invalid UTF-8); a new resource version goes where
// the JSON has it; two entries differing only in it are the same.
func TestEntry(t *testing.T) {
	t.Parallel()
	wsm := FromWorkspace(mount.Rule{}, unusualWorkspace("a"), logicalcluster.NewPath("root:org"))
	wsm.ResourceVersion = "17"
	e, err := newEntry(wsm)
	require.NoError(t, err)
	require.Equal(t, "root:org:a", e.workspacePath)

	moved := wsm.DeepCopy()
	moved.ResourceVersion = "18"
	other, err := newEntry(moved)
	require.NoError(t, err)
	require.True(t, sameExceptResourceVersion(e, other))
	require.Equal(t, string(other.appendJSON(nil, nil)), string(e.appendJSON(nil, []byte(`"18"`))))
	moved.Status.Phase = "Ready"
	other, err = newEntry(moved)
	require.NoError(t, err)
	require.False(t, sameExceptResourceVersion(e, other))

	invalid := wsm.DeepCopy()
	invalid.Status.Reason = "bad \xff\xfe bytes"
	invalid.ResourceVersion = ""
	e, err = newEntry(invalid)
	require.NoError(t, err)
	decoded, err := e.object()
	require.NoError(t, err)
	require.Equal(t, summarize(decoded), e.summary)
	require.Equal(t, "bad \uFFFD\uFFFD bytes", e.reason)
	require.True(t, e.resourceVersion.empty())
}

// TestEventObject: a watch event's object is, for the server's JSON
// encoder, the store's JSON, with the event's resource version, byte for
// byte what the encoder writes of the object; the encoder of whole events
// is handed the event's object itself; any other encoder, the object.
func TestEventObject(t *testing.T) {
	t.Parallel()
	streaming := codecsFor(t, true)
	jsonEncoder := encoderFor(t, streaming, runtime.ContentTypeJSON)
	wsm := FromWorkspace(mount.Rule{}, unusualWorkspace("a"), logicalcluster.NewPath("root:org"))
	wsm.ResourceVersion = "17"
	e, err := newEntry(wsm)
	require.NoError(t, err)
	withoutVersion := wsm.DeepCopy()
	withoutVersion.ResourceVersion = ""
	unversioned, err := newEntry(withoutVersion)
	require.NoError(t, err)

	for _, tc := range []struct {
		name            string
		entry           *entry
		resourceVersion string
		fromJSON        bool
	}{
		{name: "its own version", entry: e, fromJSON: true},
		{name: "the event's version", entry: e, resourceVersion: "root=3,shard-2=<4>", fromJSON: true},
		{name: "no version of its own", entry: unversioned, resourceVersion: "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			object := &eventObject{entry: tc.entry, resourceVersion: tc.resourceVersion, jsonEncoder: jsonEncoder.Identifier()}
			want := tc.entry.objectAt(tc.resourceVersion)
			if tc.resourceVersion != "" {
				require.Equal(t, want.ResourceVersion, tc.resourceVersion)
			}
			require.Equal(t, want, object.GetObject())
			require.Equal(t, want, object.DeepCopyObject())
			if tc.fromJSON {
				require.Equal(t, encode(t, jsonEncoder, want.DeepCopy()), encodeWithout(t, jsonEncoder, object))
			}
			require.Equal(t, encode(t, jsonEncoder, want.DeepCopy()), encode(t, jsonEncoder, object))

			var handed runtime.Object
			keep := func(obj runtime.Object, _ io.Writer) error { handed = obj; return nil }
			require.NoError(t, object.CacheEncode(`{"name":"watch","embeddedEncoder":"x","encoder":"y","eventType":"ADDED"}`, keep, io.Discard))
			require.Same(t, object, handed, "the encoder of events gets the event's object")
			for _, id := range []runtime.Identifier{`{"name":"watch-embedded","encoder":"x","target":"meta.k8s.io/v1, Kind=Table"}`, "yaml"} {
				require.NoError(t, object.CacheEncode(id, keep, io.Discard))
				require.Equal(t, want, handed, id)
			}
			yaml := encoderFor(t, streaming, runtime.ContentTypeYAML)
			require.Equal(t, encode(t, yaml, want.DeepCopy()), encode(t, yaml, object))
		})
	}
}

// metaJSONEncoder is the server's JSON encoder of meta.k8s.io/v1, which
// writes Tables (the handlers' meta.k8s.io codecs).
func metaJSONEncoder(t testing.TB) runtime.Encoder {
	t.Helper()
	codecs := metainternalversionscheme.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	return codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion)
}

// handlersTable is the meta.k8s.io/v1 Table the list handler makes of a
// list answer: ConvertToTable's, with each row's object its
// PartialObjectMetadata (handlers.asTable, includeObject=Metadata).
func handlersTable(t *testing.T, r *REST, list runtime.Object, options *metav1.TableOptions) *metav1.Table {
	t.Helper()
	table, err := r.ConvertToTable(context.Background(), list, options)
	require.NoError(t, err)
	for i := range table.Rows {
		m, err := meta.Accessor(table.Rows[i].Object.Object)
		require.NoError(t, err)
		partial := meta.AsPartialObjectMetadata(m)
		partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
		table.Rows[i].Object.Object = partial
	}
	return table
}

// TestWriteTableJSON: the Table WriteTableJSON writes of a list answer is
// byte for byte what the server's JSON encoder of meta.k8s.io/v1 writes of
// the Table the list handler makes of it. (virtual/apiserver's TestServer
// compares the server's answers with the handler's own.)
func TestWriteTableJSON(t *testing.T) {
	t.Parallel()
	unusual := unusualWorkspace("b<&>")
	unusual.CreationTimestamp = metav1.NewTime(time.Now().Add(-3 * time.Hour))
	namespaced := mounted("c2", "c", mount.PhaseReady, map[string]string{"team": "b"})
	namespaced.Spec.Mount.Reference.Namespace = "ns"
	namespaced.CreationTimestamp = metav1.NewTime(time.Now().Add(-50 * time.Hour))
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), unusual, namespaced)
	encoder := metaJSONEncoder(t)
	r := NewREST(h.store, allVisible)

	for _, tc := range []struct {
		name         string
		target       string
		options      *metainternalversion.ListOptions
		tableOptions *metav1.TableOptions
	}{
		{name: "all", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{}},
		{name: "one cluster", target: "c1", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{}},
		{name: "a page", target: "*", options: &metainternalversion.ListOptions{Limit: 2}, tableOptions: &metav1.TableOptions{}},
		{name: "a label selector", target: "*", options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "b"})}, tableOptions: &metav1.TableOptions{}},
		{name: "none", target: "c-none", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{}},
		{name: "metadata", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{IncludeObject: metav1.IncludeMetadata}},
		{name: "no headers", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{NoHeaders: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, WritesTableJSON(tc.tableOptions))
			list, err := r.List(requestContext(tc.target), tc.options)
			require.NoError(t, err)
			var written bytes.Buffer
			require.NoError(t, r.WriteTableJSON(&written, list, tc.tableOptions))
			require.False(t, list.(*listAnswer).decoded, "written from the store's JSON")
			require.Equal(t, encode(t, encoder, handlersTable(t, r, list, tc.tableOptions)), written.String())
		})
	}

	t.Run("what it does not write", func(t *testing.T) {
		t.Parallel()
		list, err := r.List(requestContext("*"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		for _, includeObject := range []metav1.IncludeObjectPolicy{metav1.IncludeObject, metav1.IncludeNone} {
			options := &metav1.TableOptions{IncludeObject: includeObject}
			require.False(t, WritesTableJSON(options))
			var written bytes.Buffer
			require.ErrorIs(t, r.WriteTableJSON(&written, list, options), errNotWritable)
			require.Empty(t, written.String())
		}
		require.ErrorIs(t, r.WriteTableJSON(io.Discard, listOf(t, list), &metav1.TableOptions{}), errNotWritable, "not a list answer")
	})

	t.Run("the SHARD and AGE cells of each list", func(t *testing.T) {
		t.Parallel()
		list, err := r.List(requestContext("*"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		var written bytes.Buffer
		require.NoError(t, r.WriteTableJSON(&written, list, &metav1.TableOptions{}))
		var table metav1.Table
		require.NoError(t, json.Unmarshal(written.Bytes(), &table))
		require.Len(t, table.Rows, 3)
		require.Equal(t, []interface{}{"a", "<unknown>", nil}, []interface{}{table.Rows[0].Cells[0], table.Rows[0].Cells[ageColumn], table.Rows[0].Cells[shardColumn]})
		require.Equal(t, []interface{}{"b<&>", "3h"}, []interface{}{table.Rows[1].Cells[0], table.Rows[1].Cells[ageColumn]})
		require.Equal(t, []interface{}{"ns/c", "2d2h"}, []interface{}{table.Rows[2].Cells[3], table.Rows[2].Cells[ageColumn]})
	})
}

// The columns whose cells change while the object does not.
const (
	ageColumn   = 7
	shardColumn = 9
)

// FuzzAppendJSONString: a Table cell's string is written as encoding/json
// writes the string a decoded object holds.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "root:org:ws", `"`, `\`, "<&>", "\u2028", "ünï", "\x7f", "\x00\x1f", "\xff\xfe", "\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var decoded string
		encoded, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(encoded, &decoded); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(decoded)
		if err != nil {
			t.Fatal(err)
		}
		escaped := map[string][]byte{}
		for range 2 { // made, then kept
			if got := appendJSONString([]byte("x"), decoded, escaped); string(got) != "x"+string(want) {
				t.Fatalf("%q: %s, want %s", s, got[1:], want)
			}
		}
	})
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	encoded, err := json.Marshal(v)
	require.NoError(t, err)
	return encoded
}
