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
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// mountBreaker keeps the pairs, by [mountCacheKey], whose mount objects kcp does not answer for (a conversion webhook
// that never answers, say): a GET that timed out, or a list of the pair's informer that did.
type mountBreaker struct {
	initialBackoff, maxBackoff time.Duration
	now                        func() time.Time
	// tenantOf is the tenant of a pair's cluster; nil: probes are not bounded per tenant.
	tenantOf func(cluster logicalcluster.Name) tenant.Name
	// onClose is called, without the lock, with a pair that was open and answered.
	onClose func(pair string)
	enqueue func(key string)

	lock    sync.Mutex
	pairs   map[string]*breakerPair
	pruneAt int
	probes  map[tenant.Name]int
	parked  map[tenant.Name]map[string]bool
}

// maxProbesPerTenant bounds the probes of one tenant's pairs under way.
const maxProbesPerTenant = 2

type breakerPair struct {
	// answered: a read of the pair succeeded, and none timed out since.
	answered bool
	// backoff is the current backoff of an open pair (0: closed), until the end of it.
	backoff time.Duration
	until   time.Time
	// probing: a read is under way that decides for the others.
	probing bool
	waiting map[string]bool
}

func newMountBreaker(initialBackoff, maxBackoff time.Duration, tenantOf func(logicalcluster.Name) tenant.Name,
	onClose func(pair string), enqueue func(key string)) *mountBreaker {
	return &mountBreaker{initialBackoff: initialBackoff, maxBackoff: maxBackoff, now: time.Now, tenantOf: tenantOf, onClose: onClose, enqueue: enqueue,
		pairs: map[string]*breakerPair{}, pruneAt: minPruneAt, probes: map[tenant.Name]int{}, parked: map[tenant.Name]map[string]bool{}}
}

// minPruneAt is how many pairs the breaker holds before it first prunes.
const minPruneAt = 64

// maxBreakerBackoff caps the backoff of an open pair: its Workspaces are read again, and converge once kcp answers, at
// least that often.
const maxBreakerBackoff = 2 * time.Minute

// breakerVerdict is what admit says of a read.
type breakerVerdict int

const (
	// readAllowed: read, and report the outcome with done.
	readAllowed breakerVerdict = iota
	// readProbes: read, and report the outcome with done: the read decides for the pair's other reads.
	readProbes
	// readWaits: another read decides first (of the same pair, or the tenant's probes are all under way).
	readWaits
	// readRefused: the pair is open.
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
	}
	t := b.tenantOfPair(pair)
	if b.tenantOf != nil && b.probes[t] >= maxProbesPerTenant {
		if b.parked[t] == nil {
			b.parked[t] = map[string]bool{}
		}
		b.parked[t][key] = true
		return readWaits, 0
	}
	b.probes[t]++
	p.probing = true
	return readProbes, 0
}

// done reports the outcome of a read that admit let through (probe: with readProbes): err nil or NotFound is an answer,
// a timeout opens the pair, any other error decides nothing.
func (b *mountBreaker) done(pair string, probe bool, err error) {
	switch {
	case err == nil || apierrors.IsNotFound(err):
		b.update(pair, probe, b.close)
	case notAnswering(err):
		b.update(pair, probe, b.trip)
	default:
		b.update(pair, probe, func(*breakerPair, bool) bool { return false })
	}
}

// answered closes pair: its informer listed.
func (b *mountBreaker) answered(pair string) { b.update(pair, false, b.close) }

// timedOut opens pair: its informer's list timed out.
func (b *mountBreaker) timedOut(pair string) { b.update(pair, false, b.trip) }

// close closes p, and tells whether it was open.
func (b *mountBreaker) close(p *breakerPair, _ bool) bool {
	wasOpen := p.backoff > 0
	p.answered, p.backoff = true, 0
	return wasOpen
}

// trip opens p at the first backoff, or, after a probe, doubles it.
func (b *mountBreaker) trip(p *breakerPair, probe bool) bool {
	switch {
	case p.backoff == 0:
		p.backoff = b.initialBackoff
	case probe:
		p.backoff = min(2*p.backoff, b.maxBackoff)
	default:
		return false // open already: an informer's list while the pair waits
	}
	p.answered, p.until = false, b.now().Add(p.backoff)
	return false
}

// update changes pair as change says (which tells whether the pair closed); the end of a probe hands on the keys that
// waited for it, and those its tenant parked.
func (b *mountBreaker) update(pair string, probe bool, change func(p *breakerPair, probe bool) (closed bool)) {
	b.lock.Lock()
	p := b.pairs[pair]
	if p == nil {
		p = &breakerPair{}
		b.pairs[pair] = p
	}
	closed := change(p, probe)
	var waiting, parked map[string]bool
	if probe {
		waiting, p.waiting, p.probing = p.waiting, nil, false
		t := b.tenantOfPair(pair)
		b.probes[t]--
		if b.probes[t] <= 0 {
			delete(b.probes, t)
		}
		parked = b.parked[t]
		delete(b.parked, t)
	}
	b.lock.Unlock()
	if closed && b.onClose != nil {
		b.onClose(pair)
	}
	for key := range waiting {
		b.enqueue(key)
	}
	for key := range parked {
		b.enqueue(key)
	}
}

// tenantOfPair is the tenant of pair's cluster, "" without tenantOf.
func (b *mountBreaker) tenantOfPair(pair string) tenant.Name {
	if b.tenantOf == nil {
		return ""
	}
	cluster, _, _ := strings.Cut(pair, "|")
	return b.tenantOf(logicalcluster.Name(cluster))
}

// open tells whether pair is open, for tests and metrics.
func (b *mountBreaker) open(pair string) bool {
	b.lock.Lock()
	defer b.lock.Unlock()
	p := b.pairs[pair]
	return p != nil && p.backoff > 0
}

// prune forgets the closed pairs no probe is under way for once the map doubled since it last pruned; called with the
// lock held.
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

// notAnswering tells whether err says kcp did not answer in time: the request's own deadline, a network timeout, or
// kcp's timeout status.
func notAnswering(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		errors.As(err, &netErr) && netErr.Timeout()
}
