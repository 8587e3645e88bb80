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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kcp-dev/logicalcluster/v3"
)

// countingReview allows alice in c1 and counts the reviews.
type countingReview struct {
	lock    sync.Mutex
	reviews []string // cluster/user/verb
	err     error
}

func (c *countingReview) review(_ context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.reviews = append(c.reviews, fmt.Sprintf("%s/%s/%s", cluster, spec.User, spec.ResourceAttributes.Verb))
	if c.err != nil {
		return false, c.err
	}
	return cluster == "c1" && spec.User == "alice", nil
}

func (c *countingReview) count() int {
	c.lock.Lock()
	defer c.lock.Unlock()
	return len(c.reviews)
}

func testReviewOptions() ReviewOptions {
	opts := DefaultReviewOptions()
	opts.AllowTTL, opts.DenyTTL = time.Minute, 10*time.Second
	return opts
}

func TestReviewsRemembersAnswers(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &countingReview{}
	opts := testReviewOptions()
	opts.StaleGrace = 0
	r := newReviews(review.review, opts, nil, clock)
	ctx := context.Background()

	ask := func(u user.Info, cluster logicalcluster.Name, verb string, want bool) {
		t.Helper()
		allowed, err := r.Allowed(ctx, u, cluster, verb, 0)
		require.NoError(t, err)
		require.Equal(t, want, allowed)
	}
	ask(alice, "c1", "list", true)
	ask(alice, "c1", "list", true)
	ask(alice, "c2", "list", false)
	ask(alice, "c2", "list", false)
	require.Equal(t, 2, review.count(), "one review per (user, cluster, verb)")
	ask(alice, "c1", "get", true)
	ask(&user.DefaultInfo{Name: "alice"}, "c1", "list", true) // not in team-a: another subject
	require.Equal(t, 4, review.count())

	clock.Step(opts.DenyTTL + time.Second)
	ask(alice, "c1", "list", true)
	ask(alice, "c2", "list", false)
	require.Equal(t, 5, review.count(), "a denial is asked again after DenyTTL, an allowance not yet")
	clock.Step(opts.AllowTTL)
	ask(alice, "c1", "list", true)
	require.Equal(t, 6, review.count(), "an allowance is asked again after AllowTTL")
}

func TestReviewsDoesNotRememberErrors(t *testing.T) {
	t.Parallel()
	review := &countingReview{err: errors.New("kcp is away")}
	r := NewReviews(review.review, testReviewOptions(), nil)
	for range 3 {
		_, err := r.Allowed(context.Background(), alice, "c1", "list", 0)
		require.ErrorContains(t, err, "kcp is away")
	}
	require.Equal(t, 3, review.count())
}

// TestReviewsCacheIsBounded: however many users and clusters, the cache
// holds CacheSize answers at most, and no state is left per user once
// their reviews are done.
func TestReviewsCacheIsBounded(t *testing.T) {
	t.Parallel()
	review := &countingReview{}
	opts := testReviewOptions()
	opts.CacheSize = 100
	r := NewReviews(review.review, opts, nil)
	for i := range 1000 {
		_, err := r.Allowed(context.Background(), &user.DefaultInfo{Name: fmt.Sprintf("user-%d", i)}, "c1", "list", 0)
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(r.answers.Keys()), 100)
	require.Zero(t, r.perUserState())
}

// blockingReview holds every review until released, and records how many
// were under way at most, in all and per user.
type blockingReview struct {
	release chan struct{}
	started chan struct{}

	lock              sync.Mutex
	inFlight, maxSeen int
	perUser, maxUser  map[string]int
	calls             atomic.Int32
}

func newBlockingReview() *blockingReview {
	return &blockingReview{release: make(chan struct{}), started: make(chan struct{}, 1000), perUser: map[string]int{}, maxUser: map[string]int{}}
}

func (b *blockingReview) review(ctx context.Context, _ logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	b.calls.Add(1)
	b.lock.Lock()
	b.inFlight++
	b.maxSeen = max(b.maxSeen, b.inFlight)
	b.perUser[spec.User]++
	b.maxUser[spec.User] = max(b.maxUser[spec.User], b.perUser[spec.User])
	b.lock.Unlock()
	b.started <- struct{}{}
	defer func() {
		b.lock.Lock()
		b.inFlight--
		b.perUser[spec.User]--
		b.lock.Unlock()
	}()
	select {
	case <-b.release:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// TestReviewsSharesIdenticalQuestions: concurrent requests of one user for
// one cluster cost one review (singleflight).
func TestReviewsSharesIdenticalQuestions(t *testing.T) {
	t.Parallel()
	review := newBlockingReview()
	r := NewReviews(review.review, testReviewOptions(), nil)
	var wg sync.WaitGroup
	var allowedCount atomic.Int32
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if allowed, err := r.Allowed(context.Background(), alice, "c1", "list", 0); allowed && err == nil {
				allowedCount.Add(1)
			}
		}()
	}
	<-review.started
	time.Sleep(50 * time.Millisecond) // let the others join the flight
	close(review.release)
	wg.Wait()
	require.Equal(t, int32(1), review.calls.Load())
	require.Equal(t, int32(50), allowedCount.Load(), "every request got the answer")
}

// TestReviewsBoundsConcurrency: at most Concurrency reviews at once, at
// most PerUserConcurrency of one user, and a waiting request gives up with
// its context.
func TestReviewsBoundsConcurrency(t *testing.T) {
	t.Parallel()
	review := newBlockingReview()
	opts := testReviewOptions()
	opts.Concurrency, opts.PerUserConcurrency = 4, 2
	r := NewReviews(review.review, opts, nil)
	var wg sync.WaitGroup
	for u := range 5 {
		for c := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = r.Allowed(context.Background(), &user.DefaultInfo{Name: fmt.Sprintf("user-%d", u)}, logicalcluster.Name(fmt.Sprintf("c%d", c)), "list", 0)
			}()
		}
	}
	for range 4 {
		<-review.started
	}
	time.Sleep(50 * time.Millisecond) // nothing more may start
	review.lock.Lock()
	require.Equal(t, 4, review.inFlight, "Concurrency bounds the reviews under way")
	review.lock.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	t.Cleanup(cancel)
	_, err := r.Allowed(ctx, &user.DefaultInfo{Name: "patient"}, "c1", "list", 0)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	close(review.release)
	wg.Wait()
	// The patient request's flight outlives its caller: it may start its
	// review after the others ended, so the counts are read under the lock
	// and the per-user state once that review is over too.
	require.Eventually(t, func() bool { return r.perUserState() == 0 }, 10*time.Second, 10*time.Millisecond, "no state is left per user")
	review.lock.Lock()
	maxSeen, maxUser := review.maxSeen, maps.Clone(review.maxUser)
	review.lock.Unlock()
	require.Equal(t, 4, maxSeen)
	for u, n := range maxUser {
		require.LessOrEqual(t, n, 2, "user %s", u)
	}
}

func TestSubjectOf(t *testing.T) {
	t.Parallel()
	require.Equal(t,
		subjectOf(&user.DefaultInfo{Name: "a", Groups: []string{"x", "y"}}),
		subjectOf(&user.DefaultInfo{Name: "a", Groups: []string{"y", "x"}}), "groups are a set")
	for _, pair := range [][2]user.Info{
		{&user.DefaultInfo{Name: "ab", Groups: []string{"c"}}, &user.DefaultInfo{Name: "a", Groups: []string{"bc"}}},
		{&user.DefaultInfo{Name: "a", UID: "1"}, &user.DefaultInfo{Name: "a", UID: "2"}},
		{&user.DefaultInfo{Name: "a", Extra: map[string][]string{"k": {"v"}}}, &user.DefaultInfo{Name: "a"}},
		{&user.DefaultInfo{Name: "a", Extra: map[string][]string{"k": {"v", "w"}}}, &user.DefaultInfo{Name: "a", Extra: map[string][]string{"k": {"vw"}}}},
	} {
		require.NotEqual(t, subjectOf(pair[0]), subjectOf(pair[1]), "%+v and %+v", pair[0], pair[1])
	}
}

func TestReviewOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultReviewOptions().Validate())
	for name, mutate := range map[string]func(*ReviewOptions){
		"negative TTL":     func(o *ReviewOptions) { o.DenyTTL = -time.Second },
		"no cache":         func(o *ReviewOptions) { o.CacheSize = 0 },
		"no concurrency":   func(o *ReviewOptions) { o.Concurrency = 0 },
		"no user share":    func(o *ReviewOptions) { o.PerUserConcurrency = 0 },
		"no timeout":       func(o *ReviewOptions) { o.Timeout = 0 },
		"no subject rate":  func(o *ReviewOptions) { o.NewSubjectsPerTenantQPS = 0 },
		"no subject burst": func(o *ReviewOptions) { o.NewSubjectsPerTenantBurst = 0 },
	} {
		o := DefaultReviewOptions()
		mutate(&o)
		require.Error(t, o.Validate(), name)
	}
}

// TestNewSubjectAccessReviewer: kcp is asked by a SubjectAccessReview in the
// target cluster (here a fake kcp over HTTP), through one client.
func TestNewSubjectAccessReviewer(t *testing.T) {
	t.Parallel()

	type review struct {
		path string
		spec authorizationv1.SubjectAccessReviewSpec
	}
	var lock sync.Mutex
	var reviews []review
	kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if req.Method != http.MethodPost || json.NewDecoder(req.Body).Decode(&sar) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		lock.Lock()
		reviews = append(reviews, review{path: req.URL.Path, spec: sar.Spec})
		lock.Unlock()
		sar.APIVersion, sar.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		sar.Status.Allowed = sar.Spec.User == "alice" && req.URL.Path == "/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(kcp.Close)

	reviewer, err := NewSubjectAccessReviewer(&rest.Config{Host: kcp.URL})
	require.NoError(t, err)
	a := New(NewReviews(reviewer, DefaultReviewOptions(), nil), existing)

	decision, _, err := a.Authorize(inCluster("c1"), resourceAttrs("watch"))
	require.NoError(t, err)
	require.Equal(t, "Allow", decisionName(decision))
	decision, _, err = a.Authorize(inCluster("c1"), resourceAttrs("list"))
	require.NoError(t, err)
	require.Equal(t, "Allow", decisionName(decision))
	decision, _, err = a.Authorize(inCluster("c2"), resourceAttrs("list"))
	require.NoError(t, err)
	require.Equal(t, "Deny", decisionName(decision))

	lock.Lock()
	t.Cleanup(lock.Unlock)
	require.Len(t, reviews, 2, "the allowed list in c1 is asked once, then remembered: %+v", reviews)
	require.Equal(t, "/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews", reviews[0].path)
	require.Equal(t, "alice", reviews[0].spec.User)
	require.Equal(t, []string{"team-a"}, reviews[0].spec.Groups)
	require.Equal(t, &authorizationv1.ResourceAttributes{Verb: "list", Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}, reviews[0].spec.ResourceAttributes)
	require.Equal(t, "/clusters/c2/apis/authorization.k8s.io/v1/subjectaccessreviews", reviews[1].path)
}

func decisionName(d authorizer.Decision) string {
	switch d {
	case authorizer.DecisionAllow:
		return "Allow"
	case authorizer.DecisionDeny:
		return "Deny"
	default:
		return "NoOpinion"
	}
}

// perUserState counts what is kept per user besides the answers: nothing
// once their reviews are done.
func (r *Reviews) perUserState() int {
	r.lock.Lock()
	defer r.lock.Unlock()
	r.turns.lock.Lock()
	defer r.turns.lock.Unlock()
	r.refreshes.lock.Lock()
	defer r.refreshes.lock.Unlock()
	return len(r.turns.taken) + r.turns.waiters.Len() + len(r.refreshing) + len(r.refreshes.taken) + len(r.ahead)
}

// switchableReview answers allowed, after waiting for gate when it is set.
type switchableReview struct {
	lock    sync.Mutex
	allowed bool
	gate    chan struct{}
	calls   int
}

func (s *switchableReview) set(allowed bool, gate chan struct{}) {
	s.lock.Lock()
	defer s.lock.Unlock()
	s.allowed, s.gate = allowed, gate
}

func (s *switchableReview) review(ctx context.Context, _ logicalcluster.Name, _ authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	s.lock.Lock()
	s.calls++
	allowed, gate := s.allowed, s.gate
	s.lock.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return allowed, nil
}

func (s *switchableReview) count() int {
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.calls
}

// TestReviewsStaleAnswers: past its TTL, an answer is asked again; kcp's
// new answer is used when it comes within StaleWait (a revocation shows
// within the TTL while kcp keeps up), else the old one, until StaleGrace
// has passed too.
func TestReviewsStaleAnswers(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &switchableReview{allowed: true}
	opts := testReviewOptions()
	opts.StaleGrace, opts.StaleWait = time.Minute, 20*time.Millisecond
	r := newReviews(review.review, opts, nil, clock)
	ask := func() bool {
		t.Helper()
		allowed, err := r.Allowed(context.Background(), alice, "c1", "list", 0)
		require.NoError(t, err)
		return allowed
	}

	require.True(t, ask())
	review.set(false, nil) // revoked
	require.True(t, ask(), "fresh for AllowTTL")
	clock.Step(opts.AllowTTL + time.Second)
	require.False(t, ask(), "past the TTL, kcp answered at once: the revocation shows")
	require.Equal(t, 2, review.count())

	// kcp is slow: the stale answer is used meanwhile, and the review goes on.
	gate := make(chan struct{})
	review.set(true, gate)
	clock.Step(opts.DenyTTL + time.Second)
	require.False(t, ask(), "kcp did not answer within StaleWait: the last answer")
	require.False(t, ask(), "the same review is under way: still the last answer")
	require.Equal(t, 3, review.count(), "one review for both")
	close(gate)
	require.Eventually(t, ask, 5*time.Second, 10*time.Millisecond, "once kcp answered, its answer")

	// Past the grace, a request waits for kcp.
	review.set(false, nil)
	clock.Step(opts.AllowTTL + opts.StaleGrace + time.Second)
	require.False(t, ask())
}

// TestReviewsRefreshAhead: an answer used in the last quarter of its TTL is
// asked again in the background: it serves meanwhile, never past its TTL,
// and the new answer (a revocation) replaces it before the TTL ends.
func TestReviewsRefreshAhead(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &switchableReview{allowed: true}
	opts := testReviewOptions()
	r := newReviews(review.review, opts, nil, clock)
	ask := func() bool {
		t.Helper()
		allowed, err := r.Allowed(context.Background(), alice, "c1", "list", 0)
		require.NoError(t, err)
		return allowed
	}
	require.True(t, ask())
	clock.Step(opts.AllowTTL / 2)
	require.True(t, ask())
	require.Equal(t, 1, review.count(), "no review in the first three quarters of the TTL")

	gate := make(chan struct{})
	review.set(false, gate) // revoked, and kcp slow
	clock.Step(opts.AllowTTL / 3)
	require.True(t, ask(), "in the last quarter: the fresh answer serves while it is asked again")
	require.True(t, ask(), "one review under way for both")
	require.Eventually(t, func() bool { return review.count() == 2 }, 5*time.Second, time.Millisecond)
	close(gate)
	require.Eventually(t, func() bool { return !ask() }, 5*time.Second, time.Millisecond, "the new answer, before the old one's TTL ended")
	require.Equal(t, 2, review.count())
}

// TestReviewsRefreshAheadQueues: the answers of a list at * over more
// clusters than a user's refreshes wait their turn, and all are asked again
// before they expire, a few at a time.
func TestReviewsRefreshAheadQueues(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &switchableReview{allowed: true}
	opts := testReviewOptions()
	r := newReviews(review.review, opts, nil, clock)
	const clusters = 20
	listAll := func() {
		t.Helper()
		for c := range clusters {
			allowed, err := r.Allowed(context.Background(), alice, logicalcluster.Name(fmt.Sprintf("c%d", c)), "list", 0)
			require.NoError(t, err)
			require.True(t, allowed)
		}
	}
	listAll()
	require.Equal(t, clusters, review.count())
	gate := make(chan struct{})
	review.set(true, gate)
	clock.Step(opts.AllowTTL - opts.AllowTTL/refreshAheadFraction)
	listAll()
	r.lock.Lock()
	refreshing, _ := r.refreshes.Taken(FairnessKey(alice, nil))
	queued := len(r.ahead[FairnessKey(alice, nil)])
	r.lock.Unlock()
	require.Equal(t, 2*opts.PerUserConcurrency, refreshing, "refreshes under way for one user")
	require.Equal(t, clusters-refreshing, queued, "the others wait their turn")
	close(gate)
	require.Eventually(t, func() bool { return review.count() == 2*clusters && r.perUserState() == 0 }, 5*time.Second, time.Millisecond,
		"every answer asked again once, and nothing left per user")
	clock.Step(opts.AllowTTL / refreshAheadFraction)
	listAll()
	require.Equal(t, 2*clusters, review.count(), "none had expired")
}

// TestReviewsStaleRefreshIsBounded: a user with reviews waiting starts no
// more refreshes: the stale answers serve.
func TestReviewsStaleRefreshIsBounded(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &switchableReview{allowed: true}
	opts := testReviewOptions()
	opts.StaleWait = time.Millisecond
	r := newReviews(review.review, opts, nil, clock)
	for c := range 20 {
		_, err := r.Allowed(context.Background(), alice, logicalcluster.Name(fmt.Sprintf("c%d", c)), "list", 0)
		require.NoError(t, err)
	}
	gate := make(chan struct{})
	review.set(true, gate)
	clock.Step(opts.AllowTTL + time.Second)
	for c := range 20 {
		allowed, err := r.Allowed(context.Background(), alice, logicalcluster.Name(fmt.Sprintf("c%d", c)), "list", 0)
		require.NoError(t, err)
		require.True(t, allowed)
	}
	r.lock.Lock()
	refreshing, _ := r.refreshes.Taken(FairnessKey(alice, nil))
	r.lock.Unlock()
	require.Equal(t, 2*opts.PerUserConcurrency, refreshing, "refreshes under way for one user")
	close(gate)
	require.Eventually(t, func() bool { return r.perUserState() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestReviewByShard: each review reaches the shard holding its cluster, and
// only that one; a cluster no shard holds is ErrNoSuchCluster, never an
// answer of a shard.
func TestReviewByShard(t *testing.T) {
	t.Parallel()
	asked := map[string][]logicalcluster.Name{}
	shardReview := func(shard string, allowed bool) ReviewFunc {
		return func(_ context.Context, cluster logicalcluster.Name, _ authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			asked[shard] = append(asked[shard], cluster)
			return allowed, nil
		}
	}
	shards := map[logicalcluster.Name]ReviewFunc{"c-root": shardReview("root", true), "c-two": shardReview("shard-2", false)}
	review := ReviewByShard(func(cluster logicalcluster.Name) (ReviewFunc, bool) {
		r, found := shards[cluster]
		return r, found
	})
	spec := authorizationv1.SubjectAccessReviewSpec{User: "alice"}

	allowed, err := review(t.Context(), "c-root", spec)
	require.NoError(t, err)
	require.True(t, allowed)
	allowed, err = review(t.Context(), "c-two", spec)
	require.NoError(t, err)
	require.False(t, allowed)
	allowed, err = review(t.Context(), "c-nowhere", spec)
	require.ErrorIs(t, err, ErrNoSuchCluster)
	require.ErrorContains(t, err, "no shard holds logical cluster c-nowhere")
	require.False(t, allowed)
	require.Equal(t, map[string][]logicalcluster.Name{"root": {"c-root"}, "shard-2": {"c-two"}}, asked)
}

// TestReviewsNoSuchCluster: a review of a logical cluster that no longer
// exists (ErrNoSuchCluster, from ReviewByShard once the LogicalCluster cache
// dropped it) is a denial: not an error, not remembered, an answer kept from
// before forgotten, and Failing stays false, so that the watch of a deleted
// workspace ends while every other user's denials stay denials (403), not
// failures (503).
func TestReviewsNoSuchCluster(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	clusters := map[logicalcluster.Name]bool{"c1": true, "c2": true}
	var lock sync.Mutex
	reviewed := 0
	review := ReviewByShard(func(cluster logicalcluster.Name) (ReviewFunc, bool) {
		lock.Lock()
		defer lock.Unlock()
		if !clusters[cluster] {
			return nil, false
		}
		return func(_ context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			lock.Lock()
			defer lock.Unlock()
			reviewed++
			return cluster == "c1" && spec.User == "alice", nil
		}, true
	})
	opts := testReviewOptions()
	opts.StaleWait = time.Second
	r := newReviews(review, opts, nil, clock)
	exists := func(cluster logicalcluster.Name) bool {
		lock.Lock()
		defer lock.Unlock()
		return clusters[cluster]
	}
	a := New(r, exists)
	aliceCtx := genericapirequest.WithUser(context.Background(), alice)

	visible, err := a.Visible(aliceCtx, "c1", 20*time.Second)
	require.NoError(t, err)
	require.True(t, visible, "alice's workspace, before it is deleted")

	// c1 is deleted: the watch's next re-check (an answer at most 20s old) is
	// a denial, and so are the answers without a maximum age, the kept one
	// forgotten.
	lock.Lock()
	delete(clusters, "c1")
	lock.Unlock()
	clock.Step(21 * time.Second)
	visible, err = a.Visible(aliceCtx, "c1", 20*time.Second)
	require.NoError(t, err, "a cluster that no longer exists is no failure")
	require.False(t, visible, "the watch of the deleted workspace ends")
	allowed, err := r.Allowed(context.Background(), alice, "c1", "list", 0)
	require.NoError(t, err)
	require.False(t, allowed, "the answer kept from before the deletion serves no longer")
	require.False(t, r.Failing(), "no review failed")

	// Not remembered: asked again at the next use (a cluster the cache does
	// not hold yet shows once it does).
	_, found := r.answers.Get(reviewKey{user: subjectOf(alice), cluster: "c1", verb: "list"})
	require.False(t, found)
	lock.Lock()
	clusters["c1"] = true
	lock.Unlock()
	allowed, err = r.Allowed(context.Background(), alice, "c1", "list", 0)
	require.NoError(t, err)
	require.True(t, allowed)

	// Another user's denial in another cluster is a denial, not the error of
	// a failing review.
	bob := resourceAttrs("list")
	bob.User = &user.DefaultInfo{Name: "bob"}
	decision, _, err := a.Authorize(inCluster("c2"), bob)
	require.NoError(t, err)
	require.Equal(t, "Deny", decisionName(decision))
	require.False(t, r.Failing())

	// Whereas a review that fails is a failure, for everyone's denials.
	failing := newReviews(func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		return false, errors.New("kcp is away")
	}, opts, nil, clock)
	_, err = failing.Allowed(context.Background(), alice, "c1", "list", 0)
	require.ErrorIs(t, err, ErrUnavailable)
	require.True(t, failing.Failing())
}
