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

// The annotations the controller writes on a mounted Workspace.
const (
	PhaseAnnotationKey  = "workspacemounts.io/phase"
	StatusAnnotationKey = "workspacemounts.io/status"
)

// ConditionType is the Workspace condition of --workspace-condition, not kcp's own
// WorkspaceMountReady.
const ConditionType = "WorkspaceMountAvailable"

// Phase is the state of a Workspace's mount.
type Phase string

// The four phases a mount object reports, and two for one that cannot be read.
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

// The reasons of the contract; docs/design/pkg-mount.md says when each is written.
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
	ReasonPending                   = "Pending"
)

// The reasons of [ConditionType], never of the annotation, while the gate of --workspace-condition
// holds it Unknown, not False.
const (
	ReasonGateDelayed = "GateDelayed"
	ReasonGateHeld    = "GateHeld"
)

var pending = Status{
	Phase:   PhaseUnknown,
	Reason:  ReasonPending,
	Message: "The workspacemounts controller has not reached this Workspace yet.",
}

// CurrentStatus is what readers show: the status [StatusOf] reads, or [ReasonPending].
func CurrentStatus(annotations map[string]string) Status {
	if status, found := StatusOf(annotations); found {
		return status
	}
	return pending
}

// KindResolved tells whether the reason says the kind resolved to a served, watched resource.
func (s Status) KindResolved() bool {
	switch s.Reason {
	case ReasonMountReady, ReasonMountURLMissing, ReasonMountURLInvalid, ReasonMountNotReady, ReasonMountPhaseUnrecognized, ReasonMountObjectNotFound,
		ReasonMountHeartbeatExpired:
		return true
	}
	return false
}

// DefaultMaxMountInformers is the default of --max-mount-informers.
const DefaultMaxMountInformers = 100

// Limits, in bytes, of what the controller copies from a tenant's mount object, so that none makes
// a Workspace's annotations too large to write.
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

// Condition is one of the mount object's status.conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Status is the value of [StatusAnnotationKey]; History, Since and ReadySeconds move only at a
// transition ([Status.WithHistory]).
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

// Bounded returns s within every limit, each string made one line by [Sanitize]; it is idempotent.
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

// BoundedCondition returns c within its limits.
func BoundedCondition(c Condition) Condition {
	return Condition{
		Type:    bound(c.Type, MaxConditionType),
		Status:  bound(c.Status, MaxConditionStatus),
		Reason:  bound(c.Reason, MaxConditionReason),
		Message: bound(c.Message, MaxConditionMessage),
	}
}

// Encode returns the compact JSON of [Status.Bounded], shorter than [MaxStatusAnnotationBytes] by
// dropping conditions, which TestEncodeWorstCase proves enough.
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

// marshal is JSON without HTML escaping.
func marshal(v any) []byte {
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding a mount status: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ParseStatus reads the status annotation, refusing what the controller cannot have written, and
// bounds it.
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

// StatusOf returns the readable status the annotations carry.
func StatusOf(annotations map[string]string) (Status, bool) {
	value, found := annotations[StatusAnnotationKey]
	if !found {
		return Status{}, false
	}
	s, err := ParseStatus(value)
	return s, err == nil
}

// Truncate cuts s to limit bytes on a character boundary, ending with [TruncationMarker].
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

// Sanitize replaces by a space what would change how a tenant's string shows
// (docs/design/pkg-mount.md), and invalid UTF-8 by U+FFFD.
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

// The labels kept of a Workspace, whose tenant may put any number on it; LabelsCutAnnotationKey
// counts the others.
const (
	MaxLabels              = 64
	MaxLabelBytes          = 4 << 10
	LabelsCutAnnotationKey = "workspacemounts.io/labels-cut"
)

// BoundedLabels returns the labels kept, by key order, and how many were not.
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

func LabelsCut(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[LabelsCutAnnotationKey])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
