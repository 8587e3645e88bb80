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
	"encoding/json"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
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
	// partialMetadataV1 is the JSON of its meta.k8s.io/v1
	// PartialObjectMetadata, the object of a meta.k8s.io/v1 Table row with
	// includeObject=Metadata (the default), as the handlers make it
	// (meta.AsPartialObjectMetadata).
	partialMetadataV1 []byte
}

// encodeJSON is an object's encoding; nil if it cannot be encoded.
func encodeJSON(wsm *wsmv1alpha1.WorkspaceMount) *encoding {
	object, err := json.Marshal(wsm)
	if err != nil {
		return nil
	}
	partial := meta.AsPartialObjectMetadata(&wsm.ObjectMeta)
	partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
	partialMetadata, err := json.Marshal(partial)
	if err != nil {
		return nil
	}
	return &encoding{object: object, partialMetadataV1: partialMetadata}
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
	// "{" alone first, as the streaming encoder writes it: the API server's
	// response writer takes a first write of a few bytes for a streamed
	// list, and gathers it for gzip (a first write up to 128 KiB is not
	// compressed).
	if _, err := w.Write([]byte{'{'}); err != nil {
		return err
	}
	// The rest in pieces of encodedChunkSize: a few large writes, not two per item.
	chunk := make([]byte, 0, max(encodedChunkSize, len(kind)+len(apiVersion)+len(listMeta)+64))
	if l.Kind != "" {
		chunk = append(append(append(chunk, `"kind":`...), kind...), ',')
	}
	if l.APIVersion != "" {
		chunk = append(append(append(chunk, `"apiVersion":`...), apiVersion...), ',')
	}
	chunk = append(append(append(chunk, `"metadata":`...), listMeta...), `,"items":[`...)
	for i, item := range l.encoded {
		item := item.object
		if len(chunk)+1+len(item) > cap(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
		if i > 0 {
			chunk = append(chunk, ',')
		}
		chunk = append(chunk, item...)
	}
	chunk = append(chunk, "]}\n"...)
	_, err = w.Write(chunk)
	return err
}

// encodedChunkSize is the size of the writes of an encodedList.
const encodedChunkSize = 32 << 10
