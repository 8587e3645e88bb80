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
	"context"
	"errors"

	"k8s.io/apiserver/pkg/authentication/user"
)

// refreshAheadFraction: an answer used in the last 1/refreshAheadFraction of its TTL is asked again in the background.
const refreshAheadFraction = 4

// maxAheadPerUser bounds the answers of one user waiting to be asked again ahead of their TTL.
const maxAheadPerUser = 1000

// aheadRefresh is an answer waiting in its user's queue to be asked again ahead of its TTL.
type aheadRefresh struct {
	ctx  context.Context //nolint:containedctx // the values of the request that used the answer, without its cancellation
	user user.Info
	key  reviewKey
}

type refreshed struct {
	answer answer
	err    error
}

// refresh asks kcp again about an answer unless that is under way or the user's refreshes are all taken: nil then,
// and an answer asked ahead waits in the user's queue, which each refresh that is done drains one by one.
func (r *Reviews) refresh(ctx context.Context, q question, ahead bool) <-chan refreshed {
	r.lock.Lock()
	if _, found := r.refreshing[q.key]; found {
		r.lock.Unlock()
		return nil
	}
	release, _ := r.refreshes.TryAcquire(q.fair)
	if release == nil {
		if queue := r.ahead[q.fair]; ahead && len(queue) < maxAheadPerUser {
			if queue == nil {
				queue = map[reviewKey]aheadRefresh{}
				r.ahead[q.fair] = queue
			}
			queue[q.key] = aheadRefresh{ctx: context.WithoutCancel(ctx), user: q.user}
		}
		r.lock.Unlock()
		return nil
	}
	r.refreshing[q.key] = struct{}{}
	r.lock.Unlock()

	result := make(chan refreshed, 1)
	go func() {
		a, err := r.refreshOnce(ctx, q)
		result <- refreshed{answer: a, err: err}
		for {
			r.lock.Lock()
			delete(r.refreshing, q.key)
			next, found := r.nextAheadLocked(q.fair)
			if !found {
				release()
				r.lock.Unlock()
				return
			}
			r.refreshing[next.key] = struct{}{}
			r.lock.Unlock()
			q.key, q.user = next.key, next.user
			_, _ = r.refreshOnce(next.ctx, q) // remembered, or asked again when next used
		}
	}()
	return result
}

// nextAheadLocked takes one of the user's queued answers, skipping those asked again meanwhile or gone from the cache.
func (r *Reviews) nextAheadLocked(u UserKey) (aheadRefresh, bool) {
	queue := r.ahead[u]
	for key, next := range queue {
		delete(queue, key)
		if _, found := r.refreshing[key]; found {
			continue
		}
		cached, found := r.answers.Get(key)
		if !found || r.clock.Now().Before(cached.(answer).refreshAfter) {
			continue
		}
		next.key = key
		return next, true
	}
	delete(r.ahead, u)
	return aheadRefresh{}, false
}

// refreshOnce asks kcp again in one of the refreshes' turns.
func (r *Reviews) refreshOnce(ctx context.Context, q question) (answer, error) {
	waitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	release, _, err := r.refreshTurns.Acquire(waitCtx, q.fair)
	if err != nil {
		return answer{}, errors.New("no turn to ask kcp again")
	}
	defer release()
	return r.reviewOnce(ctx, q)
}
