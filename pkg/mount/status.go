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
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two annotations the controller writes on a mounted Workspace. With
// --workspace-condition it also keeps ConditionType in the Workspace's
// status, and with --workspace-url its spec.URL.
const (
	// PhaseAnnotationKey holds the Phase alone, for selectors and columns.
	PhaseAnnotationKey = "workspacemounts.io/phase"
	// StatusAnnotationKey holds the Status as compact JSON.
	StatusAnnotationKey = "workspacemounts.io/status"
)

// ConditionType is the type of the condition the controller keeps on a
// mounted Workspace with --workspace-condition: True when the mount is ready,
// False (kcp then marks the Workspace Unavailable: any False condition whose
// type starts with "Workspace" does) or Unknown otherwise. It is not kcp's
// own WorkspaceMountReady, which kcp's in-tree mounts controller writes.
const ConditionType = "WorkspaceMountAvailable"

// Phase is the state of a Workspace's mount.
type Phase string

// The phases: the four a mount object reports, and two for a mount object
// that cannot be read.
const (
	PhaseReady        Phase = "Ready"
	PhaseInitializing Phase = "Initializing"
	PhaseConnecting   Phase = "Connecting"
	PhaseUnknown      Phase = "Unknown"
	// PhaseNotFound: the mount object does not exist.
	PhaseNotFound Phase = "NotFound"
	// PhaseInvalid: the reference cannot name an object, or its kind is not
	// served or is never a mount kind.
	PhaseInvalid Phase = "Invalid"
)

// Phases lists every Phase, in a stable order.
var Phases = []Phase{PhaseReady, PhaseInitializing, PhaseConnecting, PhaseUnknown, PhaseNotFound, PhaseInvalid}

// The reasons, one per situation of the contract.
const (
	ReasonMountReady = "MountReady"
	// ReasonMountURLMissing: the mount object is Ready with no status.URL.
	ReasonMountURLMissing = "MountURLMissing"
	// ReasonMountURLInvalid: the mount object is Ready with a status.URL
	// that URLRule refuses, by its form or its host; the message says why.
	ReasonMountURLInvalid        = "MountURLInvalid"
	ReasonMountNotReady          = "MountNotReady"
	ReasonMountPhaseUnrecognized = "MountPhaseUnrecognized"
	ReasonMountObjectNotFound    = "MountObjectNotFound"
	ReasonMountKindUnknown       = "MountKindUnknown"
	ReasonMountReferenceInvalid  = "MountReferenceInvalid"
	// ReasonMountKindNotAllowed: the reference names a kind of kcp's or
	// Kubernetes' own API groups (GroupAllowed); phase Invalid.
	ReasonMountKindNotAllowed = "MountKindNotAllowed"
)

// ReasonMountInformerLimitReached: the kind resolves, but the controller
// already watches --max-mount-informers mount resources; phase Unknown.
const ReasonMountInformerLimitReached = "MountInformerLimitReached"

// ReasonMountKindNotAnswering: kcp does not answer reads of the kind's
// mount objects in the Workspace's cluster within the plugin's request
// timeout (a conversion webhook that never answers, say), and the plugin
// reads them again only after a backoff; phase Unknown.
const ReasonMountKindNotAnswering = "MountKindNotAnswering"

// The reasons of the condition ConditionType (never of the status
// annotation, which always tells the mount's own state) while the gate of
// --workspace-condition keeps it from False, so that kcp keeps routing the
// Workspace's requests to its spec.URL: status Unknown, and the message
// is the contract's, followed by why it is not False.
const (
	// ReasonGateDelayed: the mount has not been not ready for
	// --workspace-condition-delay yet.
	ReasonGateDelayed = "GateDelayed"
	// ReasonGateHeld: --max-unavailable Workspaces of the shard already
	// have the condition False.
	ReasonGateHeld = "GateHeld"
)

// ReasonMountHeartbeatExpired: with --mount-heartbeat-timeout, the mount
// object's status carries a heartbeat (status.lastHeartbeatTime, a
// condition's lastHeartbeatTime or status.lastProxyHeartbeatTime; the newest
// counts) older than the timeout, or further ahead of the controller's clock
// than the timeout: its provider stopped writing, whatever its phase says;
// phase Unknown.
const ReasonMountHeartbeatExpired = "MountHeartbeatExpired"

// ReasonPending is the reason of a mounted Workspace the controller has not
// reached yet: it carries no status the controller can have written.
const ReasonPending = "Pending"

// pending is the status readers show for such a Workspace.
var pending = Status{
	Phase:   PhaseUnknown,
	Reason:  ReasonPending,
	Message: "The workspacemounts controller has not reached this Workspace yet.",
}

// CurrentStatus is the mount status of a mounted Workspace as every reader
// shows it (the virtual workspace, the metrics): its status annotation
// (StatusOf), or, where it has none the controller can have written, phase
// Unknown with reason ReasonPending.
func CurrentStatus(annotations map[string]string) Status {
	if status, found := StatusOf(annotations); found {
		return status
	}
	return pending
}

// KindResolved tells whether a status says its reference's kind resolved to a
// served resource that the controller watches: one of the reasons a mount
// object was read, or found missing. It is false for every other reason,
// including ones added later, and for a status nobody wrote (the controller
// has not reached the Workspace).
func (s Status) KindResolved() bool {
	switch s.Reason {
	case ReasonMountReady, ReasonMountURLMissing, ReasonMountURLInvalid, ReasonMountNotReady, ReasonMountPhaseUnrecognized, ReasonMountObjectNotFound,
		ReasonMountHeartbeatExpired:
		return true
	}
	return false
}

// DefaultMaxMountInformers is the default of --max-mount-informers: how many
// mount resources the controller watches at most, and how many kind values the
// mount gauges take at most.
const DefaultMaxMountInformers = 100

// Limits on the status annotation. A mount object is written by a tenant, and
// the controller reads it with its own credentials: what it copies from it is
// cut to these sizes (in bytes, on a character boundary, the cut marked by
// TruncationMarker), so that no mount object can make a Workspace's
// annotations too large to write.
const (
	// MaxStatusAnnotationBytes bounds the whole status annotation: Encode's
	// result is always shorter, and ParseStatus refuses a longer value. kcp
	// refuses a Workspace whose annotations exceed 256 KiB in total.
	MaxStatusAnnotationBytes = 16 << 10
	// MaxConditions is the number of the mount object's conditions copied.
	MaxConditions = 8
	// MaxConditionType bounds a condition's type.
	MaxConditionType = 128
	// MaxConditionStatus bounds a condition's status (True, False, Unknown).
	MaxConditionStatus = 16
	// MaxConditionReason bounds a condition's reason.
	MaxConditionReason = 128
	// MaxConditionMessage bounds a condition's message.
	MaxConditionMessage = 256
	// MaxURL bounds the mount object's status.URL.
	MaxURL = 2048
	// MaxMessage bounds the status' own message, which quotes the reference
	// and the failing condition.
	MaxMessage = 1024
	// MaxReason bounds the status' own reason, one of the Reason constants.
	MaxReason = 128
	// MaxPhase bounds the phase, one of Phases.
	MaxPhase = 16
	// MaxReferenceField bounds each field of mountRef. It is longer than any
	// field of a valid reference (apiVersion: a 253-byte group, "/", a 63-byte
	// version), so only an invalid reference is cut.
	MaxReferenceField = 320
)

// TruncationMarker ends a string Truncate cut.
const TruncationMarker = "..."

// Condition is one of the mount object's own status.conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Status is the value of StatusAnnotationKey.
type Status struct {
	Phase              Phase       `json:"phase"`
	Ready              bool        `json:"ready"`
	URL                string      `json:"url,omitempty"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	MountRef           Reference   `json:"mountRef"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	Conditions         []Condition `json:"conditions,omitempty"`
	// History, Since and ReadySeconds are the mount's story before the
	// current state (history.go); WithHistory moves them at a transition
	// only, so a steady state writes nothing.
	//
	// History are the states before the current one, oldest first, at most
	// MaxTransitions-1: the current one is Phase, Ready, Reason and
	// LastTransitionTime.
	History []Transition `json:"history,omitempty"`
	// Since is when the controller first saw the mount; nil: at
	// LastTransitionTime (the mount has been in one state since).
	Since *metav1.Time `json:"since,omitempty"`
	// ReadySeconds are the seconds the mount was ready from Since to
	// LastTransitionTime.
	ReadySeconds int64 `json:"readySeconds,omitempty"`
}

// Bounded returns s with every string within its limit: control and format
// characters (and U+2028, U+2029) replaced by spaces, invalid UTF-8 by
// U+FFFD (Sanitize), then cut by Truncate; and at most MaxConditions
// conditions. Bounded is idempotent.
func (s Status) Bounded() Status {
	b := s
	b.Phase = Phase(bound(string(s.Phase), MaxPhase))
	b.URL = bound(s.URL, MaxURL)
	b.Reason = bound(s.Reason, MaxReason)
	b.Message = bound(s.Message, MaxMessage)
	b.MountRef = s.MountRef.Bounded()
	b.Conditions = nil
	for i, c := range s.Conditions {
		if i == MaxConditions {
			break
		}
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

// BoundedCondition returns c with every field within its limit, as Bounded does.
func BoundedCondition(c Condition) Condition {
	return Condition{
		Type:    bound(c.Type, MaxConditionType),
		Status:  bound(c.Status, MaxConditionStatus),
		Reason:  bound(c.Reason, MaxConditionReason),
		Message: bound(c.Message, MaxConditionMessage),
	}
}

// Encode returns the compact JSON of the status, Bounded. It is always shorter
// than MaxStatusAnnotationBytes: after Bounded, JSON escaping at most doubles a
// string (only '"' and '\' are escaped: no HTML escaping, no control
// characters left), so without conditions the largest status, its history
// included, is about 10 KiB;
// conditions are dropped from the end until the rest fits.
func (s Status) Encode() string {
	b := s.Bounded()
	data := marshal(b)
	for len(data) >= MaxStatusAnnotationBytes && len(b.Conditions) > 0 {
		b.Conditions = b.Conditions[:len(b.Conditions)-1]
		data = marshal(b)
	}
	if len(data) >= MaxStatusAnnotationBytes {
		// Not reachable with the limits above; TestEncodeWorstCase proves it.
		panic(fmt.Sprintf("a bounded mount status of %d bytes", len(data)))
	}
	return string(data)
}

func marshal(s Status) []byte {
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(s); err != nil {
		// Only strings, bools and times: Encode cannot fail.
		panic(fmt.Sprintf("encoding a mount status: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ParseStatus reads the status annotation value. It refuses a value the
// controller cannot have written (MaxStatusAnnotationBytes or longer, not
// JSON, a phase not in Phases, a history that does not add up: checkHistory),
// and bounds what it returns, so that a reader of an annotation a user wrote
// gets no more than the controller would write.
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

// StatusOf returns the status a Workspace's annotations carry, and whether they
// carry one that can be read.
func StatusOf(annotations map[string]string) (Status, bool) {
	value, found := annotations[StatusAnnotationKey]
	if !found {
		return Status{}, false
	}
	s, err := ParseStatus(value)
	return s, err == nil
}

// Truncate cuts s to at most limit bytes without splitting a UTF-8 character,
// ending a cut string with TruncationMarker. limit must exceed the marker's length.
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

// bound makes s printable on one line (Sanitize), then cuts it to limit bytes.
func bound(s string, limit int) string {
	return Truncate(Sanitize(s), limit)
}

// Sanitize replaces by spaces what would let a string a tenant wrote change
// how other readers see it: control characters (category Cc: terminal escape
// sequences, new lines), U+2028 and U+2029 (which JSON escapes, and which
// break lines), and every format character (category Cf: the bidi controls
// U+202A to U+202E and U+2066 to U+2069, which reorder a line, e.g.
// "ok \u202egnp.exe" shown as "ok exe.png"; zero-width characters U+200B to
// U+200F, U+2060 and U+FEFF, which make two strings that look alike differ;
// soft hyphens, tag characters). Invalid UTF-8 becomes U+FFFD. Nothing else
// changes: every other rune, printable or not (spaces of other widths,
// private use, unassigned), is kept as it is.
//
// Sanitize never lengthens a valid string (it replaces a rune by one byte),
// so a string that fits a limit fits it sanitized; an invalid byte becomes
// the three bytes of U+FFFD, which Truncate then bounds.
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

// needsReplacing tells whether Sanitize replaces r by a space.
func needsReplacing(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
