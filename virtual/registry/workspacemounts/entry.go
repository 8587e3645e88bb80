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
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unique"

	kjson "sigs.k8s.io/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// entry is what the store keeps of one WorkspaceMount: its JSON, the one
// representation of the object, from which lists, watch events and Tables
// are written and from which an object is decoded when something needs one
// (object); and its summary, the few fields that ordering, selectors and
// the Table's cells read. An entry is never modified once in the store.
//
// The JSON leaves out status.transitions and status.availability, whose
// ratio and currentStateSeconds are as of each answer: every answer writes
// them into the JSON at storyAt (appendJSON), from the summary (the current
// state and its lastTransition) and earlier. A mount in one state since
// first seen, most of them, has none (FromWorkspace) and keeps nothing more.
type entry struct {
	summary
	// json is the object as the API server's JSON encoder writes it
	// (encoding/json, with its apiVersion and kind), without a newline,
	// and without its story.
	json []byte
	// metadata is where the object's metadata is in json: the metadata of
	// its PartialObjectMetadata. resourceVersion is where the (quoted) value
	// of its metadata.resourceVersion is, empty if it has none.
	metadata, resourceVersion span
	// storyAt is where status.transitions and status.availability go in
	// json, 0 if the object has none.
	storyAt int32
	// slot is its cluster's (slots.go), set when the store takes the entry.
	slot uint32
	// earlier is the story before the current state, nil for a mount in
	// one state since first seen.
	earlier *earlierStory
}

// earlierStory is a mount's story before its current state: when it was
// first seen, how long it was ready since, and its earlier transitions,
// oldest first.
type earlierStory struct {
	since, readySeconds int64 // Unix seconds, seconds
	transitions         []storyTransition
}

// storyTransition is a MountTransition, its time in Unix seconds.
type storyTransition struct {
	phase, reason string
	at            int64
	ready         bool
}

// span is a range of bytes of an entry's JSON, which is at most 2 GiB.
type span struct{ start, end int32 }

// spanOf is the span of n bytes from start, both within an entry's JSON.
func spanOf(start, n int) span {
	return span{int32(start), int32(start + n)} //nolint:gosec // newEntry refuses JSON of 2 GiB or more
}

func (s span) empty() bool { return s.start == s.end }

// summary is what lists, watches and Tables read of a WorkspaceMount
// besides its JSON: where it sorts (cluster, name), what selectors match
// (labels, fieldSet) and what its Table row shows (columns). Its strings
// are the object's: most share memory with the Workspace the informer
// caches.
type summary struct {
	cluster                              logicalcluster.Name
	name                                 string
	labels                               map[string]string
	created                              metav1.Time // in seconds, as the JSON has it
	workspacePath                        string
	mountKind, mountNamespace, mountName string
	phase                                string
	workspacePhase                       string
	shard                                string
	url, reason                          string
	// lastTransition is status.lastTransitionTime, in Unix seconds (0: none).
	lastTransition int64
	ready          bool
	// verbatim tells whether JSON writes each of the strings as it is
	// (jsonVerbatim): then a Table's cells are copied, not scanned.
	verbatim bool
}

// summarize reads the summary of an object.
func summarize(wsm *wsmv1alpha1.WorkspaceMount) summary {
	s := summary{
		cluster:        logicalcluster.From(wsm),
		name:           wsm.Name,
		labels:         wsm.Labels,
		created:        wsm.CreationTimestamp.Rfc3339Copy(),
		workspacePath:  wsm.Status.WorkspacePath,
		mountKind:      wsm.Spec.MountRef.Kind,
		mountNamespace: wsm.Spec.MountRef.Namespace,
		mountName:      wsm.Spec.MountRef.Name,
		// Phases and reasons come from a few values, parsed anew from each
		// status annotation: one copy of each.
		phase:          unique.Make(wsm.Status.Phase).Value(),
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

// strings are the summary's strings.
func (s *summary) strings() []string {
	return []string{
		s.cluster.String(), s.name, s.workspacePath, s.mountKind, s.mountNamespace, s.mountName,
		s.phase, s.workspacePhase, s.shard, s.url, s.reason,
	}
}

// validUTF8 tells whether the summary's strings are what they are once the
// object went through JSON (which replaces invalid UTF-8).
func (s *summary) validUTF8() bool {
	for _, str := range s.strings() {
		if !utf8.ValidString(str) {
			return false
		}
	}
	return true
}

// position is where the object sorts in a list.
func (s *summary) position() position {
	return position{cluster: s.cluster, name: s.name}
}

// fieldSet is what field selectors match on.
func (s *summary) fieldSet() fields.Set {
	return fields.Set{
		"metadata.name":                s.name,
		wsmv1alpha1.FieldPhase:         s.phase,
		wsmv1alpha1.FieldReady:         strconv.FormatBool(s.ready),
		wsmv1alpha1.FieldWorkspacePath: s.workspacePath,
		wsmv1alpha1.FieldShard:         s.shard,
	}
}

// labelSet is what label selectors match on.
func (s *summary) labelSet() labels.Set { return s.labels }

// metadataKey is how the object's metadata starts in its JSON: after its
// kind and apiVersion.
var metadataKey = []byte(`"metadata":`)

// newEntry is the entry of an object, from its JSON.
func newEntry(wsm *wsmv1alpha1.WorkspaceMount) (*entry, error) {
	bare := *wsm
	bare.Status.Transitions, bare.Status.Availability = nil, nil
	object, err := json.Marshal(&bare)
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
	e := &entry{summary: summarize(wsm), json: object, metadata: spanOf(start, len(metadata))}
	if wsm.ResourceVersion != "" {
		// The first key "resourceVersion" of the metadata is its own: the
		// fields before it (name, uid) are strings, whose quotes JSON escapes.
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
	if !e.validUTF8() {
		// Strings JSON changed: what the object reads once decoded.
		decoded, err := e.object(time.Time{})
		if err != nil {
			return nil, err
		}
		e.summary = summarize(decoded)
	}
	if e.lastTransition != 0 && wsm.Status.Availability != nil {
		at, err := storyPosition(object, &wsm.Status)
		if err != nil {
			return nil, err
		}
		e.storyAt = int32(at) //nolint:gosec // within the JSON, under 2 GiB
		e.earlier = earlierOf(wsm.Status.Transitions, wsm.Status.Availability, e.lastTransition)
	}
	return e, nil
}

// storyPosition is where json.Marshal writes status.transitions and
// status.availability in object, the JSON of a WorkspaceMount without them:
// before the status fields that follow them (workspacePhase, workspacePath,
// shard, each if not empty) and the ends of the status and the object.
func storyPosition(object []byte, status *wsmv1alpha1.WorkspaceMountStatus) (int, error) {
	var tail []byte
	for _, field := range []struct{ key, value string }{
		{"workspacePhase", status.WorkspacePhase}, {"workspacePath", status.WorkspacePath}, {"shard", status.Shard},
	} {
		if field.value == "" {
			continue
		}
		value, err := json.Marshal(field.value)
		if err != nil {
			return 0, err
		}
		tail = append(append(append(append(tail, `,"`...), field.key...), `":`...), value...)
	}
	tail = append(tail, "}}"...)
	if !bytes.HasSuffix(object, tail) {
		return 0, errors.New("the status' last fields are not where the JSON of a WorkspaceMount has them")
	}
	return len(object) - len(tail), nil
}

// earlierOf is the story of an object before its current state, which
// began at lastTransition: nil for one state since first seen.
func earlierOf(transitions []wsmv1alpha1.MountTransition, availability *wsmv1alpha1.MountAvailability, lastTransition int64) *earlierStory {
	since := availability.Since.Unix()
	if len(transitions) <= 1 && since == lastTransition && availability.ReadySeconds == 0 {
		return nil
	}
	earlier := &earlierStory{since: since, readySeconds: availability.ReadySeconds}
	for _, t := range transitions[:len(transitions)-1] { // the last is the current state
		earlier.transitions = append(earlier.transitions, storyTransition{
			// A few values, parsed anew from each status annotation: one copy of each.
			phase: unique.Make(t.Phase).Value(), reason: unique.Make(t.Reason).Value(), at: t.Time.Unix(), ready: t.Ready,
		})
	}
	return earlier
}

// availability is the object's status.availability as of now.
func (e *entry) availability(now time.Time) wsmv1alpha1.MountAvailability {
	since, ready := e.lastTransition, int64(0)
	if e.earlier != nil {
		since, ready = e.earlier.since, e.earlier.readySeconds
	}
	a := wsmv1alpha1.MountAvailability{Since: metav1.Unix(since, 0), ReadySeconds: ready, ObservedSeconds: e.lastTransition - since}
	return a.At(now, e.ready)
}

// transitions are the object's status.transitions, the current state's last.
func (e *entry) transitions() []storyTransition {
	current := storyTransition{phase: e.phase, reason: e.reason, at: e.lastTransition, ready: e.ready}
	if e.earlier == nil {
		return []storyTransition{current}
	}
	return append(slices.Clip(e.earlier.transitions), current)
}

// appendStory appends status.transitions and status.availability as of
// now, as json.Marshal writes them after the status' fields before them.
func (e *entry) appendStory(b []byte, now time.Time) []byte {
	b = append(b, `,"transitions":[`...)
	for i, t := range e.transitions() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"phase":`...)
		b = appendJSONString(b, t.phase, nil)
		b = append(b, `,"ready":`...)
		b = strconv.AppendBool(b, t.ready)
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, t.reason, nil)
		b = append(b, `,"time":`...)
		b = appendTime(b, t.at)
		b = append(b, '}')
	}
	a := e.availability(now)
	b = append(b, `],"availability":{"since":`...)
	b = appendTime(b, a.Since.Unix())
	b = append(b, `,"readySeconds":`...)
	b = strconv.AppendInt(b, a.ReadySeconds, 10)
	b = append(b, `,"observedSeconds":`...)
	b = strconv.AppendInt(b, a.ObservedSeconds, 10)
	b = append(b, `,"ratio":"`...)
	b = append(b, a.Ratio...)
	b = append(b, `","currentStateSeconds":`...)
	b = strconv.AppendInt(b, a.CurrentStateSeconds, 10)
	return append(b, '}')
}

// appendTime appends a time in Unix seconds as metav1.Time's JSON.
func appendTime(b []byte, unix int64) []byte {
	b = append(b, '"')
	b = time.Unix(unix, 0).UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// answerTime is the time of an answer, which the availability of its
// objects is as of: time.Now, but in tests.
var answerTime = time.Now

// storyBytes is about the most an answer adds to an entry's JSON: its
// story with MaxTransitions transitions.
const storyBytes = 640

// object decodes the entry's object, its story as of now: the caller's own.
func (e *entry) object(now time.Time) (*wsmv1alpha1.WorkspaceMount, error) {
	wsm := &wsmv1alpha1.WorkspaceMount{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(e.json, wsm); err != nil {
		return nil, fmt.Errorf("decoding the WorkspaceMount %s|%s the store keeps: %w", e.cluster, e.name, err)
	}
	if e.storyAt != 0 {
		for _, t := range e.transitions() {
			wsm.Status.Transitions = append(wsm.Status.Transitions, wsmv1alpha1.MountTransition{
				Phase: t.phase, Ready: t.ready, Reason: t.reason, Time: metav1.Unix(t.at, 0)})
		}
		availability := e.availability(now)
		wsm.Status.Availability = &availability
	}
	return wsm, nil
}

// objectAt is the entry's object with resourceVersion (unless empty) as
// its own, its story as of now, for an answer that cannot return an error:
// the store's JSON is json.Marshal's, which decodes. Should it not, the
// object has the entry's name and cluster only, and the error is logged.
func (e *entry) objectAt(resourceVersion string, now time.Time) *wsmv1alpha1.WorkspaceMount {
	wsm, err := e.object(now)
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

// appendJSON appends the object's JSON, its story as of now, with
// resourceVersion (JSON, a quoted string) as its metadata.resourceVersion
// unless nil. It is the caller's to know that the entry has one
// (e.resourceVersion).
func (e *entry) appendJSON(b, resourceVersion []byte, now time.Time) []byte {
	rest := 0
	if resourceVersion != nil {
		b = append(b, e.json[:e.resourceVersion.start]...)
		b = append(b, resourceVersion...)
		rest = int(e.resourceVersion.end)
	}
	if e.storyAt == 0 {
		return append(b, e.json[rest:]...)
	}
	b = append(b, e.json[rest:e.storyAt]...) // the metadata comes before the status
	b = e.appendStory(b, now)
	return append(b, e.json[e.storyAt:]...)
}

// sameExceptResourceVersion tells whether two entries hold the same object
// but for the resource version: a relist's or a resync's echo.
func sameExceptResourceVersion(a, b *entry) bool {
	return bytes.Equal(a.json[:a.resourceVersion.start], b.json[:b.resourceVersion.start]) &&
		bytes.Equal(a.json[a.resourceVersion.end:], b.json[b.resourceVersion.end:]) &&
		a.storyAt-a.resourceVersion.end == b.storyAt-b.resourceVersion.end && a.lastTransition == b.lastTransition &&
		sameEarlierStory(a.earlier, b.earlier)
}

func sameEarlierStory(a, b *earlierStory) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.since == b.since && a.readySeconds == b.readySeconds && slices.Equal(a.transitions, b.transitions)
}
