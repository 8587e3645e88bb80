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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unique"
	"unsafe"

	kjson "sigs.k8s.io/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// entry is what the store keeps of one WorkspaceMount, never modified once
// in the store: its JSON as the API server's encoder writes it, from which
// answers are written or decoded, and its [summary], which ordering,
// selectors and Table cells read.
type entry struct {
	summary
	json []byte
	// metadata and resourceVersion are where the object's metadata and the
	// quoted value of its resourceVersion are in json.
	metadata, resourceVersion span
	// history, if not nil, is written into json at history.at.
	history *compactHistory
	// shared, if not empty, is written into json at sharedAt: see [entry.shareStatus].
	shared   string
	sharedAt int32
}

// span is a range of bytes of an entry's JSON, which is under 2 GiB.
type span struct{ start, end int32 }

func spanOf(start, n int) span {
	return span{int32(start), int32(start + n)} //nolint:gosec // newEntry refuses JSON of 2 GiB or more
}

func (s span) empty() bool { return s.start == s.end }

// less is s moved n bytes back, unless empty.
func (s span) less(n int) span {
	if s.empty() {
		return s
	}
	return span{s.start - int32(n), s.end - int32(n)} //nolint:gosec // n is len(jsonPrefix)
}

// summary is what ordering, selectors and a Table row read of an object;
// its strings share memory with the Workspace the informer caches.
type summary struct {
	cluster                              logicalcluster.Name
	name                                 string
	labels                               map[string]string
	created                              int64 // Unix seconds, as the JSON has it; [noTime] for none
	workspacePath                        string
	mountKind, mountNamespace, mountName string
	phase                                string
	workspacePhase                       string
	shard                                string
	url, reason                          string
	lastTransition                       int64 // Unix seconds, 0 for none
	ready                                bool
	// verbatim: JSON writes every string as it is, so cells are copied.
	verbatim bool
	// slot is its cluster's, set when the store takes the entry.
	slot uint32
}

// noTime is the Unix seconds of no time.
const noTime = math.MinInt64

func unixOrNone(t metav1.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return t.Unix()
}

func summarize(wsm *wsmv1alpha1.WorkspaceMount) summary {
	s := summary{
		cluster:        logicalcluster.From(wsm),
		name:           wsm.Name,
		labels:         wsm.Labels,
		created:        unixOrNone(wsm.CreationTimestamp),
		workspacePath:  wsm.Status.WorkspacePath,
		mountKind:      wsm.Spec.MountRef.Kind,
		mountNamespace: wsm.Spec.MountRef.Namespace,
		mountName:      wsm.Spec.MountRef.Name,
		phase:          unique.Make(wsm.Status.Phase).Value(), // one copy of each of a few values
		ready:          wsm.Status.Ready,
		workspacePhase: wsm.Status.WorkspacePhase,
		shard:          wsm.Status.Shard,
		url:            wsm.Status.URL,
		reason:         unique.Make(wsm.Status.Reason).Value(),
	}
	if t := wsm.Status.LastTransitionTime; t != nil && !t.IsZero() {
		s.lastTransition = t.Unix()
	}
	s.verbatim = true
	for _, str := range s.strings() {
		for i := range len(str) {
			s.verbatim = s.verbatim && jsonVerbatim[str[i]]
		}
	}
	return s
}

func (s *summary) strings() []string {
	return []string{
		s.cluster.String(), s.name, s.workspacePath, s.mountKind, s.mountNamespace, s.mountName,
		s.phase, s.workspacePhase, s.shard, s.url, s.reason,
	}
}

// validUTF8 tells whether the strings survive JSON, which replaces invalid UTF-8.
func (s *summary) validUTF8() bool {
	for _, str := range s.strings() {
		if !utf8.ValidString(str) {
			return false
		}
	}
	return true
}

func (s *summary) listKey() listKey {
	return listKey{cluster: s.cluster, name: s.name}
}

func (s *summary) fieldSet() fields.Set {
	return fields.Set{
		"metadata.name":                s.name,
		wsmv1alpha1.FieldPhase:         s.phase,
		wsmv1alpha1.FieldReady:         strconv.FormatBool(s.ready),
		wsmv1alpha1.FieldWorkspacePath: s.workspacePath,
		wsmv1alpha1.FieldShard:         s.shard,
	}
}

func (s *summary) labelSet() labels.Set { return s.labels }

var metadataKey = []byte(`"metadata":`)

// jsonPrefix is how the JSON of every WorkspaceMount the store makes begins.
var jsonPrefix = []byte(`{"kind":"` + wsmv1alpha1.Kind + `","apiVersion":"` + wsmv1alpha1.SchemeGroupVersion.String() + `",`)

func newEntry(wsm *wsmv1alpha1.WorkspaceMount) (*entry, error) {
	object, err := json.Marshal(wsm)
	if err != nil {
		return nil, err
	}
	metadata, err := json.Marshal(&wsm.ObjectMeta)
	if err != nil {
		return nil, err
	}
	if len(object) > math.MaxInt32 {
		return nil, errors.New("the JSON of the WorkspaceMount is larger than 2 GiB")
	}
	start := bytes.Index(object, metadataKey) + len(metadataKey)
	if start < len(metadataKey) || !bytes.HasPrefix(object[start:], metadata) {
		return nil, errors.New("the metadata is not where the JSON of a WorkspaceMount has it")
	}
	e := &entry{summary: summarize(wsm), metadata: spanOf(start, len(metadata))}
	if e.json, e.history, err = compactHistoryOf(wsm, object); err != nil {
		return nil, err
	}
	if e.history != nil && e.history.at < e.metadata.end {
		e.json, e.history = object, nil // the status after the metadata, as encoding/json writes it, or nothing compact
	}
	if wsm.ResourceVersion != "" {
		// The first "resourceVersion" key is the metadata's: quotes in strings are escaped.
		value, err := json.Marshal(wsm.ResourceVersion)
		if err != nil {
			return nil, err
		}
		key := []byte(`"resourceVersion":`)
		at := bytes.Index(metadata, key) + len(key)
		if at < len(key) || !bytes.HasPrefix(metadata[at:], value) {
			return nil, errors.New("the resourceVersion is not where the JSON of a WorkspaceMount has it")
		}
		e.resourceVersion = spanOf(start+at, len(value))
	}
	if bytes.HasPrefix(e.json, jsonPrefix) {
		// Every entry's begins alike: written, not kept.
		e.json = bytes.Clone(e.json[len(jsonPrefix):])
		e.metadata = e.metadata.less(len(jsonPrefix))
		e.resourceVersion = e.resourceVersion.less(len(jsonPrefix))
		if e.history != nil {
			e.history.at -= int32(len(jsonPrefix)) //nolint:gosec // a constant's length
		}
	}
	if e.verbatim {
		// The strings the summary parsed or built, not the cached Workspace's: the JSON's copy.
		e.url, e.workspacePath = inJSON(e.json, "url", e.url), inJSON(e.json, "workspacePath", e.workspacePath)
	}
	if !e.validUTF8() {
		decoded, err := e.object()
		if err != nil {
			return nil, err
		}
		e.summary = summarize(decoded)
	}
	return e, nil
}

// inJSON is value as a view of the JSON, where the JSON holds key and value verbatim, else value; the JSON is never
// modified.
func inJSON(json []byte, key, value string) string {
	if len(json) == 0 {
		return value
	}
	return inString(unsafe.String(&json[0], len(json)), key, value)
}

func (e *entry) object() (*wsmv1alpha1.WorkspaceMount, error) {
	wsm := &wsmv1alpha1.WorkspaceMount{}
	data := e.json
	if e.history != nil || e.prefixed() || e.shared != "" {
		data = e.appendJSON(nil, nil)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, wsm); err != nil {
		return nil, fmt.Errorf("decoding the WorkspaceMount %s|%s the store keeps: %w", e.cluster, e.name, err)
	}
	return wsm, nil
}

// objectAt is the entry's object with resourceVersion, unless empty; should
// the JSON not decode, it has the entry's name and cluster only.
func (e *entry) objectAt(resourceVersion string) *wsmv1alpha1.WorkspaceMount {
	wsm, err := e.object()
	if err != nil {
		utilruntime.HandleError(err)
		wsm = &wsmv1alpha1.WorkspaceMount{
			TypeMeta:   metav1.TypeMeta{APIVersion: wsmv1alpha1.SchemeGroupVersion.String(), Kind: wsmv1alpha1.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: e.name, Annotations: map[string]string{logicalcluster.AnnotationKey: e.cluster.String()}},
		}
	}
	if resourceVersion != "" {
		wsm.ResourceVersion = resourceVersion
	}
	return wsm
}

// prefixed tells an entry whose JSON is kept without [jsonPrefix]: an object's begins with {.
func (e *entry) prefixed() bool { return len(e.json) > 0 && e.json[0] != '{' }

// appendJSON appends the object's JSON, with resourceVersion (quoted) in
// the place the caller knows the entry has, unless nil.
func (e *entry) appendJSON(b, resourceVersion []byte) []byte {
	if e.prefixed() {
		b = append(b, jsonPrefix...)
	}
	data, offset := e.json, 0
	if resourceVersion != nil {
		b = append(b, data[:e.resourceVersion.start]...)
		b = append(b, resourceVersion...)
		data, offset = data[e.resourceVersion.end:], int(e.resourceVersion.end)
	}
	// In the status, after the metadata: the shared head, then the history.
	if e.shared != "" {
		at := int(e.sharedAt) - offset
		b = append(b, data[:at]...)
		b = append(b, e.shared...)
		data, offset = data[at:], offset+at
	}
	if e.history != nil {
		at := int(e.history.at) - offset
		b = append(b, data[:at]...)
		b = e.history.appendJSON(b)
		data = data[at:]
	}
	return append(b, data...)
}

// sameExceptResourceVersion tells a relist's or resync's echo.
func sameExceptResourceVersion(a, b *entry) bool {
	return bytes.Equal(a.json[:a.resourceVersion.start], b.json[:b.resourceVersion.start]) &&
		bytes.Equal(a.json[a.resourceVersion.end:], b.json[b.resourceVersion.end:]) && a.history.equal(b.history) &&
		a.prefixed() == b.prefixed() && a.shared == b.shared && a.sharedAt == b.sharedAt
}
