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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeTokenReview authenticates the token "good", counting the reviews per
// token; a token in hold waits for release.
type fakeTokenReview struct {
	lock    sync.Mutex
	asked   map[string]int
	hold    map[string]chan struct{}
	started chan string
}

func (f *fakeTokenReview) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	f.lock.Lock()
	f.asked[token]++
	hold := f.hold[token]
	f.lock.Unlock()
	if hold != nil {
		f.started <- token
		<-hold
	}
	if token == "good" {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	}
	return nil, false, nil
}

func (f *fakeTokenReview) count(token string) int {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.asked[token]
}

// TestTokenReviewsRememberFailures: a token kcp did not authenticate is not
// reviewed again within the TTL, in a cache of bounded size; one it did is
// not remembered here (the cache in front does).
func TestTokenReviewsRememberFailures(t *testing.T) {
	t.Parallel()
	review := &fakeTokenReview{asked: map[string]int{}}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	tokens := newTokenReviews(review, 4, 2, time.Second, 10*time.Second, clock)
	authenticate := func(token string) bool {
		_, ok, err := tokens.AuthenticateToken(t.Context(), token)
		require.NoError(t, err)
		return ok
	}

	for range 3 {
		require.False(t, authenticate("bad-1"))
		require.True(t, authenticate("good"))
	}
	require.Equal(t, 1, review.count("bad-1"), "a failed token is remembered")
	require.Equal(t, 3, review.count("good"), "a good one is not, here")

	clock.SetTime(clock.Now().Add(11 * time.Second))
	require.False(t, authenticate("bad-1"))
	require.Equal(t, 2, review.count("bad-1"), "for the TTL")

	require.False(t, authenticate("bad-2"))
	require.False(t, authenticate("bad-3")) // bad-1 is out: the cache holds 2
	require.Len(t, tokens.failed.Keys(), 2)
	require.False(t, authenticate("bad-1"))
	require.Equal(t, 3, review.count("bad-1"), "the cache is bounded")
	require.False(t, authenticate("bad-3"))
	require.Equal(t, 1, review.count("bad-3"))
}

// TestTokenReviewsTurns: at most concurrency TokenReviews are under way; a
// token waits for a turn at most its wait, then fails with an error (401).
func TestTokenReviewsTurns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	review := &fakeTokenReview{asked: map[string]int{}, hold: map[string]chan struct{}{"slow-1": release, "slow-2": release}, started: make(chan string, 2)}
	tokens := newTokenReviews(review, 2, 10, 100*time.Millisecond, time.Minute, clocktesting.NewFakePassiveClock(time.Now()))
	done := make(chan struct{}, 2)
	for _, token := range []string{"slow-1", "slow-2"} {
		go func() {
			_, _, _ = tokens.AuthenticateToken(context.Background(), token)
			done <- struct{}{}
		}()
		<-review.started
	}
	_, ok, err := tokens.AuthenticateToken(t.Context(), "good")
	require.False(t, ok)
	require.ErrorIs(t, err, errNoTokenReviewTurn)
	require.Zero(t, review.count("good"))
	close(release)
	<-done
	<-done
	_, ok, err = tokens.AuthenticateToken(t.Context(), "good")
	require.NoError(t, err)
	require.True(t, ok, "turns are given back")
}
