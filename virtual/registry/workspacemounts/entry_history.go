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
	"slices"
	"strconv"
	"time"
	"unique"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// compactHistory is an entry's status.transitions and status.availability, kept as a few numbers and interned
// strings, and written into the entry's JSON where it goes, at; [compactHistoryOf] keeps one only where its written
// bytes are the JSON's.
type compactHistory struct {
	at                                   int32
	n                                    uint8
	since, readySeconds, observedSeconds int64
	transitions                          [mount.MaxTransitions]compactTransition
}

type compactTransition struct {
	phase, reason unique.Handle[string]
	time          int64
	ready         bool
}

// compactHistoryOf returns the JSON of wsm without its transitions and availability, and them compact, where that
// writes the same bytes as object, the JSON of wsm; else object and nil.
func compactHistoryOf(wsm *wsmv1alpha1.WorkspaceMount, object []byte) ([]byte, *compactHistory, error) {
	status := wsm.Status
	if len(status.Transitions) == 0 || len(status.Transitions) > mount.MaxTransitions || status.Availability == nil {
		return object, nil, nil
	}
	h := &compactHistory{
		since:           status.Availability.Since.Unix(),
		readySeconds:    status.Availability.ReadySeconds,
		observedSeconds: status.Availability.ObservedSeconds,
	}
	for i, t := range status.Transitions {
		h.transitions[i] = compactTransition{phase: unique.Make(t.Phase), reason: unique.Make(t.Reason), time: t.Time.Unix(), ready: t.Ready}
	}
	h.n = uint8(len(status.Transitions)) //nolint:gosec // at most mount.MaxTransitions
	stripped := *wsm
	stripped.Status.Transitions, stripped.Status.Availability = nil, nil
	rest, err := json.Marshal(&stripped)
	if err != nil {
		return nil, nil, err
	}
	at := 0
	for at < len(rest) && rest[at] == object[at] {
		at++
	}
	if at < len(object) && object[at] != ',' {
		at = bytes.LastIndexByte(object[:at], ',') // the two differ from the name of the field after
	}
	if at < 0 {
		return object, nil, nil
	}
	h.at = int32(at)
	if !bytes.Equal(slices.Concat(rest[:at], h.appendJSON(nil), rest[at:]), object) {
		return object, nil, nil // a string JSON escapes, or a time with more than seconds
	}
	return rest, h, nil
}

// appendJSON writes the transitions and availability as the JSON of a WorkspaceMount's status has them.
func (h *compactHistory) appendJSON(b []byte) []byte {
	b = append(b, `,"transitions":[`...)
	for i, t := range h.transitions[:h.n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"phase":"`...)
		b = append(b, t.phase.Value()...)
		b = append(b, `","ready":`...)
		b = strconv.AppendBool(b, t.ready)
		b = append(b, `,"reason":"`...)
		b = append(b, t.reason.Value()...)
		b = append(b, `","time":`...)
		b = appendTime(b, t.time)
		b = append(b, '}')
	}
	b = append(b, `],"availability":{"since":`...)
	b = appendTime(b, h.since)
	b = append(b, `,"readySeconds":`...)
	b = strconv.AppendInt(b, h.readySeconds, 10)
	b = append(b, `,"observedSeconds":`...)
	b = strconv.AppendInt(b, h.observedSeconds, 10)
	return append(b, '}')
}

// appendTime writes a time as metav1.Time does, to the second.
func appendTime(b []byte, unix int64) []byte {
	b = append(b, '"')
	b = time.Unix(unix, 0).UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

func (h *compactHistory) equal(other *compactHistory) bool {
	if h == nil || other == nil {
		return h == other
	}
	return h.at == other.at && h.since == other.since && h.readySeconds == other.readySeconds &&
		h.observedSeconds == other.observedSeconds && h.n == other.n && h.transitions == other.transitions
}
