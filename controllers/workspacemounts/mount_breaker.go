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

// This file holds the circuit breaker of mount object reads: a (resource,
// cluster) pair whose reads time out is read at most once per backoff.

package workspacemounts

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// mountBreaker keeps the (resource, cluster) pairs, by mountCacheKey,
// whose mount objects kcp does not answer for (a conversion webhook that
// never answers, say): a GET that timed out, or a list of the pair's
// informer that did. Such a pair is open: its Workspaces are Unknown,
// reason mount.ReasonMountKindNotAnswering, with no request, and come
// back when its backoff ends; then one read of the pair is let through
// (half-open), the others wait for it. That probe closes the pair when
// kcp answers (its Workspaces are read again: onClose), and doubles the
// backoff up to maxBackoff when it times out again. A pair never read yet
// lets one read through at a time too, so a pair that hangs from the start
// holds one worker, not all; one that answered once is read by any number.
// A closed pair that answered is forgotten once the map doubled since it
// last pruned, so the map holds the pairs in trouble and recent ones.
type mountBreaker struct {
	initialBackoff, maxBackoff time.Duration
	now                        func() time.Time
	// onClose is called, without the lock, with a pair that was open and
	// answered, and with the keys that waited for a probe that ended.
	onClose func(pair string)
	enqueue func(key string)

	lock    sync.Mutex
	pairs   map[string]*breakerPair
	pruneAt int
}

type breakerPair struct {
	// answered: a read of the pair succeeded, and none timed out since.
	answered bool
	// backoff is the current backoff of an open pair (0: closed), until the end of it.
	backoff time.Duration
	until   time.Time
	// probing: a read is under way that decides for the others (half-open,
	// or never answered), which wait in waiting.
	probing bool
	waiting map[string]bool
}

func newMountBreaker(initialBackoff, maxBackoff time.Duration, onClose func(pair string), enqueue func(key string)) *mountBreaker {
	return &mountBreaker{initialBackoff: initialBackoff, maxBackoff: maxBackoff, now: time.Now, onClose: onClose, enqueue: enqueue,
		pairs: map[string]*breakerPair{}, pruneAt: minPruneAt}
}

// maxBreakerBackoff caps the backoff of an open pair: its Workspaces are
// read again, and converge once kcp answers, at least that often.
const maxBreakerBackoff = 2 * time.Minute

// breakerVerdict is what admit says of a read.
type breakerVerdict int

const (
	// readAllowed: read, and report the outcome with done.
	readAllowed breakerVerdict = iota
	// readWaits: another read of the pair is under way and decides; the
	// key is enqueued again when it ends. Do nothing now.
	readWaits
	// readRefused: the pair is open: the Workspace is Unknown
	// (mount.ReasonMountKindNotAnswering), to be reconciled again after
	// the returned duration.
	readRefused
)

// admit decides on a read of pair for the Workspace key.
func (b *mountBreaker) admit(pair, key string) (breakerVerdict, time.Duration) {
	b.lock.Lock()
	defer b.lock.Unlock()
	now := b.now()
	p := b.pairs[pair]
	if p == nil {
		b.prune()
		p = &breakerPair{}
		b.pairs[pair] = p
	}
	switch {
	case p.backoff > 0 && now.Before(p.until):
		return readRefused, p.until.Sub(now)
	case p.backoff > 0 && p.probing:
		return readRefused, p.backoff
	case p.answered && p.backoff == 0:
		return readAllowed, 0
	case p.probing:
		if p.waiting == nil {
			p.waiting = map[string]bool{}
		}
		p.waiting[key] = true
		return readWaits, 0
	default:
		p.probing = true
		return readAllowed, 0
	}
}

// done reports the outcome of a read that admit allowed: err nil or
// NotFound is an answer, a timeout (notAnswering) opens the pair, any other
// error decides nothing.
func (b *mountBreaker) done(pair string, err error) {
	switch {
	case err == nil || apierrors.IsNotFound(err):
		b.answered(pair)
	case notAnswering(err):
		b.timedOut(pair)
	default:
		b.finish(pair, func(*breakerPair) bool { return false })
	}
}

// answered closes pair: kcp answered for it (a read, or a list of its informer).
func (b *mountBreaker) answered(pair string) {
	b.finish(pair, func(p *breakerPair) bool {
		wasOpen := p.backoff > 0
		p.answered, p.backoff = true, 0
		return wasOpen
	})
}

// timedOut opens pair, or, after a probe, doubles its backoff.
func (b *mountBreaker) timedOut(pair string) {
	b.finish(pair, func(p *breakerPair) bool {
		switch {
		case p.backoff == 0:
			p.backoff = b.initialBackoff
		case p.probing:
			p.backoff = min(2*p.backoff, b.maxBackoff)
		default:
			return false // open already: an informer's list, say
		}
		p.answered, p.until = false, b.now().Add(p.backoff)
		return false
	})
}

// finish ends a probe of pair, changed by update (which tells whether the
// pair closed), and hands on the keys that waited.
func (b *mountBreaker) finish(pair string, update func(*breakerPair) (closed bool)) {
	b.lock.Lock()
	p := b.pairs[pair]
	if p == nil {
		p = &breakerPair{}
		b.pairs[pair] = p
	}
	closed := update(p)
	p.probing = false
	waiting := p.waiting
	p.waiting = nil
	b.lock.Unlock()
	if closed && b.onClose != nil {
		b.onClose(pair)
	}
	for key := range waiting {
		b.enqueue(key)
	}
}

// open tells whether pair is open, for tests and metrics.
func (b *mountBreaker) open(pair string) bool {
	b.lock.Lock()
	defer b.lock.Unlock()
	p := b.pairs[pair]
	return p != nil && p.backoff > 0
}

// prune forgets the closed pairs that no read waits for once the map
// doubled since it last pruned; called with the lock held.
func (b *mountBreaker) prune() {
	if len(b.pairs) < b.pruneAt {
		return
	}
	for pair, p := range b.pairs {
		if p.backoff == 0 && !p.probing {
			delete(b.pairs, pair)
		}
	}
	b.pruneAt = max(minPruneAt, 2*len(b.pairs))
}

// notAnswering tells whether err says kcp did not answer in time: the
// request's own deadline, a network timeout, or kcp's timeout status.
func notAnswering(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		errors.As(err, &netErr) && netErr.Timeout()
}
