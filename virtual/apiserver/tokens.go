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
)

// errNoTokenReviewTurn is what a token fails with when no TokenReview turn
// came free in time: the request is answered 401, as for a bad token.
var errNoTokenReviewTurn = errors.New("too many TokenReviews under way")

// tokenReviews bounds the TokenReviews of tokens not known yet, apart from
// the users kcp already authenticated (whose tokens are in the cache in
// front of it, and never wait here): at most concurrency reviews under way,
// a request waiting at most wait for a turn. A token kcp did not
// authenticate is remembered for ttl in a cache of size entries (a hash
// of the token, least recently used first out), so that sending it again
// costs no review, and a flood of made-up tokens costs a bounded memory.
type tokenReviews struct {
	delegate authenticator.Token
	turns    chan struct{}
	wait     time.Duration
	ttl      time.Duration
	failed   *utilcache.LRUExpireCache // [sha256.Size]byte, for ttl
}

func newTokenReviews(delegate authenticator.Token, concurrency, size int, wait, ttl time.Duration, clk clock.PassiveClock) *tokenReviews {
	return &tokenReviews{
		delegate: delegate, turns: make(chan struct{}, concurrency),
		wait: wait, ttl: ttl, failed: utilcache.NewLRUExpireCacheWithClock(size, clk),
	}
}

// AuthenticateToken asks kcp, in turn, unless the token failed lately.
func (t *tokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if _, found := t.failed.Get(key); found {
		return nil, false, nil
	}
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	select {
	case t.turns <- struct{}{}:
		defer func() { <-t.turns }()
	case <-timer.C:
		return nil, false, errNoTokenReviewTurn
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	resp, ok, err := t.delegate.AuthenticateToken(ctx, token)
	if !ok && err == nil && t.ttl > 0 {
		t.failed.Add(key, struct{}{}, t.ttl)
	}
	return resp, ok, err
}
