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

// This file holds a mount's story in its status: its last transitions and
// how long it was ready since the controller first saw it. Both move only
// at a transition (a change of phase or readiness, TransitionFrom), so the
// status of a mount in a steady state stays byte for byte the same and
// costs no write. Between transitions, the current state's seconds are not
// counted in the status: readers add them as of their own time.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxTransitions is how many transitions a status tells: the current
// state's (Phase, Ready, Reason, LastTransitionTime) and at most
// MaxTransitions-1 before it (History).
const MaxTransitions = 5

// Transition is one state a mount was in: the phase and readiness it
// entered at Time, and its reason (the last it had: a reason may change
// while phase and readiness do not). In the annotation it is a JSON array,
// ["Connecting",false,"MountNotReady","2026-12-06T07:35:00Z"]: a status
// carries up to MaxTransitions-1 of them, in every Workspace the plugin's
// informers cache.
type Transition struct {
	Phase  Phase
	Ready  bool
	Reason string
	Time   metav1.Time
}

// MarshalJSON writes the transition as [phase, ready, reason, time], without
// HTML escaping (as Encode writes the rest).
func (t Transition) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode([]interface{}{t.Phase, t.Ready, t.Reason, t.Time}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads [phase, ready, reason, time].
func (t *Transition) UnmarshalJSON(data []byte) error {
	var fields []json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("a transition is [phase, ready, reason, time]: %w", err)
	}
	if len(fields) != 4 {
		return fmt.Errorf("a transition is [phase, ready, reason, time], not %d values", len(fields))
	}
	var decoded Transition
	for i, into := range []interface{}{&decoded.Phase, &decoded.Ready, &decoded.Reason, &decoded.Time} {
		if err := json.Unmarshal(fields[i], into); err != nil {
			return fmt.Errorf("a transition is [phase, ready, reason, time]: value %d: %w", i, err)
		}
	}
	*t = decoded
	return nil
}

// bounded returns t with its strings within the status' limits.
func (t Transition) bounded() Transition {
	t.Phase = Phase(bound(string(t.Phase), MaxPhase))
	t.Reason = bound(t.Reason, MaxReason)
	return t
}

// current is the status' current state as a Transition.
func (s Status) current() Transition {
	return Transition{Phase: s.Phase, Ready: s.Ready, Reason: s.Reason, Time: s.LastTransitionTime}
}

// Transitions are the status' last transitions, oldest first, at most
// MaxTransitions: History, then the current state.
func (s Status) Transitions() []Transition {
	return append(slices.Clip(s.History), s.current())
}

// FirstSeen is when the controller first saw the mount: Since, or
// LastTransitionTime where the mount has been in one state since.
func (s Status) FirstSeen() metav1.Time {
	if s.Since != nil {
		return *s.Since
	}
	return s.LastTransitionTime
}

// ObservedSeconds are the seconds from FirstSeen to LastTransitionTime: the
// time ReadySeconds is a part of.
func (s Status) ObservedSeconds() int64 {
	return s.LastTransitionTime.Unix() - s.FirstSeen().Unix()
}

// TransitionFrom tells whether s, a status just found, is a transition from
// previous, the status the Workspace's annotation holds (nil: none that can
// be read): a first status, or a change of phase or readiness. Only a
// transition moves LastTransitionTime and the history (WithHistory); a
// change of anything else (a reason, a message, a URL) is not one.
func (s Status) TransitionFrom(previous *Status) bool {
	return previous == nil || s.Phase != previous.Phase || s.Ready != previous.Ready
}

// WithHistory returns s, a status found at the time at, with its
// LastTransitionTime and story carried on from previous (nil: none):
//   - no transition (TransitionFrom): previous' LastTransitionTime, history
//     and availability, unchanged;
//   - a transition: LastTransitionTime at; previous' state appended to the
//     history, the oldest dropped beyond MaxTransitions-1; previous'
//     seconds (from its LastTransitionTime to at) counted as observed, and
//     as ready if it was.
//
// A previous status whose LastTransitionTime is after at, or missing, is
// not one the controller wrote (anyone who may update the Workspace may
// write the annotation): s then starts over, as a first status (no
// history, first seen at).
func (s Status) WithHistory(previous *Status, at metav1.Time) Status {
	s.LastTransitionTime, s.History, s.Since, s.ReadySeconds = at, nil, nil, 0
	if previous == nil || previous.LastTransitionTime.IsZero() || previous.LastTransitionTime.After(at.Time) {
		return s
	}
	if !s.TransitionFrom(previous) {
		s.LastTransitionTime, s.History, s.Since, s.ReadySeconds = previous.LastTransitionTime, previous.History, previous.Since, previous.ReadySeconds
		return s
	}
	since := previous.FirstSeen()
	s.Since = &since
	s.ReadySeconds = previous.ReadySeconds
	if previous.Ready {
		s.ReadySeconds += at.Unix() - previous.LastTransitionTime.Unix()
	}
	kept := previous.History[max(0, len(previous.History)-(MaxTransitions-2)):]
	s.History = append(slices.Clone(kept), previous.current())
	return s
}

// checkHistory refuses a history the controller cannot have written: a
// transition with a phase not in Phases or without a time, transitions out
// of order or after LastTransitionTime, a first sight after the first
// transition, ready seconds below 0 or beyond the seconds observed.
func (s Status) checkHistory() error {
	for i, t := range s.History {
		if !slices.Contains(Phases, t.Phase) {
			return fmt.Errorf("the phase %s of transition %d is none of %v", Quote(string(t.Phase)), i, Phases)
		}
		if t.Time.IsZero() {
			return fmt.Errorf("transition %d has no time", i)
		}
		if i > 0 && t.Time.Before(&s.History[i-1].Time) {
			return fmt.Errorf("transition %d is before transition %d", i, i-1)
		}
	}
	if n := len(s.History); n > 0 && s.LastTransitionTime.Before(&s.History[n-1].Time) {
		return fmt.Errorf("lastTransitionTime is before transition %d", n-1)
	}
	first := s.FirstSeen()
	if len(s.History) > 0 && (first.IsZero() || s.History[0].Time.Before(&first)) {
		return fmt.Errorf("since is not before the first transition")
	}
	if s.Since != nil && (s.Since.IsZero() || s.LastTransitionTime.Before(s.Since)) {
		return fmt.Errorf("since is after lastTransitionTime")
	}
	if observed := s.ObservedSeconds(); s.ReadySeconds < 0 || s.ReadySeconds > observed {
		return fmt.Errorf("readySeconds %d is not between 0 and the %d seconds observed", s.ReadySeconds, observed)
	}
	return nil
}

// notReadySpell is, of a status WithHistory recorded at a transition to
// ready from not ready, when its not-ready spell began (the first not-ready
// state after the last ready one the history keeps, else its oldest state),
// and whether the mount was ever ready before it (a ready state in the
// history, or ready seconds counted). ok is false for any other status.
func (s Status) notReadySpell() (began metav1.Time, wasReady, ok bool) {
	n := len(s.History)
	if !s.Ready || n == 0 || s.History[n-1].Ready {
		return metav1.Time{}, false, false
	}
	i := n - 1
	for i > 0 && !s.History[i-1].Ready {
		i--
	}
	return s.History[i].Time, i > 0 || s.ReadySeconds > 0, true
}

// NotReadySpell tells, of a status WithHistory recorded at a transition,
// whether it is a mount ready again after having been ready before, and
// how long it was not ready: from the first not-ready state after its last
// ready one to LastTransitionTime. When the history no longer keeps that
// ready state (over MaxTransitions-1 not-ready states in a row), it is the
// time since the oldest state kept: the spell lasted at least that long.
func (s Status) NotReadySpell() (time.Duration, bool) {
	began, wasReady, ok := s.notReadySpell()
	if !ok || !wasReady {
		return 0, false
	}
	return s.LastTransitionTime.Sub(began.Time), true
}

// TimeToReady tells, of a status WithHistory recorded at a transition,
// whether it is a mount ready for the first time, after the controller
// first saw it not ready, and how long after it first saw it. (A mount
// ready when first seen is none: nobody knows how long it took. A ready
// state of less than a second that the history no longer keeps, which
// counted no ready second, is not known either: the next ready state is
// then taken for the first.)
func (s Status) TimeToReady() (time.Duration, bool) {
	_, wasReady, ok := s.notReadySpell()
	if !ok || wasReady {
		return 0, false
	}
	return s.LastTransitionTime.Sub(s.FirstSeen().Time), true
}

// NotBefore returns s without what it cannot tell of a Workspace created at
// created (anyone who may update the Workspace may write its annotation):
// transitions before created are dropped, a first sight before it is
// created, and the ready seconds are at most those observed since. A status
// whose LastTransitionTime is before created is not believed at all (ok
// false): like one in the future, it is not one the controller wrote. A
// zero created changes nothing.
func (s Status) NotBefore(created metav1.Time) (status Status, ok bool) {
	if created.IsZero() {
		return s, true
	}
	if s.LastTransitionTime.Before(&created) {
		return Status{}, false
	}
	kept := s.History[:0:0]
	for _, t := range s.History {
		if !t.Time.Before(&created) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	s.History = kept
	if s.Since != nil && s.Since.Before(&created) {
		since := created
		s.Since = &since
	}
	s.ReadySeconds = min(s.ReadySeconds, max(0, s.ObservedSeconds()))
	return s, true
}

// EverReady tells whether s tells of the mount ever being ready: ready now,
// a ready state in its history, or ready seconds counted.
func (s Status) EverReady() bool {
	return s.Ready || s.ReadySeconds > 0 || slices.ContainsFunc(s.History, func(t Transition) bool { return t.Ready })
}
