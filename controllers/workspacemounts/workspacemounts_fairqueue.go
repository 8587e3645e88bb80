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
	"k8s.io/client-go/util/workqueue"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// fairQueue is the order in which workspacemounts-workspaces hands out its keys: one FIFO per tenant, and the tenants
// with queued keys in turn, one key each.
type fairQueue struct {
	// tenantOf is the tenant of a key, asked once, when the key is pushed.
	tenantOf func(key string) tenant.Name
	keys     map[tenant.Name]*fifo[string]
	// turns holds each tenant with queued keys once, the next to be served first.
	turns fifo[tenant.Name]
	len   int
}

var _ workqueue.Queue[string] = &fairQueue{}

func newFairQueue(tenantOf func(key string) tenant.Name) *fairQueue {
	return &fairQueue{tenantOf: tenantOf, keys: map[tenant.Name]*fifo[string]{}}
}

// Touch keeps a key that is queued again in its place.
func (q *fairQueue) Touch(string) {}

// Push queues key at the end of its tenant's FIFO; a tenant that had none queued takes the last turn.
func (q *fairQueue) Push(key string) {
	t := q.tenantOf(key)
	keys := q.keys[t]
	if keys == nil {
		keys = &fifo[string]{}
		q.keys[t] = keys
		q.turns.push(t)
	}
	keys.push(key)
	q.len++
}

func (q *fairQueue) Len() int { return q.len }

// Pop hands out the first key of the tenant whose turn it is; the tenant goes to the last turn if it has more, and is
// forgotten if not.
func (q *fairQueue) Pop() string {
	t := q.turns.pop()
	keys := q.keys[t]
	key := keys.pop()
	q.len--
	if keys.len() > 0 {
		q.turns.push(t)
	} else {
		delete(q.keys, t)
	}
	return key
}

// fifo is a slice-backed first-in first-out queue whose array is reused and shrinks when it empties.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(item T) { f.items = append(f.items, item) }

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) pop() T {
	var zero T
	item := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
		if cap(f.items) > 64 {
			f.items = nil // a backlog gone: give its array back
		}
	case f.head > len(f.items)/2 && f.head >= 64:
		n := copy(f.items, f.items[f.head:]) // keep the array's live part in front
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return item
}
