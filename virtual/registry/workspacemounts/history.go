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
	"errors"
	"fmt"
	"iter"
)

// historySize bounds the changes kept for watches from a resource version.
const historySize = 1000

// errResourceVersionTooOld: the client must list again.
var errResourceVersionTooOld = errors.New("too old resource version")

// history is a ring of the last changes; every change of a source after its
// historyStart is in it.
type history struct {
	changes []recordedChange
	oldest  int // once full
}

type recordedChange struct {
	source *source
	// resourceVersion is the source's right after the change.
	resourceVersion uint64
	change
}

// all are the changes, oldest first.
func (h *history) all() iter.Seq[recordedChange] {
	return func(yield func(recordedChange) bool) {
		for i := range h.changes {
			if !yield(h.changes[(h.oldest+i)%len(h.changes)]) {
				return
			}
		}
	}
}

// recordLocked keeps a change of a synced source, forgetting the oldest.
func (s *Store) recordLocked(src *source, c change) {
	if !src.synced {
		return // no watch starts from before the source's first list
	}
	r := recordedChange{source: src, resourceVersion: src.resourceVersion, change: c}
	h := &s.history
	if len(h.changes) < historySize {
		h.changes = append(h.changes, r)
		return
	}
	forgotten := h.changes[h.oldest]
	forgotten.source.historyStart = max(forgotten.source.historyStart, forgotten.resourceVersion)
	h.changes[h.oldest] = r
	h.oldest = (h.oldest + 1) % historySize
}

// forgetHistoryLocked empties the history when the sources change.
func (s *Store) forgetHistoryLocked() {
	s.history = history{}
	for _, src := range s.sources {
		src.historyStart = src.resourceVersion
	}
}

// replayLocked are the changes a watch from since gets first.
func (s *Store) replayLocked(since map[string]uint64) ([]change, error) {
	if n, plain := since[""]; plain && len(since) == 1 && len(s.sources) == 1 {
		for name := range s.sources {
			since = map[string]uint64{name: n}
		}
	}
	if len(since) != len(s.sources) {
		return nil, fmt.Errorf("%w: it names other shards than the %d the store reads", errResourceVersionTooOld, len(s.sources))
	}
	from := make(map[*source]uint64, len(since))
	for name, n := range since {
		src, found := s.sources[name]
		if !found {
			return nil, fmt.Errorf("%w: it names shard %q, which the store does not read", errResourceVersionTooOld, name)
		}
		if n < src.historyStart {
			return nil, fmt.Errorf("%w: %d (changes are kept from %d on)", errResourceVersionTooOld, n, src.historyStart)
		}
		from[src] = n
	}
	var changes []change
	for r := range s.history.all() {
		if r.resourceVersion > from[r.source] {
			changes = append(changes, r.change)
		}
	}
	return changes, nil
}
