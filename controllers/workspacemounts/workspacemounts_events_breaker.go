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

import "time"

// breakerPolicy says when a cluster's breaker opens and for how long.
type breakerPolicy struct {
	// failures in a row open the breaker.
	failures int
	// open is how long the breaker first stays open; each failed probe doubles it, up to maxOpen.
	open, maxOpen time.Duration
	// forget is how long after its last failure a breaker that is not open is forgotten.
	forget time.Duration
}

var defaultBreakerPolicy = breakerPolicy{failures: 3, open: 30 * time.Second, maxOpen: 5 * time.Minute, forget: 10 * time.Minute}

// eventBreaker is the state of a cluster's breaker: closed while fewer than breakerPolicy.failures writes in a row
// failed; then open (every event skipped) until openUntil.
type eventBreaker struct {
	failures  int
	lastFail  time.Time
	openUntil time.Time
	openFor   time.Duration
}

// limit is how many writes to the cluster may be in flight at now: perCluster when closed, 1 when probing, 0 when open.
func (p breakerPolicy) limit(b *eventBreaker, now time.Time, perCluster int) int {
	switch {
	case b.failures < p.failures:
		return perCluster
	case now.Before(b.openUntil):
		return 0
	default:
		return 1
	}
}

// succeeded closes the breaker.
func (p breakerPolicy) succeeded(b *eventBreaker) {
	*b = eventBreaker{}
}

// failed counts a failed write at now; it tells whether the breaker opened.
func (p breakerPolicy) failed(b *eventBreaker, now time.Time) bool {
	if b.failures >= p.failures && now.Before(b.openUntil) {
		return false
	}
	b.failures++
	b.lastFail = now
	if b.failures < p.failures {
		return false
	}
	b.openFor = min(max(2*b.openFor, p.open), p.maxOpen)
	b.openUntil = now.Add(b.openFor)
	return true
}

// forgettable tells whether b has nothing worth keeping at now: no failure, or none for forget and not open.
func (p breakerPolicy) forgettable(b *eventBreaker, now time.Time) bool {
	return b.failures == 0 || (now.Sub(b.lastFail) >= p.forget && !now.Before(b.openUntil))
}
