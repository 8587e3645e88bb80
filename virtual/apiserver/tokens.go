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

package apiserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/utils/clock"

	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// errNoTokenReviewTurn fails a token that found no TokenReview turn within its wait: a 401, as for a bad token.
var errNoTokenReviewTurn = errors.New("too many TokenReviews under way")

// tokenReviews bounds the TokenReviews of tokens the cache in front of it does not hold: at most concurrency
// under way in turns of one [authorization.Limiter] key, a request waiting at most wait for one; a token kcp
// refused is remembered by its hash for ttl in a bounded LRU, so that a flood of made-up tokens costs bounded memory.
type tokenReviews struct {
	delegate  authenticator.Token
	turns     *authorization.Limiter
	wait, ttl time.Duration
	failed    *utilcache.LRUExpireCache // [sha256.Size]byte, for ttl
}

func newTokenReviews(delegate authenticator.Token, concurrency, size int, wait, ttl time.Duration, clk clock.PassiveClock) *tokenReviews {
	return &tokenReviews{
		delegate: delegate, turns: authorization.NewLimiter(concurrency, concurrency),
		wait: wait, ttl: ttl, failed: utilcache.NewLRUExpireCacheWithClock(size, clk),
	}
}

// AuthenticateToken asks kcp, in turn, unless the token failed lately.
func (t *tokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if _, found := t.failed.Get(key); found {
		return nil, false, nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, t.wait)
	defer cancel()
	release, _, err := t.turns.Acquire(waitCtx, authorization.UserKey{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, errNoTokenReviewTurn
	}
	defer release()
	resp, ok, err := t.delegate.AuthenticateToken(ctx, token)
	if !ok && err == nil && t.ttl > 0 {
		t.failed.Add(key, struct{}{}, t.ttl)
	}
	return resp, ok, err
}
