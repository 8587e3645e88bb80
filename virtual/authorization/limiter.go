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

package authorization

import (
	"container/list"
	"context"
	"sync"
)

// Limiter is the one type of every share of the virtual workspace: turns per key up to perKey and in all up to
// total. [Limiter.TryAcquire] refuses at once; [Limiter.Acquire] waits, first come first served among the waiters a
// released turn fits. Its memory follows the turns under way, not the keys ever seen. Why not
// golang.org/x/sync/semaphore: docs/design/virtual-authorization.md.
type Limiter struct {
	perKey, total int

	lock    sync.Mutex
	taken   map[UserKey]int
	all     int
	waiters list.List // of *limiterWaiter, oldest first
}

// Bound is which bound refused a turn.
type Bound int

// The bounds: none (a turn was taken), the key's, all keys' together.
const (
	Fits Bound = iota
	KeyFull
	TotalFull
)

type limiterWaiter struct {
	key   UserKey
	ready chan struct{} // closed when the turn is the waiter's
}

// NewLimiter bounds the turns of one key to perKey and those of all keys to total, 0 for no total.
func NewLimiter(perKey, total int) *Limiter {
	return &Limiter{perKey: perKey, total: total, taken: map[UserKey]int{}}
}

// TryAcquire takes a turn of key if both bounds allow, and returns its release, or nil and the bound that refused.
func (l *Limiter) TryAcquire(key UserKey) (release func(), full Bound) {
	l.lock.Lock()
	defer l.lock.Unlock()
	if full := l.fullLocked(key); full != Fits {
		return nil, full
	}
	l.takeLocked(key)
	return l.releaser(key), Fits
}

// Acquire takes a turn of key, waiting until ctx is done; then it returns ctx's error and the bound that was full.
func (l *Limiter) Acquire(ctx context.Context, key UserKey) (release func(), full Bound, err error) {
	l.lock.Lock()
	if l.fullLocked(key) == Fits {
		l.takeLocked(key)
		l.lock.Unlock()
		return l.releaser(key), Fits, nil
	}
	w := &limiterWaiter{key: key, ready: make(chan struct{})}
	element := l.waiters.PushBack(w)
	l.lock.Unlock()

	select {
	case <-w.ready:
		return l.releaser(key), Fits, nil
	case <-ctx.Done():
		l.lock.Lock()
		defer l.lock.Unlock()
		select {
		case <-w.ready:
			// Granted meanwhile: give it back, to the next waiter.
			l.releaseLocked(key)
		default:
			l.waiters.Remove(element)
		}
		return nil, l.busiestLocked(key), ctx.Err()
	}
}

// busiestLocked is the bound that keeps key waiting.
func (l *Limiter) busiestLocked(key UserKey) Bound {
	if l.taken[key] >= l.perKey {
		return KeyFull
	}
	return TotalFull
}

func (l *Limiter) fullLocked(key UserKey) Bound {
	switch {
	case l.taken[key] >= l.perKey:
		return KeyFull
	case l.total > 0 && l.all >= l.total:
		return TotalFull
	default:
		return Fits
	}
}

func (l *Limiter) takeLocked(key UserKey) {
	l.taken[key]++
	l.all++
}

func (l *Limiter) releaser(key UserKey) func() {
	return sync.OnceFunc(func() {
		l.lock.Lock()
		defer l.lock.Unlock()
		l.releaseLocked(key)
	})
}

// releaseLocked gives a turn of key back and hands the turns that now fit to the oldest waiters they fit.
func (l *Limiter) releaseLocked(key UserKey) {
	l.taken[key]--
	if l.taken[key] == 0 {
		delete(l.taken, key)
	}
	l.all--
	for e := l.waiters.Front(); e != nil && (l.total == 0 || l.all < l.total); {
		next := e.Next()
		if w := e.Value.(*limiterWaiter); l.taken[w.key] < l.perKey {
			l.waiters.Remove(e)
			l.takeLocked(w.key)
			close(w.ready)
		}
		e = next
	}
}

// Taken is how many turns key holds, and all keys together.
func (l *Limiter) Taken(key UserKey) (ofKey, all int) {
	l.lock.Lock()
	defer l.lock.Unlock()
	return l.taken[key], l.all
}
