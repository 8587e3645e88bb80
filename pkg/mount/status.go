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

package mount

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two annotations the controller writes on a mounted Workspace: the
// [Phase] alone, for selectors and columns, and the [Status] as compact JSON.
const (
	PhaseAnnotationKey  = "workspacemounts.io/phase"
	StatusAnnotationKey = "workspacemounts.io/status"
)

// ConditionType is the Workspace condition of --workspace-condition: True when
// the mount is ready, else False (which kcp reads as Unavailable) or Unknown.
// It is not kcp's own WorkspaceMountReady.
const ConditionType = "WorkspaceMountAvailable"

// Phase is the state of a Workspace's mount.
type Phase string

// The four phases a mount object reports, and two for one that cannot be
// read: NotFound (no such object) and Invalid (an unusable reference, or a
// kind that is not served or never a mount kind).
const (
	PhaseReady        Phase = "Ready"
	PhaseInitializing Phase = "Initializing"
	PhaseConnecting   Phase = "Connecting"
	PhaseUnknown      Phase = "Unknown"
	PhaseNotFound     Phase = "NotFound"
	PhaseInvalid      Phase = "Invalid"
)

// Phases lists every [Phase], in a stable order.
var Phases = []Phase{PhaseReady, PhaseInitializing, PhaseConnecting, PhaseUnknown, PhaseNotFound, PhaseInvalid}

// The reasons of the contract, one per situation; docs/design/pkg-mount.md
// says when each is written.
const (
	ReasonMountReady                = "MountReady"
	ReasonMountURLMissing           = "MountURLMissing"
	ReasonMountURLInvalid           = "MountURLInvalid"
	ReasonMountNotReady             = "MountNotReady"
	ReasonMountPhaseUnrecognized    = "MountPhaseUnrecognized"
	ReasonMountObjectNotFound       = "MountObjectNotFound"
	ReasonMountKindUnknown          = "MountKindUnknown"
	ReasonMountReferenceInvalid     = "MountReferenceInvalid"
	ReasonMountKindNotAllowed       = "MountKindNotAllowed"
	ReasonMountInformerLimitReached = "MountInformerLimitReached"
	ReasonMountKindNotAnswering     = "MountKindNotAnswering"
	ReasonMountHeartbeatExpired     = "MountHeartbeatExpired"
	// ReasonPending is a mounted Workspace the controller has not reached yet.
	ReasonPending = "Pending"
)

// The reasons of [ConditionType], never of the status annotation, while the
// gate of --workspace-condition holds it Unknown instead of False: the mount
// has not been not ready for --workspace-condition-delay yet, or
// --max-unavailable Workspaces of the shard already have it False.
const (
	ReasonGateDelayed = "GateDelayed"
	ReasonGateHeld    = "GateHeld"
)

var pending = Status{
	Phase:   PhaseUnknown,
	Reason:  ReasonPending,
	Message: "The workspacemounts controller has not reached this Workspace yet.",
}

// CurrentStatus is the status every reader shows of a mounted Workspace: the
// one [StatusOf] reads, or phase Unknown with [ReasonPending].
func CurrentStatus(annotations map[string]string) Status {
	if status, found := StatusOf(annotations); found {
		return status
	}
	return pending
}

// KindResolved tells whether the reason says the reference's kind resolved to
// a served, watched resource: the object was read or found missing. Any other
// reason, a later one included, says no.
func (s Status) KindResolved() bool {
	switch s.Reason {
	case ReasonMountReady, ReasonMountURLMissing, ReasonMountURLInvalid, ReasonMountNotReady, ReasonMountPhaseUnrecognized, ReasonMountObjectNotFound,
		ReasonMountHeartbeatExpired:
		return true
	}
	return false
}

// DefaultMaxMountInformers is the default of --max-mount-informers, which also
// bounds the kind values of the mount gauges.
const DefaultMaxMountInformers = 100

// Limits, in bytes, of what the controller copies from a tenant's mount
// object into the status annotation, so that no mount object makes a
// Workspace's annotations too large to write; [Encode] stays below
// MaxStatusAnnotationBytes. MaxReferenceField is longer than any field of a
// valid reference, so only an invalid one is cut.
const (
	MaxStatusAnnotationBytes = 16 << 10
	MaxConditions            = 8 // conditions, not bytes
	MaxConditionType         = 128
	MaxConditionStatus       = 16
	MaxConditionReason       = 128
	MaxConditionMessage      = 256
	MaxURL                   = 2048
	MaxMessage               = 1024
	MaxReason                = 128
	MaxPhase                 = 16
	MaxReferenceField        = 320
)

// TruncationMarker ends a string [Truncate] cut.
const TruncationMarker = "..."

// Condition is one of the mount object's own status.conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Status is the value of [StatusAnnotationKey]. History, Since and
// ReadySeconds are the mount's history before the current state, which
// [Status.WithHistory] moves only at a transition: History the states before
// the current one, oldest first; Since when the controller first saw the
// mount (nil: at LastTransitionTime); ReadySeconds the seconds ready from
// Since to LastTransitionTime.
type Status struct {
	Phase              Phase        `json:"phase"`
	Ready              bool         `json:"ready"`
	URL                string       `json:"url,omitempty"`
	Reason             string       `json:"reason"`
	Message            string       `json:"message"`
	MountRef           Reference    `json:"mountRef"`
	LastTransitionTime metav1.Time  `json:"lastTransitionTime"`
	Conditions         []Condition  `json:"conditions,omitempty"`
	History            []Transition `json:"history,omitempty"`
	Since              *metav1.Time `json:"since,omitempty"`
	ReadySeconds       int64        `json:"readySeconds,omitempty"`
}

// Bounded returns s with every string made one line by [Sanitize] and cut by
// [Truncate] to its limit, and at most [MaxConditions] conditions. It is
// idempotent.
func (s Status) Bounded() Status {
	b := s
	b.Phase = Phase(bound(string(s.Phase), MaxPhase))
	b.URL = bound(s.URL, MaxURL)
	b.Reason = bound(s.Reason, MaxReason)
	b.Message = bound(s.Message, MaxMessage)
	b.MountRef = s.MountRef.Bounded()
	b.Conditions = nil
	for _, c := range s.Conditions[:min(len(s.Conditions), MaxConditions)] {
		b.Conditions = append(b.Conditions, BoundedCondition(c))
	}
	b.History = nil
	for _, t := range s.History[max(0, len(s.History)-(MaxTransitions-1)):] {
		b.History = append(b.History, t.bounded())
	}
	if s.Since != nil {
		b.Since = s.Since.DeepCopy()
	}
	return b
}

// BoundedCondition returns c within its limits, as [Status.Bounded] does.
func BoundedCondition(c Condition) Condition {
	return Condition{
		Type:    bound(c.Type, MaxConditionType),
		Status:  bound(c.Status, MaxConditionStatus),
		Reason:  bound(c.Reason, MaxConditionReason),
		Message: bound(c.Message, MaxConditionMessage),
	}
}

// Encode returns the compact JSON of [Status.Bounded], dropping conditions from
// the end until it is shorter than [MaxStatusAnnotationBytes]; TestEncodeWorstCase
// proves that always suffices.
func (s Status) Encode() string {
	b := s.Bounded()
	data := marshal(b)
	for len(data) >= MaxStatusAnnotationBytes && len(b.Conditions) > 0 {
		b.Conditions = b.Conditions[:len(b.Conditions)-1]
		data = marshal(b)
	}
	if len(data) >= MaxStatusAnnotationBytes {
		panic(fmt.Sprintf("a bounded mount status of %d bytes", len(data)))
	}
	return string(data)
}

// marshal is JSON without HTML escaping; a Status holds nothing that fails.
func marshal(v any) []byte {
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding a mount status: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ParseStatus reads the status annotation, refusing what the controller cannot
// have written (too long, not JSON, an unknown phase, a history that does not
// add up), and bounds it as [Status.Bounded] does.
func ParseStatus(value string) (Status, error) {
	if len(value) >= MaxStatusAnnotationBytes {
		return Status{}, fmt.Errorf("the annotation %s is not a mount status: %d bytes, at most %d", StatusAnnotationKey, len(value), MaxStatusAnnotationBytes-1)
	}
	var s Status
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return Status{}, fmt.Errorf("the annotation %s is not a mount status: %w", StatusAnnotationKey, err)
	}
	if !slices.Contains(Phases, s.Phase) {
		return Status{}, fmt.Errorf("the annotation %s is not a mount status: phase %s is none of %v", StatusAnnotationKey, Quote(string(s.Phase)), Phases)
	}
	if err := s.checkHistory(); err != nil {
		return Status{}, fmt.Errorf("the annotation %s is not a mount status: %w", StatusAnnotationKey, err)
	}
	return s.Bounded(), nil
}

// StatusOf returns the status the annotations carry, and whether it can be read.
func StatusOf(annotations map[string]string) (Status, bool) {
	value, found := annotations[StatusAnnotationKey]
	if !found {
		return Status{}, false
	}
	s, err := ParseStatus(value)
	return s, err == nil
}

// Truncate cuts s to at most limit bytes on a character boundary, ending a cut
// string with [TruncationMarker]; limit must exceed the marker's length.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len(TruncationMarker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + TruncationMarker
}

func bound(s string, limit int) string {
	return Truncate(Sanitize(s), limit)
}

// Sanitize replaces by a space each control or format character, U+2028 and
// U+2029, and invalid UTF-8 by U+FFFD, so that a string a tenant wrote cannot
// change how readers see a line; docs/design/pkg-mount.md lists why each.
// It never lengthens a valid string.
func Sanitize(s string) string {
	clean := utf8.ValidString(s)
	for i := 0; clean && i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		clean = !needsReplacing(r)
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // an invalid byte is utf8.RuneError, written as U+FFFD
		if needsReplacing(r) {
			b.WriteByte(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsReplacing(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// The labels the plugin keeps of a Workspace, whose tenant may put any number
// on it: [BoundedLabels] keeps those that fit within MaxLabels and
// MaxLabelBytes, and LabelsCutAnnotationKey, on the cached Workspace and its
// WorkspaceMount, counts the others. A label selector sees only those kept.
const (
	MaxLabels              = 64
	MaxLabelBytes          = 4 << 10
	LabelsCutAnnotationKey = "workspacemounts.io/labels-cut"
)

// BoundedLabels returns the labels kept, in the order of their keys, and how
// many were not; labels itself when all are kept. It is idempotent.
func BoundedLabels(labels map[string]string) (map[string]string, int) {
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	if len(labels) <= MaxLabels && size <= MaxLabelBytes {
		return labels, 0
	}
	keys := slices.Sorted(maps.Keys(labels))
	kept := make(map[string]string, MaxLabels)
	size = 0
	for _, k := range keys {
		if len(kept) == MaxLabels {
			break
		}
		if n := len(k) + len(labels[k]); size+n <= MaxLabelBytes {
			kept[k] = labels[k]
			size += n
		}
	}
	return kept, len(labels) - len(kept)
}

// LabelsCut is the count [LabelsCutAnnotationKey] holds, 0 if none.
func LabelsCut(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[LabelsCutAnnotationKey])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
