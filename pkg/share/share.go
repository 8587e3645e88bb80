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

// Package share gives objects an informer caches one copy of what many of
// them hold alike: short strings and small string maps.
package share

import (
	"slices"
	"strings"
	"sync"
)

// Bounds of a [Table], which starts again when full, so that what tenants
// write cannot make it grow.
const (
	MaxMapLen    = 4
	MaxStringLen = 320
	MaxEntries   = 1 << 14
)

// Table hands out shared copies; what it hands out must never be modified,
// as no one modifies an informer cache's objects.
type Table struct {
	lock    sync.Mutex
	strings map[string]string
	maps    map[string]map[string]string
}

func New() *Table {
	return &Table{strings: map[string]string{}, maps: map[string]map[string]string{}}
}

// String returns the shared string equal to value, or value if it is long.
func (t *Table) String(value string) string {
	t.lock.Lock()
	defer t.lock.Unlock()
	return t.stringLocked(value)
}

func (t *Table) stringLocked(value string) string {
	if len(value) > MaxStringLen {
		return value
	}
	if shared, found := t.strings[value]; found {
		return shared
	}
	if len(t.strings) >= MaxEntries {
		clear(t.strings)
	}
	t.strings[value] = value
	return value
}

// Map returns the shared map equal to m, or m if it is empty or large.
func (t *Table) Map(m map[string]string) map[string]string {
	if len(m) == 0 || len(m) > MaxMapLen {
		return m
	}
	keys := make([]string, 0, len(m))
	size := 0
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	id := b.String()
	t.lock.Lock()
	defer t.lock.Unlock()
	if shared, found := t.maps[id]; found {
		return shared
	}
	if len(t.maps) >= MaxEntries {
		clear(t.maps)
	}
	own := make(map[string]string, len(m))
	for k, v := range m {
		own[t.stringLocked(k)] = t.stringLocked(v)
	}
	t.maps[id] = own
	return own
}

// Len is how many strings and maps t keeps.
func (t *Table) Len() (strings, maps int) {
	t.lock.Lock()
	defer t.lock.Unlock()
	return len(t.strings), len(t.maps)
}

// Bytes is the size of the strings t keeps.
func (t *Table) Bytes() int {
	t.lock.Lock()
	defer t.lock.Unlock()
	n := 0
	for s := range t.strings {
		n += len(s)
	}
	return n
}
