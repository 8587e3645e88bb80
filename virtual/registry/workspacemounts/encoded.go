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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// encoding is what the store keeps of an object for the answers of lists.
type encoding struct {
	// object is the JSON of the object as the API server's JSON encoder
	// writes it, item by item, in a list (encoding/json, the object's own
	// apiVersion and kind), and in a Table row with includeObject=Object.
	object []byte
	// metadata is where the JSON of its metadata is in object: the JSON of
	// its meta.k8s.io/v1 PartialObjectMetadata, the object of a
	// meta.k8s.io/v1 Table row with includeObject=Metadata (the default), as
	// the handlers make it (meta.AsPartialObjectMetadata), is that metadata
	// in partialObjectMetadataV1 (partialMetadata).
	metadata [2]int
	// cells is the JSON array of its Table row's cells (objectCells) but
	// for those of ageColumn and shardColumn, which change while the object
	// does not: cells[:cellSplits[0]] are the cells before AGE (with the
	// opening bracket), cells[cellSplits[0]:cellSplits[1]] the one between
	// AGE and SHARD, the rest those after SHARD (with the closing bracket).
	cells      []byte
	cellSplits [2]int
}

// encodeJSON is an object's encoding; nil if it cannot be encoded.
func encodeJSON(wsm *wsmv1alpha1.WorkspaceMount) *encoding {
	object, err := json.Marshal(wsm)
	if err != nil {
		return nil
	}
	// The metadata follows the object's kind and apiVersion.
	metadata, err := json.Marshal(&wsm.ObjectMeta)
	if err != nil {
		return nil
	}
	start := bytes.Index(object, []byte(`"metadata":`)) + len(`"metadata":`)
	if start < len(`"metadata":`) || !bytes.HasPrefix(object[start:], metadata) {
		return nil
	}
	cells, cellSplits, err := encodeCells(objectCells(wsm))
	if err != nil {
		return nil
	}
	return &encoding{object: object, metadata: [2]int{start, start + len(metadata)}, cells: cells, cellSplits: cellSplits}
}

// partialObjectMetadataV1 is the JSON of a meta.k8s.io/v1
// PartialObjectMetadata, as encoding/json writes it, but for its metadata.
var partialObjectMetadataV1 = [2]string{`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`, `}`}

// partialMetadata is the JSON of the object's meta.k8s.io/v1 PartialObjectMetadata.
func (e *encoding) partialMetadata() []byte {
	return e.appendObject(nil, metav1.IncludeMetadata)
}

// appendObject appends the JSON of the object of a meta.k8s.io/v1 Table
// row with includeObject (Object, Metadata or None); objectLen bytes.
func (e *encoding) appendObject(b []byte, includeObject metav1.IncludeObjectPolicy) []byte {
	switch includeObject {
	case metav1.IncludeObject:
		return append(b, e.object...)
	case metav1.IncludeMetadata:
		b = append(b, partialObjectMetadataV1[0]...)
		b = append(b, e.object[e.metadata[0]:e.metadata[1]]...)
		return append(b, partialObjectMetadataV1[1]...)
	}
	return append(b, "null"...)
}

// objectLen is the length of what appendObject appends.
func (e *encoding) objectLen(includeObject metav1.IncludeObjectPolicy) int {
	switch includeObject {
	case metav1.IncludeObject:
		return len(e.object)
	case metav1.IncludeMetadata:
		return len(partialObjectMetadataV1[0]) + e.metadata[1] - e.metadata[0] + len(partialObjectMetadataV1[1])
	}
	return len("null")
}

// encodeCells is the JSON of a row's cells but AGE and SHARD, and where
// those go (encoding.cells).
func encodeCells(cells []interface{}) ([]byte, [2]int, error) {
	var encoded []byte
	var splits [2]int
	for i, part := range [][]interface{}{cells[:ageColumn], cells[ageColumn+1 : shardColumn], cells[shardColumn+1:]} {
		partJSON, err := json.Marshal(part) // [a,b]
		if err != nil {
			return nil, splits, err
		}
		switch i {
		case 0: // [a,b
			encoded = append(encoded, partJSON[:len(partJSON)-1]...)
			splits[0] = len(encoded)
		case 1: // a,b
			encoded = append(encoded, partJSON[1:len(partJSON)-1]...)
			splits[1] = len(encoded)
		case 2: // a,b]
			encoded = append(encoded, partJSON[1:]...)
		}
	}
	return encoded, splits, nil
}

// appendRow appends the JSON of the object's meta.k8s.io/v1 Table row, as
// encoding/json writes a metav1.TableRow: its cells, with age and shard
// (JSON values) in their columns, and the object includeObject asks for;
// rowLen bytes.
func (e *encoding) appendRow(row, age, shard []byte, includeObject metav1.IncludeObjectPolicy) []byte {
	row = append(row, `{"cells":`...)
	row = append(append(append(row, e.cells[:e.cellSplits[0]]...), ','), age...)
	row = append(append(append(row, ','), e.cells[e.cellSplits[0]:e.cellSplits[1]]...), ',')
	row = append(append(append(row, shard...), ','), e.cells[e.cellSplits[1]:]...)
	row = e.appendObject(append(row, `,"object":`...), includeObject)
	return append(row, '}')
}

// rowLen is the length of what appendRow appends.
func (e *encoding) rowLen(age, shard []byte, includeObject metav1.IncludeObjectPolicy) int {
	return len(`{"cells":,,,,,"object":}`) + len(e.cells) + len(age) + len(shard) + e.objectLen(includeObject)
}

// encodedList is a list answer that carries, beside the list, the store's
// objects of its items and the JSON the store keeps of each. It is a
// runtime.CacheableObject: the API server's encoders hand it their
// identifier, and for the one of plain JSON in this API's version
// (REST.WithEncodedJSON) it writes the list from those bytes, the same bytes
// the encoder would write, without encoding an object. For any other (YAML,
// pretty JSON...) the encoder encodes the list itself.
//
// The embedded list's Items are copies of the store's objects, made at
// once when the request's answer is not known to be the list itself or a
// Table (WithListAnswer): whatever else the handlers make of a list (a
// PartialObjectMetadataList) reads Items by reflection. For the list itself
// and a Table they are made only if something asks for the object
// (GetObject, another encoder, a Table with includeObject=Object): a list of
// 10,000 is then written without a copy of its 10,000 objects.
type encodedList struct {
	*wsmv1alpha1.WorkspaceMountList
	// items are the store's objects, index by index: shared, never written.
	items []*wsmv1alpha1.WorkspaceMount
	// itemsCopied is whether the embedded list's Items hold copies of items.
	itemsCopied bool
	// encoded is the JSON of each item, index by index.
	encoded []*encoding
	// jsonEncoder is the identifier of the encoder whose output encoded is.
	jsonEncoder runtime.Identifier
}

var _ runtime.CacheableObject = &encodedList{}

// GetObject implements runtime.CacheableObject: the list, with its items.
func (l *encodedList) GetObject() runtime.Object {
	l.copyItems()
	return l.WorkspaceMountList
}

// copyItems sets the embedded list's Items to copies of the store's
// objects, once. (The handlers' fix-up of an empty list may have set Items
// to [] before: it is replaced.) An answer belongs to one request, and is
// not read by two goroutines at a time.
func (l *encodedList) copyItems() {
	if l.itemsCopied {
		return
	}
	l.itemsCopied = true
	l.Items = copiesOf(l.items)
}

// item is the list's i-th object: its copy if the items are copied, else
// the store's (read only).
func (l *encodedList) item(i int) *wsmv1alpha1.WorkspaceMount {
	if l.itemsCopied {
		return &l.Items[i]
	}
	return l.items[i]
}

// readsItems is whether the handlers may read a list's Items for ctx's
// request (WithListAnswer): unless it is answered as the list itself or as
// a Table, or when it is not known what it is answered with.
func readsItems(ctx context.Context) bool {
	convert, known := listAnswerFrom(ctx)
	return !known || convert != nil && convert.Kind != tableKind
}

// copiesOf is a list's Items: a shallow copy of each of the store's objects.
func copiesOf(objects []*wsmv1alpha1.WorkspaceMount) []wsmv1alpha1.WorkspaceMount {
	items := make([]wsmv1alpha1.WorkspaceMount, len(objects))
	for i, wsm := range objects {
		items[i] = *wsm
	}
	return items
}

// CacheEncode implements runtime.CacheableObject. The output is that of the
// apimachinery JSON serializer's streaming list encoder (and of its plain
// one): {"kind":..,"apiVersion":..,"metadata":{..},"items":[..]} and a newline.
func (l *encodedList) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	if id != l.jsonEncoder || len(l.encoded) != len(l.items) {
		return encode(l.GetObject(), w)
	}
	kind, err := json.Marshal(l.Kind)
	if err != nil {
		return err
	}
	apiVersion, err := json.Marshal(l.APIVersion)
	if err != nil {
		return err
	}
	listMeta, err := json.Marshal(&l.ListMeta)
	if err != nil {
		return err
	}
	out := newChunkedWriter(w)
	if l.Kind != "" {
		out.chunk = append(append(append(out.chunk, `"kind":`...), kind...), ',')
	}
	if l.APIVersion != "" {
		out.chunk = append(append(append(out.chunk, `"apiVersion":`...), apiVersion...), ',')
	}
	out.chunk = append(append(append(out.chunk, `"metadata":`...), listMeta...), `,"items":[`...)
	for i, item := range l.encoded {
		if err := out.reserve(1 + len(item.object)); err != nil {
			return err
		}
		if i > 0 {
			out.chunk = append(out.chunk, ',')
		}
		out.chunk = append(out.chunk, item.object...)
	}
	return out.close("]}\n")
}

// encodedChunkSize is the size of the writes of an encodedList or an encodedTable.
const encodedChunkSize = 32 << 10

// chunkedWriter writes a JSON object in a few large writes: "{" alone
// first, as the apimachinery streaming encoder writes it (the API server's
// response writer takes a first write of a few bytes for a streamed
// answer, and gathers it for gzip: a first write up to 128 KiB is not
// compressed), then the rest in pieces of about encodedChunkSize, appended
// to chunk by the caller after reserve.
type chunkedWriter struct {
	w     io.Writer
	chunk []byte
	err   error
}

func newChunkedWriter(w io.Writer) *chunkedWriter {
	_, err := w.Write([]byte{'{'})
	return &chunkedWriter{w: w, chunk: make([]byte, 0, encodedChunkSize), err: err}
}

// reserve writes the chunk out first if n more bytes would not fit in it,
// and returns the error of any write so far.
func (c *chunkedWriter) reserve(n int) error {
	if c.err == nil && len(c.chunk) > 0 && len(c.chunk)+n > cap(c.chunk) {
		_, c.err = c.w.Write(c.chunk)
		c.chunk = c.chunk[:0]
	}
	return c.err
}

// close writes the chunk with end, and returns the error of any write.
func (c *chunkedWriter) close(end string) error {
	if c.err != nil {
		return c.err
	}
	_, err := c.w.Write(append(c.chunk, end...))
	return err
}

// encodedTable is a list answered as a meta.k8s.io/v1 Table (REST.ListTable),
// written from the store's encodings: a runtime.CacheableObject like
// encodedList. For the server's plain JSON encoder of meta.k8s.io/v1 (its
// identifier, REST.WithEncodedTableJSON) it writes, from the kept JSON of
// each row's cells and object, the bytes that encoder writes of the Table
// the handlers would make (handlers.asTable over ConvertToTable): no
// metav1.Table, no PartialObjectMetadata, no encoding/json of 10,000 rows.
// For any other encoder (pretty JSON, YAML) it is that Table (GetObject).
type encodedTable struct {
	// Table is the Table's kind, list metadata and column definitions; its
	// rows are made by GetObject, if ever.
	*metav1.Table
	list          *encodedList
	includeObject metav1.IncludeObjectPolicy
	convertor     tableConvertor
	// jsonEncoder is the identifier of the encoder whose output CacheEncode writes.
	jsonEncoder runtime.Identifier
	rowsMade    bool
}

var _ runtime.CacheableObject = &encodedTable{}

// GetObject implements runtime.CacheableObject: the Table, with its rows, as
// the handlers make it for meta.k8s.io/v1.
func (t *encodedTable) GetObject() runtime.Object {
	if t.rowsMade {
		return t.Table
	}
	t.rowsMade = true
	t.convertor.setListRows(t.Table, &t.list.ListMeta, len(t.list.items), t.list.item)
	for i := range t.Rows {
		t.Rows[i].Object = runtime.RawExtension{} // includeObject=None
	}
	setEncodedObjects(t.Table, t.list.encoded, t.includeObject, metav1.SchemeGroupVersion)
	return t.Table
}

// DeepCopyObject implements runtime.Object: a copy of the Table, with its rows.
func (t *encodedTable) DeepCopyObject() runtime.Object {
	return t.GetObject().DeepCopyObject()
}

// CacheEncode implements runtime.CacheableObject. The output is that of
// encoding/json (the apimachinery JSON serializer) of the Table and a newline.
func (t *encodedTable) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	if id != t.jsonEncoder {
		return encode(t.GetObject(), w)
	}
	// The Table without rows, as the encoder writes it: its kind, list
	// metadata, columns and "rows":[]}.
	header, err := json.Marshal(&metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: tableKind, APIVersion: metav1.SchemeGroupVersion.String()},
		ListMeta:          t.ListMeta,
		ColumnDefinitions: t.ColumnDefinitions,
		Rows:              []metav1.TableRow{},
	})
	if err != nil {
		return err
	}
	const emptyRows = `[]}`
	out := newChunkedWriter(w)
	out.chunk = append(out.chunk, header[1:len(header)-len(emptyRows)]...)
	out.chunk = append(out.chunk, '[')
	now := time.Now()
	ages, shards := map[string][]byte{}, map[string][]byte{}
	for i, wsm := range t.list.items {
		encoded := t.list.encoded[i]
		age, err := jsonOnce(ages, ageAt(wsm.CreationTimestamp, now), func(age string) interface{} { return age })
		if err != nil {
			return err
		}
		shard, err := jsonOnce(shards, wsm.Status.Shard, t.convertor.shard)
		if err != nil {
			return err
		}
		if err := out.reserve(1 + encoded.rowLen(age, shard, t.includeObject)); err != nil {
			return err
		}
		if i > 0 {
			out.chunk = append(out.chunk, ',')
		}
		out.chunk = encoded.appendRow(out.chunk, age, shard, t.includeObject)
	}
	return out.close("]}\n")
}

// jsonOnce is the JSON of cell(key), made once per key and kept in made.
func jsonOnce(made map[string][]byte, key string, cell func(string) interface{}) ([]byte, error) {
	if encoded, ok := made[key]; ok {
		return encoded, nil
	}
	encoded, err := json.Marshal(cell(key))
	if err != nil {
		return nil, err
	}
	made[key] = encoded
	return encoded, nil
}
