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
	"encoding/json"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// listAnswer is List's answer, a [runtime.CacheableObject] whose items are
// the store's entries, written from their JSON for the server's plain JSON
// encoder and decoded only for anything else. It belongs to one request. See
// docs/design/registry-answers.md.
type listAnswer struct {
	wsmv1alpha1.WorkspaceMountList
	entries []*entry // the store's, read only
	// decoded: Items holds the entries' objects; replaced: Items is what the
	// list holds instead.
	decoded, replaced bool
	jsonEncoder       runtime.Identifier
}

var (
	_ runtime.CacheableObject = &listAnswer{}
	_ runtime.Unstructured    = &listAnswer{}
	_ metav1.ListInterface    = &listAnswer{}
)

func newListAnswer(listMeta metav1.ListMeta, entries []*entry, jsonEncoder runtime.Identifier) *listAnswer {
	return &listAnswer{
		WorkspaceMountList: wsmv1alpha1.WorkspaceMountList{
			TypeMeta: metav1.TypeMeta{APIVersion: wsmv1alpha1.SchemeGroupVersion.String(), Kind: wsmv1alpha1.ListKind},
			ListMeta: listMeta,
		},
		entries:     entries,
		jsonEncoder: jsonEncoder,
	}
}

func (l *listAnswer) items() []wsmv1alpha1.WorkspaceMount {
	if !l.decoded {
		l.decoded = true
		l.Items = make([]wsmv1alpha1.WorkspaceMount, len(l.entries))
		for i, e := range l.entries {
			l.Items[i] = *e.objectAt("")
		}
	}
	return l.Items
}

func (l *listAnswer) GetObject() runtime.Object {
	l.items()
	return &l.WorkspaceMountList
}

func (l *listAnswer) DeepCopyObject() runtime.Object {
	return l.GetObject().DeepCopyObject()
}

// CacheEncode implements runtime.CacheableObject, writing what the JSON
// serializer's list encoders write.
func (l *listAnswer) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	if id != l.jsonEncoder || l.replaced {
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
	out.chunk = append(append(append(out.chunk, `"kind":`...), kind...), ',')
	out.chunk = append(append(append(out.chunk, `"apiVersion":`...), apiVersion...), ',')
	out.chunk = append(append(append(out.chunk, `"metadata":`...), listMeta...), `,"items":[`...)
	for i, e := range l.entries {
		if i > 0 {
			out.chunk = append(out.chunk, ',')
		}
		out.chunk = e.appendJSON(out.chunk, nil)
		if err := out.next(); err != nil {
			return err
		}
	}
	return out.close("]}\n")
}

func (l *listAnswer) IsList() bool { return true }

func (l *listAnswer) EachListItem(fn func(runtime.Object) error) error {
	items := l.items()
	for i := range items {
		if err := fn(&items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (l *listAnswer) EachListItemWithAlloc(fn func(runtime.Object) error) error {
	for _, item := range l.items() {
		if err := fn(&item); err != nil {
			return err
		}
	}
	return nil
}

func (l *listAnswer) UnstructuredContent() map[string]interface{} {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l.GetObject())
	if err != nil {
		utilruntime.HandleError(err)
		return map[string]interface{}{}
	}
	return content
}

// SetUnstructuredContent replaces the list by content.
func (l *listAnswer) SetUnstructuredContent(content map[string]interface{}) {
	list := wsmv1alpha1.WorkspaceMountList{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, &list); err != nil {
		utilruntime.HandleError(err)
	}
	l.WorkspaceMountList, l.entries, l.decoded, l.replaced = list, nil, true, true
}

func (l *listAnswer) NewEmptyInstance() runtime.Unstructured {
	return &listAnswer{WorkspaceMountList: wsmv1alpha1.WorkspaceMountList{TypeMeta: l.TypeMeta}, decoded: true, replaced: true}
}

// eventObject is a watch event's object: an entry, with the resource version
// of the event's moment (empty: its own), written like a [listAnswer]; the
// events of a change share their encodings by the encoders that plainEvents
// begins the identifier of.
type eventObject struct {
	entry           *entry
	resourceVersion string
	jsonEncoder     runtime.Identifier
	shared          *eventEncodings
	plainEvents     string
}

var _ runtime.CacheableObject = &eventObject{}

func (o *eventObject) GetObject() runtime.Object {
	return o.entry.objectAt(o.resourceVersion)
}

func (o *eventObject) DeepCopyObject() runtime.Object { return o.GetObject() }

func (o *eventObject) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: wsmv1alpha1.SchemeGroupVersion.String(), Kind: wsmv1alpha1.Kind}
}

// watchFrameIdentifier begins the identifier of the server's encoder of
// whole watch events, which asks the object's encoder in turn.
const watchFrameIdentifier = `{"name":"watch",`

// CacheEncode implements runtime.CacheableObject: the entry's JSON for the
// plain JSON encoder, itself for the encoder of whole events (whose
// encoding the watchers of a change share when its object encoder is the
// plain JSON encoder), else the decoded object.
func (o *eventObject) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	switch {
	case id == o.jsonEncoder && (o.resourceVersion == "" || !o.entry.resourceVersion.empty()):
		var resourceVersion []byte
		if o.resourceVersion != "" {
			var err error
			if resourceVersion, err = json.Marshal(o.resourceVersion); err != nil {
				return err
			}
		}
		b := make([]byte, 0, len(o.entry.json)+len(resourceVersion)+1)
		_, err := w.Write(append(o.entry.appendJSON(b, resourceVersion), '\n'))
		return err
	case o.jsonEncoder != "" && strings.HasPrefix(string(id), watchFrameIdentifier):
		if o.shared != nil && o.plainEvents != "" && strings.HasPrefix(string(id), o.plainEvents) {
			return o.shared.write(id, func(b io.Writer) error { return encode(o, b) }, w)
		}
		return encode(o, w)
	default:
		return encode(o.GetObject(), w)
	}
}

// encodedChunkSize is about the size of each write of a list or a Table.
const encodedChunkSize = 32 << 10

// chunkedWriter writes a JSON object as the JSON serializer's streaming list
// encoder does, "{" alone first, then in pieces of about encodedChunkSize:
// the caller appends to chunk and calls next after each item.
type chunkedWriter struct {
	w     io.Writer
	chunk []byte
	err   error
}

func newChunkedWriter(w io.Writer) *chunkedWriter {
	_, err := w.Write([]byte{'{'})
	return &chunkedWriter{w: w, chunk: make([]byte, 0, 2*encodedChunkSize), err: err}
}

// next writes the chunk once it is full, and returns any write's error.
func (c *chunkedWriter) next() error {
	if c.err == nil && len(c.chunk) >= encodedChunkSize {
		_, c.err = c.w.Write(c.chunk)
		c.chunk = c.chunk[:0]
	}
	return c.err
}

// close writes the chunk with end.
func (c *chunkedWriter) close(end string) error {
	if c.err != nil {
		return c.err
	}
	_, err := c.w.Write(append(c.chunk, end...))
	return err
}
