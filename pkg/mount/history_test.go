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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var historyStart = time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)

// at is historyStart plus seconds.
func at(seconds int) metav1.Time {
	return metav1.NewTime(historyStart.Add(time.Duration(seconds) * time.Second))
}

var (
	readyStatus      = Status{Phase: PhaseReady, Ready: true, Reason: ReasonMountReady, URL: "https://x"}
	connectingStatus = Status{Phase: PhaseConnecting, Reason: ReasonMountNotReady}
	unknownStatus    = Status{Phase: PhaseUnknown, Reason: ReasonMountPhaseUnrecognized}
)

// record is what the controller does at each reconcile: the status found
// at a time, carried on from what the annotation holds, written, read back.
func record(t *testing.T, previous *Status, found Status, seconds int) *Status {
	t.Helper()
	parsed, err := ParseStatus(found.WithHistory(previous, at(seconds)).Encode())
	require.NoError(t, err)
	return &parsed
}

func TestHistoryKeepsTheLastTransitions(t *testing.T) {
	t.Parallel()
	var s *Status
	for i := range MaxTransitions + 1 { // the 6th transition drops the oldest
		next := connectingStatus
		if i%2 == 0 {
			next = readyStatus
		}
		s = record(t, s, next, 60*i)
		require.Len(t, s.Transitions(), min(i+1, MaxTransitions))
	}
	times := make([]int64, 0, MaxTransitions)
	for _, tr := range s.Transitions() {
		times = append(times, tr.Time.Unix()-historyStart.Unix())
	}
	require.Equal(t, []int64{60, 120, 180, 240, 300}, times, "the first, at 0, is dropped")
	current := s.Transitions()[4]
	require.Equal(t, Transition{Phase: PhaseConnecting, Reason: ReasonMountNotReady}, Transition{Phase: current.Phase, Ready: current.Ready, Reason: current.Reason}, "the current state last")
	require.Equal(t, at(0).Unix(), s.FirstSeen().Unix(), "first seen outlives the transitions kept")
	require.Equal(t, int64(300), s.ObservedSeconds())
	require.Equal(t, int64(180), s.ReadySeconds, "ready 0-60, 120-180, 240-300")
}

func TestHistoryCountsAcrossFlips(t *testing.T) {
	t.Parallel()
	s := record(t, nil, connectingStatus, 0)
	require.Equal(t, at(0).Unix(), s.FirstSeen().Unix())
	require.Zero(t, s.ObservedSeconds())
	require.Nil(t, s.Since, "one state since first seen: nothing more is written")
	require.JSONEq(t, `{"phase":"Connecting","ready":false,"reason":"MountNotReady","message":"","mountRef":{"apiVersion":"","kind":"","name":""},"lastTransitionTime":"2026-12-06T07:00:00Z"}`, s.Encode())
	require.NotContains(t, s.Encode(), "history")

	for _, step := range []struct {
		status              Status
		seconds             int
		ready, observed     int64
		transitions         int
		spell, timeToReady  time.Duration
		hasSpell, firstTime bool
	}{
		{status: connectingStatus, seconds: 30, transitions: 1}, // no transition
		{status: readyStatus, seconds: 100, observed: 100, transitions: 2, timeToReady: 100 * time.Second, firstTime: true},
		{status: readyStatus, seconds: 150, observed: 100, transitions: 2},                                                      // still ready: nothing counted yet
		{status: connectingStatus, seconds: 160, ready: 60, observed: 160, transitions: 3},                                      // ready 100-160
		{status: unknownStatus, seconds: 200, ready: 60, observed: 200, transitions: 4},                                         // not ready to not ready
		{status: readyStatus, seconds: 260, ready: 60, observed: 260, transitions: 5, spell: 100 * time.Second, hasSpell: true}, // not ready 160-260
		{status: connectingStatus, seconds: 1000, ready: 800, observed: 1000, transitions: 5},                                   // ready 260-1000
		{status: readyStatus, seconds: 1001, ready: 800, observed: 1001, transitions: 5, spell: time.Second, hasSpell: true},
	} {
		transition := step.status.TransitionFrom(s)
		s = record(t, s, step.status, step.seconds)
		require.Equal(t, step.ready, s.ReadySeconds, "at %d", step.seconds)
		require.Equal(t, step.observed, s.ObservedSeconds(), "at %d", step.seconds)
		require.Len(t, s.Transitions(), step.transitions, "at %d", step.seconds)
		if !transition { // the controller observes a status at its transition only
			continue
		}
		spell, hasSpell := s.NotReadySpell()
		require.Equal(t, step.hasSpell, hasSpell, "at %d", step.seconds)
		require.Equal(t, step.spell, spell, "at %d", step.seconds)
		timeToReady, firstTime := s.TimeToReady()
		require.Equal(t, step.firstTime, firstTime, "at %d", step.seconds)
		require.Equal(t, step.timeToReady, timeToReady, "at %d", step.seconds)
	}
}

func TestHistoryNoChangeWithoutTransition(t *testing.T) {
	t.Parallel()
	s := record(t, nil, readyStatus, 0)
	s = record(t, s, connectingStatus, 10)
	written := s.Encode()
	// Reconciled twice later: the same annotation, byte for byte, though
	// the reason and the message changed.
	again := connectingStatus
	again.Reason, again.Message = ReasonMountInformerLimitReached, "another message"
	for _, seconds := range []int{20, 3000} {
		next := again.WithHistory(s, at(seconds))
		require.False(t, again.TransitionFrom(s))
		require.Equal(t, s.LastTransitionTime, next.LastTransitionTime)
		require.Equal(t, s.History, next.History)
		require.Equal(t, s.Since, next.Since)
		require.Equal(t, s.ReadySeconds, next.ReadySeconds)
		s = &next
	}
	s.Reason, s.Message = connectingStatus.Reason, connectingStatus.Message
	require.Equal(t, written, s.Encode())
	require.True(t, readyStatus.TransitionFrom(s))
	require.True(t, readyStatus.TransitionFrom(nil), "a first status is a transition")
	ready := *s
	ready.Ready = true
	require.True(t, ready.TransitionFrom(s), "readiness alone is a transition (Ready without a URL, then with)")
}

func TestHistoryDistrustsTheFuture(t *testing.T) {
	t.Parallel()
	s := record(t, nil, readyStatus, 0)
	s = record(t, s, connectingStatus, 100)
	// Someone wrote the annotation with a time after the controller's now.
	forged := *s
	forged.LastTransitionTime = at(10_000)
	for _, found := range []Status{connectingStatus, readyStatus} {
		next := found.WithHistory(&forged, at(200))
		require.Equal(t, at(200).Unix(), next.LastTransitionTime.Unix())
		require.Empty(t, next.History)
		require.Nil(t, next.Since)
		require.Zero(t, next.ReadySeconds)
	}
}

func TestParseStatusHistory(t *testing.T) {
	t.Parallel()
	const ltt = `"reason":"","message":"","mountRef":{"apiVersion":"","kind":"","name":""},"lastTransitionTime":"2026-12-06T08:00:00Z"`
	for _, tc := range []struct {
		name, value, wantErr string
	}{
		{name: "written by the controller", value: `{"phase":"Ready","ready":true,` + ltt + `,"history":[["Connecting",false,"MountNotReady","2026-12-06T07:00:00Z"]],"since":"2026-12-06T06:00:00Z","readySeconds":10}`},
		{name: "written before histories", value: `{"phase":"Ready","ready":true,` + ltt + `}`},
		{name: "a transition is an array", value: `{"phase":"Ready",` + ltt + `,"history":[{"phase":"Ready"}]}`, wantErr: "a transition is [phase, ready, reason, time]"},
		{name: "of four values", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready",true,"r"]]}`, wantErr: "not 3 values"},
		{name: "typed", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready","yes","r","2026-12-06T07:00:00Z"]]}`, wantErr: "value 1"},
		{name: "unknown phase", value: `{"phase":"Ready",` + ltt + `,"history":[["Pwned",true,"r","2026-12-06T07:00:00Z"]],"since":"2026-12-06T07:00:00Z"}`, wantErr: `the phase "Pwned" of transition 0`},
		{name: "no time", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready",true,"r",null]]}`, wantErr: "transition 0 has no time"},
		{name: "out of order", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready",true,"r","2026-12-06T07:30:00Z"],["Ready",true,"r","2026-12-06T07:00:00Z"]],"since":"2026-12-06T07:00:00Z"}`, wantErr: "transition 1 is before transition 0"},
		{name: "after lastTransitionTime", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready",true,"r","2026-12-06T09:00:00Z"]],"since":"2026-12-06T07:00:00Z"}`, wantErr: "lastTransitionTime is before transition 0"},
		{name: "history without since", value: `{"phase":"Ready",` + ltt + `,"history":[["Ready",true,"r","2026-12-06T07:00:00Z"]]}`, wantErr: "since is not before the first transition"},
		{name: "since after lastTransitionTime", value: `{"phase":"Ready",` + ltt + `,"since":"2026-12-06T09:00:00Z"}`, wantErr: "since is after lastTransitionTime"},
		{name: "since without lastTransitionTime", value: `{"phase":"Ready","since":"2026-12-06T09:00:00Z"}`, wantErr: "since is after lastTransitionTime"},
		{name: "negative", value: `{"phase":"Ready",` + ltt + `,"readySeconds":-1}`, wantErr: "readySeconds -1 is not between 0 and the 0 seconds observed"},
		{name: "more than observed", value: `{"phase":"Ready",` + ltt + `,"since":"2026-12-06T07:00:00Z","readySeconds":3601}`, wantErr: "readySeconds 3601 is not between 0 and the 3600 seconds observed"},
		{name: "absurd", value: `{"phase":"Ready",` + ltt + `,"readySeconds":9223372036854775807}`, wantErr: "not between 0 and the 0 seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseStatus(tc.value)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.value, s.Encode(), "the controller's own encoding")
		})
	}

	t.Run("more transitions than kept: the last ones", func(t *testing.T) {
		t.Parallel()
		value := `{"phase":"Ready",` + ltt + `,"history":[` + strings.Repeat(`["Ready",true,"\u202eR","2026-12-06T07:00:00Z"],`, 9) +
			`["Connecting",false,"MountNotReady","2026-12-06T07:30:00Z"]],"since":"2026-12-06T07:00:00Z"}`
		s, err := ParseStatus(value)
		require.NoError(t, err)
		require.Len(t, s.History, MaxTransitions-1)
		last := s.History[3]
		require.Equal(t, Transition{Phase: PhaseConnecting, Reason: ReasonMountNotReady}, Transition{Phase: last.Phase, Ready: last.Ready, Reason: last.Reason})
		require.True(t, last.Time.Equal(ptr(metav1.NewTime(time.Date(2026, 12, 6, 7, 30, 0, 0, time.UTC)))))
		require.Equal(t, " R", s.History[0].Reason, "sanitized")
	})
}

// FuzzWithHistory: whatever the sequence of states and times (times going
// backwards too, as a clock or a forged annotation may), what the
// controller writes is read back as written, keeps at most MaxTransitions,
// adds up, and does not change without a transition.
func FuzzWithHistory(f *testing.F) {
	f.Add([]byte{0, 10, 1, 20, 0, 5, 2, 30, 1, 0, 0, 200, 1, 1, 3, 7})
	f.Add([]byte{1, 0, 1, 0, 1, 0, 0, 255, 0, 255})
	f.Fuzz(func(t *testing.T, steps []byte) {
		states := []Status{readyStatus, connectingStatus, unknownStatus, {Phase: PhaseReady, Reason: ReasonMountURLMissing}}
		var previous *Status
		seconds := 0
		for i := 0; i+1 < len(steps); i += 2 {
			found := states[int(steps[i])%len(states)]
			seconds += (int(steps[i+1]) - 128) * 100 // backwards too
			next := found.WithHistory(previous, at(seconds))
			written := next.Encode()
			parsed, err := ParseStatus(written)
			if err != nil {
				t.Fatalf("step %d: the controller's own status is refused: %v\n%s", i/2, err, written)
			}
			checkHistory(t, parsed)
			if parsed.Encode() != written {
				t.Fatalf("step %d: no round trip", i/2)
			}
			if previous != nil && !found.TransitionFrom(previous) && !previous.LastTransitionTime.After(at(seconds).Time) {
				previous.Reason, previous.Message, previous.URL = found.Reason, found.Message, found.URL
				if previous.Encode() != written {
					t.Fatalf("step %d: changed without a transition:\n%s\n%s", i/2, previous.Encode(), written)
				}
			}
			previous = &parsed
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestHistoryNotBefore: nothing of a status before its Workspace's creation
// is believed (a forged history back to 1970 feeds no histogram).
func TestHistoryNotBefore(t *testing.T) {
	t.Parallel()
	since := at(0)
	forged := Status{Phase: PhaseReady, Ready: true, Reason: ReasonMountReady, LastTransitionTime: at(600), Since: &since, ReadySeconds: 500,
		History: []Transition{{Phase: PhaseConnecting, Reason: ReasonMountNotReady, Time: at(0)}, {Phase: PhaseReady, Ready: true, Time: at(100)}, {Phase: PhaseConnecting, Time: at(400)}}}
	for _, tc := range []struct {
		name    string
		created metav1.Time
		ok      bool
		want    Status
	}{
		{name: "no creation time: as it is", ok: true, want: forged},
		{name: "created first: as it is", created: at(0), ok: true, want: forged},
		{name: "created midway: the transitions before dropped, since and ready seconds cut", created: at(300), ok: true,
			want: Status{Phase: PhaseReady, Ready: true, Reason: ReasonMountReady, LastTransitionTime: at(600), Since: ptrTo(at(300)), ReadySeconds: 300,
				History: []Transition{{Phase: PhaseConnecting, Time: at(400)}}}},
		{name: "created at the last transition: no history left", created: at(600), ok: true,
			want: Status{Phase: PhaseReady, Ready: true, Reason: ReasonMountReady, LastTransitionTime: at(600), Since: ptrTo(at(600))}},
		{name: "created after the last transition: not believed", created: at(601)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := forged.NotBefore(tc.created)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
			if ok {
				_, err := ParseStatus(got.Encode())
				require.NoError(t, err, "what is left is a status the controller could have written")
			}
		})
	}
	require.Len(t, forged.History, 3, "the status itself is not changed")
}

func TestEverReady(t *testing.T) {
	t.Parallel()
	require.True(t, readyStatus.EverReady())
	require.False(t, connectingStatus.EverReady())
	require.True(t, Status{ReadySeconds: 1}.EverReady())
	require.True(t, Status{History: []Transition{{Ready: true}}}.EverReady())
}

func ptrTo[T any](v T) *T { return &v }
