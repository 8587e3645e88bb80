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
func codecsFor(t *testing.T, streaming bool) serializer.CodecFactory {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, wsmv1alpha1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	if streaming {
		return serializer.NewCodecFactory(scheme, serializer.WithStreamingCollectionEncodingToJSON())
	}
	return serializer.NewCodecFactory(scheme)
}

func encoderFor(t *testing.T, codecs serializer.CodecFactory, mediaType string) runtime.Encoder {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	return codecs.EncoderForVersion(info.Serializer, wsmv1alpha1.SchemeGroupVersion)
}

// unusualWorkspace is a Workspace in c1 whose WorkspaceMount has what JSON
// escapes: quotes, HTML, U+2028, non-ASCII.
func unusualWorkspace(name string) *tenancyv1alpha1.Workspace {
	ws := mounted("c1", name, mount.PhaseConnecting, map[string]string{"team": "<&>"})
	ws.Annotations[mount.StatusAnnotationKey] = mount.Status{
		Phase: mount.PhaseConnecting, Reason: "MountNotReady", Message: "quotes \" and <html> & \u2028 and ünïcode",
		URL: "https://example.com/?a=1&b=<2>", Conditions: []mount.Condition{{Type: "A", Status: "False", Message: "m"}},
	}.Encode()
	return ws
}

// TestEncodedList: a list written from the store's encodings is, byte for
// byte, what the server's JSON encoders write of the list; other encoders
// encode the list themselves; and the list reads as one.
func TestEncodedList(t *testing.T) {
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
	}{
		{name: "all", target: "*", options: &metainternalversion.ListOptions{}},
		{name: "one cluster", target: "c1", options: &metainternalversion.ListOptions{}},
		{name: "a page", target: "*", options: &metainternalversion.ListOptions{Limit: 2}},
		{name: "a label selector", target: "*", options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "b"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj, err := r.List(requestContext(tc.target), tc.options)
			require.NoError(t, err)
			list, ok := obj.(*encodedList)
			require.True(t, ok, "%T", obj)

			var cached bytes.Buffer
			require.NoError(t, list.CacheEncode(jsonEncoder.Identifier(), func(runtime.Object, io.Writer) error {
				t.Fatal("the list was encoded, not written from the store's encodings")
				return nil
			}, &cached))
			for _, codecs := range []serializer.CodecFactory{streaming, codecsFor(t, false)} {
				var encoded bytes.Buffer
				require.NoError(t, encoderFor(t, codecs, runtime.ContentTypeJSON).Encode(list.WorkspaceMountList.DeepCopy(), &encoded))
				require.Equal(t, encoded.String(), cached.String())
			}
			// Through the encoder, as the handlers call it.
			var viaEncoder bytes.Buffer
			require.NoError(t, jsonEncoder.Encode(obj, &viaEncoder))
			require.Equal(t, cached.String(), viaEncoder.String())

			// YAML, pretty JSON: encoded as any list.
			for _, mediaType := range []string{runtime.ContentTypeYAML} {
				var got, want bytes.Buffer
				require.NoError(t, encoderFor(t, streaming, mediaType).Encode(obj, &got))
				require.NoError(t, encoderFor(t, streaming, mediaType).Encode(list.WorkspaceMountList, &want))
				require.Equal(t, want.String(), got.String())
			}
			pretty, ok := runtime.SerializerInfoForMediaType(streaming.SupportedMediaTypes(), runtime.ContentTypeJSON)
			require.True(t, ok)
			var got, want bytes.Buffer
			prettyEncoder := streaming.EncoderForVersion(pretty.PrettySerializer, wsmv1alpha1.SchemeGroupVersion)
			require.NoError(t, prettyEncoder.Encode(obj, &got))
			require.NoError(t, prettyEncoder.Encode(list.WorkspaceMountList, &want))
			require.Equal(t, want.String(), got.String())

			// What the handlers read of a list (PartialObjectMetadataList, the
			// empty-list fix-up, Table) reads the list's items.
			require.True(t, meta.IsListType(obj))
			require.Equal(t, len(list.Items), meta.LenList(obj))
			var names []string
			require.NoError(t, meta.EachListItem(obj, func(item runtime.Object) error {
				m, err := meta.Accessor(item)
				require.NoError(t, err)
				names = append(names, logicalcluster.From(m).String()+"/"+m.GetName())
				return nil
			}))
			require.Len(t, names, len(list.Items))
			listAccessor, err := meta.ListAccessor(obj)
			require.NoError(t, err)
			require.Equal(t, list.ResourceVersion, listAccessor.GetResourceVersion())
			table, err := r.ConvertToTable(context.Background(), obj, &metav1.TableOptions{})
			require.NoError(t, err)
			require.Len(t, table.Rows, len(list.Items))
		})
	}

	t.Run("without the encoder's identifier, lists are plain", func(t *testing.T) {
		t.Parallel()
		obj, err := NewREST(h.store, allVisible).List(requestContext("*"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		require.IsType(t, &wsmv1alpha1.WorkspaceMountList{}, obj)
	})
	t.Run("an empty list is plain", func(t *testing.T) {
		t.Parallel()
		obj, err := r.List(requestContext("c-none"), &metainternalversion.ListOptions{})
		require.NoError(t, err)
		require.IsType(t, &wsmv1alpha1.WorkspaceMountList{}, obj)
	})
}

// TestStoreEncodings: the store keeps the JSON of exactly the objects it
// holds, made again on every change.
func TestStoreEncodings(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), mounted("c1", "b", mount.PhaseReady, nil))
	check := func() {
		t.Helper()
		items, encoded, _ := h.store.list(allClusters)
		require.Len(t, encoded, len(items))
		for i, wsm := range items {
			require.Equal(t, encodeJSON(wsm), encoded[i])
		}
		h.store.lock.RLock()
		defer h.store.lock.RUnlock()
		require.Len(t, h.store.encoded, len(h.store.items))
	}
	check()
	h.update(mounted("c1", "a", mount.PhaseConnecting, nil))
	require.Eventually(t, func() bool {
		wsm, _ := h.store.get("c1", "a")
		return wsm.Status.Phase == string(mount.PhaseConnecting)
	}, eventually, tick)
	check()
	h.delete(mounted("c1", "b", mount.PhaseReady, nil))
	require.Eventually(t, func() bool { _, found := h.store.get("c1", "b"); return !found }, eventually, tick)
	check()
}

// TestEncodedListWithoutCopies: a list answered as itself or as a Table
// (WithListAnswer) is made without copies of the store's objects, and reads,
// encodes and converts as the list made with them; any other answer, or one
// not told, gets the copies at once.
func TestEncodedListWithoutCopies(t *testing.T) {
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
	copied, err := r.List(requestContext("*"), options) // not told: copies
	require.NoError(t, err)
	require.True(t, copied.(*encodedList).itemsCopied)
	want := copied.(*encodedList).WorkspaceMountList
	require.Len(t, want.Items, 3)

	tableV1 := metav1.SchemeGroupVersion.WithKind("Table")
	partialList := metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
	listWithout := func(t *testing.T, convert *schema.GroupVersionKind) *encodedList {
		t.Helper()
		obj, err := r.List(WithListAnswer(requestContext("*"), convert), options)
		require.NoError(t, err)
		list, ok := obj.(*encodedList)
		require.True(t, ok, "%T", obj)
		require.False(t, list.itemsCopied, "no copies for %v", convert)
		require.Empty(t, list.Items)
		return list
	}

	t.Run("the list itself: written from the encodings, copied when asked for", func(t *testing.T) {
		t.Parallel()
		list := listWithout(t, nil)
		var written, encoded bytes.Buffer
		require.NoError(t, jsonEncoder.Encode(list, &written))
		require.NoError(t, jsonEncoder.Encode(want.DeepCopy(), &encoded))
		require.Equal(t, encoded.String(), written.String())
		require.False(t, list.itemsCopied, "the JSON encoder read no item")

		// The handlers' fix-up of a list whose Items they count 0, then an
		// encoder of its own (YAML): the copies replace the fix-up's [].
		require.NoError(t, meta.SetList(list, []runtime.Object{}))
		var yamlGot, yamlWant bytes.Buffer
		require.NoError(t, encoderFor(t, streaming, runtime.ContentTypeYAML).Encode(list, &yamlGot))
		require.NoError(t, encoderFor(t, streaming, runtime.ContentTypeYAML).Encode(want, &yamlWant))
		require.Equal(t, yamlWant.String(), yamlGot.String())
		require.Equal(t, want, listWithout(t, nil).GetObject())
	})

	t.Run("a Table: rows of the store's objects, as those of copies", func(t *testing.T) {
		t.Parallel()
		ctx := WithListAnswer(requestContext("*"), &tableV1)
		wantTable, err := r.ConvertToTable(ctx, copied, &metav1.TableOptions{})
		require.NoError(t, err)
		list := listWithout(t, &tableV1)
		table, err := r.ConvertToTable(ctx, list, &metav1.TableOptions{})
		require.NoError(t, err)
		require.False(t, list.itemsCopied)
		require.Len(t, table.Rows, 3)
		for i, row := range table.Rows {
			require.Equal(t, wantTable.Rows[i].Cells, row.Cells)
			require.Equal(t, wantTable.Rows[i].Object.Raw, row.Object.Raw)
			require.Same(t, list.items[i], row.Object.Object, "the store's object, read only")
		}
		require.Equal(t, wantTable.ResourceVersion, table.ResourceVersion)

		// includeObject=Object: the handlers convert each row's object in place.
		list = listWithout(t, &tableV1)
		table, err = r.ConvertToTable(ctx, list, &metav1.TableOptions{IncludeObject: metav1.IncludeObject})
		require.NoError(t, err)
		require.True(t, list.itemsCopied)
		for i, row := range table.Rows {
			require.Same(t, &list.Items[i], row.Object.Object)
			require.NotSame(t, list.items[i], row.Object.Object)
		}
	})

	t.Run("a PartialObjectMetadataList: copies at once, for EachListItem", func(t *testing.T) {
		t.Parallel()
		obj, err := r.List(WithListAnswer(requestContext("*"), &partialList), options)
		require.NoError(t, err)
		require.True(t, obj.(*encodedList).itemsCopied)
		require.Equal(t, 3, meta.LenList(obj))
		count := 0
		require.NoError(t, meta.EachListItem(obj, func(runtime.Object) error { count++; return nil }))
		require.Equal(t, 3, count)
	})
}

// tableGVK is what a list negotiated to a meta.k8s.io/v1 Table is converted to.
var tableGVK = metav1.SchemeGroupVersion.WithKind("Table")

// metaJSONEncoder is the server's JSON encoder of meta.k8s.io/v1, which
// writes Tables (the handlers' meta.k8s.io codecs).
func metaJSONEncoder(t testing.TB) runtime.Encoder {
	t.Helper()
	codecs := metainternalversionscheme.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	return codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion)
}

// TestEncodedTable: ListTable's Table, written from the store's encodings
// by the server's JSON encoder of meta.k8s.io/v1, is byte for byte that
// encoder's output of the Table it stands for (GetObject), whose rows are
// ConvertToTable's with the object includeObject asks for; any other
// encoder encodes that Table. (virtual/apiserver's TestServer compares the
// answers with the handlers' own.)
func TestEncodedTable(t *testing.T) {
	t.Parallel()
	unusual := unusualWorkspace("b<&>")
	unusual.CreationTimestamp = metav1.NewTime(time.Now().Add(-3 * time.Hour))
	namespaced := mounted("c2", "c", mount.PhaseReady, map[string]string{"team": "b"})
	namespaced.Spec.Mount.Reference.Namespace = "ns"
	namespaced.CreationTimestamp = metav1.NewTime(time.Now().Add(-50 * time.Hour))
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil), unusual, namespaced)
	encoder := metaJSONEncoder(t)
	shardCell := func(shard string) string { return shard + " (unreachable <1m>)" }
	r := NewREST(h.store, allVisible).WithEncodedTableJSON(encoder.Identifier()).WithShardCell(shardCell)

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
		{name: "object", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{IncludeObject: metav1.IncludeObject}},
		{name: "no object", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{IncludeObject: metav1.IncludeNone}},
		{name: "no headers", target: "*", options: &metainternalversion.ListOptions{}, tableOptions: &metav1.TableOptions{NoHeaders: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj, err := r.ListTable(requestContext(tc.target), tc.options, tc.tableOptions)
			require.NoError(t, err)
			table, ok := obj.(*encodedTable)
			require.True(t, ok, "%T", obj)

			var written bytes.Buffer
			require.NoError(t, encoder.Encode(table, &written))
			require.False(t, table.rowsMade, "written from the store's encodings, without the Table's rows")
			var encoded bytes.Buffer
			require.NoError(t, encoder.Encode(table.GetObject(), &encoded))
			require.Equal(t, encoded.String(), written.String())
			var again bytes.Buffer
			require.NoError(t, encoder.Encode(table, &again))
			require.Equal(t, written.String(), again.String(), "the same once the rows are made")

			// The Table it stands for: ConvertToTable's rows of List's page.
			list, err := r.List(requestContext(tc.target), tc.options)
			require.NoError(t, err)
			converted, err := r.ConvertToTable(context.Background(), list, tc.tableOptions)
			require.NoError(t, err)
			got := table.GetObject().(*metav1.Table)
			require.Equal(t, converted.ListMeta, got.ListMeta)
			require.Equal(t, converted.ColumnDefinitions, got.ColumnDefinitions)
			require.Len(t, got.Rows, len(converted.Rows))
			for i, row := range got.Rows {
				require.Equal(t, converted.Rows[i].Cells, row.Cells)
				wsm := converted.Rows[i].Object.Object.(*wsmv1alpha1.WorkspaceMount)
				switch tc.tableOptions.IncludeObject {
				case metav1.IncludeObject:
					want := wsm.DeepCopy()
					want.SetGroupVersionKind(wsmv1alpha1.SchemeGroupVersion.WithKind(wsmv1alpha1.Kind))
					require.JSONEq(t, string(mustJSON(t, want)), string(row.Object.Raw))
				case metav1.IncludeNone:
					require.Equal(t, runtime.RawExtension{}, row.Object)
				default:
					partial := meta.AsPartialObjectMetadata(wsm)
					partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
					require.JSONEq(t, string(mustJSON(t, partial)), string(row.Object.Raw))
				}
			}

			// Pretty JSON and YAML: the Table encoded.
			for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML} {
				info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), mediaType)
				require.True(t, ok)
				serializer := info.Serializer
				if info.PrettySerializer != nil {
					serializer = info.PrettySerializer
				}
				other := metainternalversionscheme.Codecs.EncoderForVersion(serializer, metav1.SchemeGroupVersion)
				var got, want bytes.Buffer
				require.NoError(t, other.Encode(obj, &got))
				require.NoError(t, other.Encode(table.GetObject(), &want))
				require.Equal(t, want.String(), got.String())
			}
		})
	}

	t.Run("the SHARD and AGE cells of each list", func(t *testing.T) {
		t.Parallel()
		obj, err := r.ListTable(requestContext("*"), &metainternalversion.ListOptions{}, &metav1.TableOptions{})
		require.NoError(t, err)
		var written bytes.Buffer
		require.NoError(t, encoder.Encode(obj, &written))
		var table metav1.Table
		require.NoError(t, json.Unmarshal(written.Bytes(), &table))
		require.Len(t, table.Rows, 3)
		require.Equal(t, []interface{}{"a", "<unknown>", nil}, []interface{}{table.Rows[0].Cells[0], table.Rows[0].Cells[ageColumn], table.Rows[0].Cells[shardColumn]})
		require.Equal(t, []interface{}{"b<&>", "3h"}, []interface{}{table.Rows[1].Cells[0], table.Rows[1].Cells[ageColumn]})
		require.Equal(t, []interface{}{"ns/c", "2d2h"}, []interface{}{table.Rows[2].Cells[3], table.Rows[2].Cells[ageColumn]})
	})
}

// TestEncodingAppendRow: appendRow appends rowLen bytes, a TableRow with
// the object asked for.
func TestEncodingAppendRow(t *testing.T) {
	t.Parallel()
	wsm := tableObject("c1", "a", time.Hour)
	wsm.SetGroupVersionKind(wsmv1alpha1.SchemeGroupVersion.WithKind(wsmv1alpha1.Kind))
	encoded := encodeJSON(wsm)
	require.NotNil(t, encoded)
	partial := meta.AsPartialObjectMetadata(wsm)
	partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
	age, shard := []byte(`"60m"`), []byte(`"shard-2"`)
	for includeObject, want := range map[metav1.IncludeObjectPolicy]string{
		metav1.IncludeObject:   string(mustJSON(t, wsm)),
		metav1.IncludeMetadata: string(mustJSON(t, partial)),
		metav1.IncludeNone:     "null",
	} {
		row := encoded.appendRow([]byte("prefix"), age, shard, includeObject)
		require.Len(t, row, len("prefix")+encoded.rowLen(age, shard, includeObject), includeObject)
		var got struct {
			Cells  []interface{}   `json:"cells"`
			Object json.RawMessage `json:"object"`
		}
		require.NoError(t, json.Unmarshal(row[len("prefix"):], &got))
		require.Equal(t, []interface{}{"a", "root:org:a", "KubeCluster", "kc", "Ready", true, "Unavailable", "60m", "c1", "shard-2", "https://kc.example.io", "MountReady"}, got.Cells)
		require.Equal(t, want, string(got.Object), includeObject)
	}
	require.Equal(t, string(mustJSON(t, partial)), string(encoded.partialMetadata()))
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	encoded, err := json.Marshal(v)
	require.NoError(t, err)
	return encoded
}
