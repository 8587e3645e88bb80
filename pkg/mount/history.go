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
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxTransitions is how many transitions a status tells, the current one included.
const MaxTransitions = 5

// Transition is a state a mount entered at Time, with its last reason there;
// docs/design/pkg-mount.md says how the history moves.
type Transition struct {
	Phase  Phase
	Ready  bool
	Reason string
	Time   metav1.Time
}

// MarshalJSON writes the array [phase, ready, reason, time].
func (t Transition) MarshalJSON() ([]byte, error) {
	return marshal([]any{t.Phase, t.Ready, t.Reason, t.Time}), nil
}

func (t *Transition) UnmarshalJSON(data []byte) error {
	var fields []json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("a transition is [phase, ready, reason, time]: %w", err)
	}
	if len(fields) != 4 {
		return fmt.Errorf("a transition is [phase, ready, reason, time], not %d values", len(fields))
	}
	var decoded Transition
	for i, into := range []any{&decoded.Phase, &decoded.Ready, &decoded.Reason, &decoded.Time} {
		if err := json.Unmarshal(fields[i], into); err != nil {
			return fmt.Errorf("a transition is [phase, ready, reason, time]: value %d: %w", i, err)
		}
	}
	*t = decoded
	return nil
}

func (t Transition) bounded() Transition {
	t.Phase = Phase(bound(string(t.Phase), MaxPhase))
	t.Reason = bound(t.Reason, MaxReason)
	return t
}

func (s Status) current() Transition {
	return Transition{Phase: s.Phase, Ready: s.Ready, Reason: s.Reason, Time: s.LastTransitionTime}
}

// Transitions are History and the current state, oldest first.
func (s Status) Transitions() []Transition {
	return append(slices.Clip(s.History), s.current())
}

// FirstSeen is when the controller first saw the mount.
func (s Status) FirstSeen() metav1.Time {
	if s.Since != nil {
		return *s.Since
	}
	return s.LastTransitionTime
}

// ObservedSeconds are the seconds from [Status.FirstSeen] to LastTransitionTime.
func (s Status) ObservedSeconds() int64 {
	return s.LastTransitionTime.Unix() - s.FirstSeen().Unix()
}

// TransitionFrom tells whether s changes phase or readiness from previous, nil for none.
func (s Status) TransitionFrom(previous *Status) bool {
	return previous == nil || s.Phase != previous.Phase || s.Ready != previous.Ready
}

// WithHistory returns s, found at at, with the history carried on from previous, moved only at a
// transition; a previous status from after at is not believed.
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

// checkHistory refuses a history the controller cannot have written.
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

// notReadySpell is, of a transition to ready, when the not-ready spell began and whether the mount
// was ready before it.
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

// NotReadySpell is, of a mount ready again, how long it was not ready, at least.
func (s Status) NotReadySpell() (time.Duration, bool) {
	began, wasReady, ok := s.notReadySpell()
	if !ok || !wasReady {
		return 0, false
	}
	return s.LastTransitionTime.Sub(began.Time), true
}

// TimeToReady is, of a mount first ready after being seen not ready, how long since
// [Status.FirstSeen].
func (s Status) TimeToReady() (time.Duration, bool) {
	_, wasReady, ok := s.notReadySpell()
	if !ok || wasReady {
		return 0, false
	}
	return s.LastTransitionTime.Sub(s.FirstSeen().Time), true
}

// NotBefore returns s without what predates the Workspace's creation, and ok false if its current
// state does; a zero created changes nothing.
func (s Status) NotBefore(created metav1.Time) (status Status, ok bool) {
	if created.IsZero() {
		return s, true
	}
	if s.LastTransitionTime.Before(&created) {
		return Status{}, false
	}
	var kept []Transition
	for _, t := range s.History {
		if !t.Time.Before(&created) {
			kept = append(kept, t)
		}
	}
	s.History = kept
	if s.Since != nil && s.Since.Before(&created) {
		since := created
		s.Since = &since
	}
	s.ReadySeconds = min(s.ReadySeconds, max(0, s.ObservedSeconds()))
	return s, true
}

// EverReady tells whether s says the mount was ever ready.
func (s Status) EverReady() bool {
	return s.Ready || s.ReadySeconds > 0 || slices.ContainsFunc(s.History, func(t Transition) bool { return t.Ready })
}
