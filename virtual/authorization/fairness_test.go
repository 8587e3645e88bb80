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
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// serviceAccountToken is one token of the ServiceAccount flooder of cluster
// c-tenant, as kcp authenticates it: each token its own credential id.
func serviceAccountToken(i int) *user.DefaultInfo {
	return &user.DefaultInfo{
		Name:   "system:serviceaccount:default:flooder",
		UID:    fmt.Sprintf("uid-%d", i),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
		Extra: map[string][]string{
			"authentication.kubernetes.io/cluster-name":  {"c-tenant"},
			"authentication.kubernetes.io/credential-id": {fmt.Sprintf("JTI=token-%d", i)},
		},
	}
}

// serviceAccountOf is a ServiceAccount of a logical cluster as kcp v0.28
// authenticates it.
func serviceAccountOf(cluster, namespace, name string) *user.DefaultInfo {
	return &user.DefaultInfo{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		UID:    name + "-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		Extra:  map[string][]string{"authentication.kubernetes.io/cluster-name": {cluster}},
	}
}

func TestFairnessKey(t *testing.T) {
	t.Parallel()
	same := [][2]user.Info{
		{serviceAccountToken(1), serviceAccountToken(2)},
		{&user.DefaultInfo{Name: "a", UID: "1"}, &user.DefaultInfo{Name: "a", UID: "2"}},
		{&user.DefaultInfo{Name: "a", Extra: map[string][]string{"k": {"v"}}}, &user.DefaultInfo{Name: "a"}},
		{&user.DefaultInfo{Name: "a", Groups: []string{"x", "y"}}, &user.DefaultInfo{Name: "a", Groups: []string{"y", "x"}}},
		{ // the newer kcp's key for the service account's cluster
			&user.DefaultInfo{Name: "system:serviceaccount:default:sa", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c1"}, "authentication.kubernetes.io/credential-id": {"JTI=1"}}},
			&user.DefaultInfo{Name: "system:serviceaccount:default:sa", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c1"}, "authentication.kubernetes.io/credential-id": {"JTI=2"}}},
		},
		{ // every ServiceAccount of one workspace is one tenant, whatever its name, namespace or groups
			serviceAccountOf("c-tenant", "default", "flooder"),
			serviceAccountOf("c-tenant", "other", "another"),
		},
		{ // either kcp's key names the cluster
			serviceAccountOf("c-tenant", "default", "one"),
			&user.DefaultInfo{Name: "system:serviceaccount:default:two", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c-tenant"}}},
		},
		{ // both keys naming it, as one
			serviceAccountOf("c-tenant", "default", "one"),
			&user.DefaultInfo{Name: "system:serviceaccount:default:two", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c-tenant"}, "authentication.kubernetes.io/cluster-name": {"c-tenant"}}},
		},
	}
	for _, pair := range same {
		require.Equal(t, FairnessKey(pair[0], nil), FairnessKey(pair[1], nil), "%+v and %+v are one user", pair[0], pair[1])
	}
	require.NotEqual(t, subjectOf(serviceAccountToken(1)), subjectOf(serviceAccountToken(2)), "but two tokens' answers are kept apart")
	otherCluster := serviceAccountToken(1)
	otherCluster.Extra = map[string][]string{"authentication.kubernetes.io/cluster-name": {"c-other"}}
	for _, pair := range [][2]user.Info{
		{&user.DefaultInfo{Name: "a"}, &user.DefaultInfo{Name: "b"}},
		{&user.DefaultInfo{Name: "a", Groups: []string{"x"}}, &user.DefaultInfo{Name: "a", Groups: []string{"y"}}},
		{&user.DefaultInfo{Name: "a", Groups: []string{"x"}}, &user.DefaultInfo{Name: "a"}},
		{&user.DefaultInfo{Name: "ab", Groups: []string{"c"}}, &user.DefaultInfo{Name: "a", Groups: []string{"bc"}}},
		{&user.DefaultInfo{Name: "a", Groups: []string{"b", "c"}}, &user.DefaultInfo{Name: "a", Groups: []string{"b,c"}}},
		{serviceAccountToken(1), otherCluster}, // default:flooder of another workspace
		// A user named as the cluster is not its tenant, nor is a user
		// carrying the extra without a ServiceAccount's name.
		{serviceAccountOf("c1", "default", "sa"), &user.DefaultInfo{Name: "c1"}},
		{serviceAccountOf("c1", "default", "sa"), &user.DefaultInfo{Name: "mallory", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c1"}}}},
		// A ServiceAccount without a cluster is keyed as a user.
		{&user.DefaultInfo{Name: "system:serviceaccount:default:a"}, &user.DefaultInfo{Name: "system:serviceaccount:default:b"}},
	} {
		require.NotEqual(t, FairnessKey(pair[0], nil), FairnessKey(pair[1], nil), "%+v and %+v are two users", pair[0], pair[1])
	}

	// Whatever the input, 32 bytes, and all of it counts.
	huge := strings.Repeat("u", 1<<20)
	groups := make([]string, 1000)
	for i := range groups {
		groups[i] = strings.Repeat("g", 1000) + fmt.Sprint(i)
	}
	a := FairnessKey(&user.DefaultInfo{Name: huge + "a", Groups: groups}, nil)
	b := FairnessKey(&user.DefaultInfo{Name: huge + "b", Groups: groups}, nil)
	require.Len(t, a, sha256.Size)
	require.NotEqual(t, a, b)
}

// TestReviewsShareByFairnessKey: the tokens of one ServiceAccount hold one
// user's turns, whatever their extras, while each token's answers are its
// own (the review carries the extras).
func TestReviewsShareByFairnessKey(t *testing.T) {
	t.Parallel()
	review := newBlockingReview()
	opts := testReviewOptions()
	opts.Concurrency, opts.PerUserConcurrency = 16, 2
	r := NewReviews(review.review, opts, nil)
	done := make(chan struct{})
	for i := range 20 {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = r.Allowed(context.Background(), serviceAccountToken(i), "c1", "list", 0)
		}()
	}
	<-review.started
	<-review.started
	time.Sleep(50 * time.Millisecond) // nothing more may start
	review.lock.Lock()
	require.Equal(t, 2, review.inFlight, "20 tokens of one ServiceAccount hold its 2 turns")
	review.lock.Unlock()
	close(review.release)
	for range 20 {
		<-done
	}
	require.Equal(t, int32(20), review.calls.Load(), "each token's answer is its own")
	require.Equal(t, 2, review.maxUser["system:serviceaccount:default:flooder"])
	require.Zero(t, r.perUserState())
}

// TestReviewsShareByTenant: the ServiceAccounts of one workspace hold one
// tenant's turns; another workspace's have their own.
func TestReviewsShareByTenant(t *testing.T) {
	t.Parallel()
	requireOneReviewShare(t, nil, 10, func(i int) user.Info { return serviceAccountOf("c-tenant", "default", fmt.Sprintf("sa-%d", i)) },
		"10 ServiceAccounts of one workspace hold its 2 turns, another's its own")
}

// TestReviewsMaxAge: an answer of a maximum age is one asked of kcp at most
// that long ago and within its TTL, else kcp is asked now; no stale grace
// then, and kcp's failure is the error, where an answer of any age serves
// the stale answer.
func TestReviewsMaxAge(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &switchableReview{allowed: true}
	opts := testReviewOptions()
	opts.StaleGrace, opts.StaleWait = 5*time.Minute, 10*time.Millisecond
	r := newReviews(review.review, opts, nil, clock)
	ask := func(maxAge time.Duration) (bool, error) {
		return r.Allowed(context.Background(), alice, "c1", "list", maxAge)
	}

	allowed, err := ask(30 * time.Second)
	require.NoError(t, err)
	require.True(t, allowed)
	require.Equal(t, 1, review.count())
	clock.Step(20 * time.Second)
	allowed, err = ask(30 * time.Second)
	require.NoError(t, err)
	require.True(t, allowed)
	require.Equal(t, 1, review.count(), "20s old: young enough")

	review.set(false, nil) // revoked
	clock.Step(11 * time.Second)
	allowed, err = ask(0)
	require.NoError(t, err)
	require.True(t, allowed, "any age: the answer kept, fresh for AllowTTL")
	allowed, err = ask(30 * time.Second)
	require.NoError(t, err)
	require.False(t, allowed, "31s old: kcp is asked now, and the revocation shows")
	require.Equal(t, 2, review.count())

	// Longer than the TTL: an answer past its TTL is never young enough.
	review.set(true, nil)
	clock.Step(opts.DenyTTL + time.Second)
	allowed, err = ask(time.Hour)
	require.NoError(t, err)
	require.True(t, allowed)
	require.Equal(t, 3, review.count())

	// kcp does not answer in time: no stale answer for a maximum age.
	clock.Step(opts.AllowTTL + time.Second)
	r.review = func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		return false, errors.New("post \"https://shard/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews\": dial tcp: connection refused")
	}
	_, err = ask(30 * time.Second)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "connection refused", "the detail, for the log")
	allowed, err = ask(0)
	require.NoError(t, err)
	require.True(t, allowed, "any age: the stale answer, within the grace")
}

// TestReviewsFailing: a review kcp fails, or one that finds no turn of
// everyone's within the timeout, makes Failing true for a minute; one that
// finds no turn of the user's own is the user's share (ErrUserShare), and
// says nothing about kcp.
func TestReviewsFailing(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &countingReview{}
	r := newReviews(review.review, testReviewOptions(), nil, clock)
	require.False(t, r.Failing())
	_, err := r.Allowed(context.Background(), alice, "c1", "list", 0)
	require.NoError(t, err)
	require.False(t, r.Failing())

	review.err = fmt.Errorf("dial tcp: connection refused")
	_, err = r.Allowed(context.Background(), alice, "c2", "list", 0)
	require.ErrorIs(t, err, ErrUnavailable)
	require.True(t, r.Failing())
	clock.Step(failingFor - time.Second)
	require.True(t, r.Failing())
	clock.Step(2 * time.Second)
	require.False(t, r.Failing(), "a minute after the last failure")
}

// TestReviewsTurnErrors: a review that waits out its timeout for one of
// everyone's turns is kcp's failure (ErrUnavailable); one that waits for
// one of the user's own, held by another of their tokens, is the user's
// share (ErrUserShare).
func TestReviewsTurnErrors(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{}, 2)
	// Holds its turn until released, past the review timeout.
	held := func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		started <- struct{}{}
		<-release
		return true, nil
	}
	opts := testReviewOptions()
	opts.Concurrency, opts.PerUserConcurrency, opts.Timeout = 2, 1, 100*time.Millisecond
	r := NewReviews(held, opts, nil)
	for _, u := range []*user.DefaultInfo{alice, {Name: "bob"}} {
		go func() { _, _ = r.Allowed(context.Background(), u, "c1", "list", 0) }()
		<-started
	}

	_, err := r.Allowed(context.Background(), serviceAccountToken(1), "c2", "list", 0)
	require.ErrorIs(t, err, ErrUnavailable, "everyone's turns are taken")
	require.True(t, r.Failing())

	r.lastFailure.Store(0)
	_, err = r.Allowed(context.Background(), &user.DefaultInfo{Name: "alice", Groups: []string{"team-a"}, UID: "another token"}, "c2", "list", 0)
	require.ErrorIs(t, err, ErrUserShare, "alice's one turn is taken, by another of her tokens")
	require.False(t, r.Failing(), "the user's share says nothing about kcp")
	close(release)
}

// paths is a tenant.PathOf over a fixed map of cluster to path.
func paths(m map[logicalcluster.Name]string) tenant.PathOf {
	return func(cluster logicalcluster.Name) logicalcluster.Path {
		return logicalcluster.NewPath(m[cluster])
	}
}

// orgPaths: root:org with children in c-child-<i>, and root:other.
var orgPaths = paths(map[logicalcluster.Name]string{
	"c-org":     "root:org",
	"c-child-0": "root:org:child-0",
	"c-child-1": "root:org:child-1",
	"c-child-2": "root:org:team:child-2",
	"c-other":   "root:other",
})

// TestFairnessKeyByTenant: the ServiceAccounts of an org and of all the
// workspaces below it are one tenant; a cluster of unknown path is one of
// its own; any other user is their identity, wherever they are.
func TestFairnessKeyByTenant(t *testing.T) {
	t.Parallel()
	org := FairnessKey(serviceAccountOf("c-org", "default", "a"), orgPaths)
	for _, u := range []user.Info{
		serviceAccountOf("c-child-0", "default", "a"),
		serviceAccountOf("c-child-1", "ns", "b"),
		serviceAccountOf("c-child-2", "default", "c"),
		&user.DefaultInfo{Name: "system:serviceaccount:default:d", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"c-child-1"}}},
		// Two children of one org named: one tenant.
		&user.DefaultInfo{Name: "system:serviceaccount:default:e", Extra: map[string][]string{
			"authentication.kcp.io/cluster-name": {"c-child-1"}, "authentication.kubernetes.io/cluster-name": {"c-child-0"},
		}},
	} {
		require.Equal(t, org, FairnessKey(u, orgPaths), "%+v counts with root:org", u)
	}
	for name, u := range map[string]user.Info{
		"another org":      serviceAccountOf("c-other", "default", "a"),
		"an unknown path":  serviceAccountOf("c-new", "default", "a"),
		"root":             serviceAccountOf("root", "default", "a"),
		"a user named org": &user.DefaultInfo{Name: "root:org"},
	} {
		require.NotEqual(t, org, FairnessKey(u, orgPaths), name)
	}
	// A cluster of unknown path is itself, as without paths.
	require.Equal(t, FairnessKey(serviceAccountOf("c-new", "default", "a"), nil), FairnessKey(serviceAccountOf("c-new", "ns", "b"), orgPaths))
	require.NotEqual(t, FairnessKey(serviceAccountOf("c-new", "default", "a"), orgPaths), FairnessKey(serviceAccountOf("c-newer", "default", "a"), orgPaths))
	// Without paths, each workspace is a tenant of its own.
	require.NotEqual(t, FairnessKey(serviceAccountOf("c-child-0", "default", "a"), nil), FairnessKey(serviceAccountOf("c-child-1", "default", "a"), nil))
	// Any other user is their identity, not an org.
	require.Equal(t, FairnessKey(alice, orgPaths), FairnessKey(alice, nil))
}

// TestReviewsShareByOrg: the ServiceAccounts of an org's child workspaces
// hold the org's turns; another org's have their own.
func TestReviewsShareByOrg(t *testing.T) {
	t.Parallel()
	requireOneReviewShare(t, orgPaths, 9, func(i int) user.Info {
		return serviceAccountOf(fmt.Sprintf("c-child-%d", i%3), "default", fmt.Sprintf("sa-%d", i))
	}, "9 ServiceAccounts of an org's 3 children hold its 2 turns, another org's its own")
}

// requireOneReviewShare asks n reviews as users(0..n-1) at once, with 2
// turns per tenant, then one as a ServiceAccount of c-other: the n hold
// one tenant's 2 turns, c-other's starts beside them.
func requireOneReviewShare(t *testing.T, pathOf tenant.PathOf, n int, users func(int) user.Info, msg string) {
	t.Helper()
	review := newBlockingReview()
	opts := testReviewOptions()
	opts.Concurrency, opts.PerUserConcurrency = 16, 2
	r := NewReviews(review.review, opts, pathOf)
	done := make(chan struct{})
	ask := func(u user.Info) {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = r.Allowed(context.Background(), u, "c1", "list", 0)
		}()
	}
	for i := range n {
		ask(users(i))
	}
	<-review.started
	<-review.started
	ask(serviceAccountOf("c-other", "default", "sa-0"))
	<-review.started                  // another tenant's turn is not taken
	time.Sleep(50 * time.Millisecond) // nothing more may start
	review.lock.Lock()
	require.Equal(t, 3, review.inFlight, msg)
	review.lock.Unlock()
	close(review.release)
	for range n + 1 {
		<-done
	}
	require.Zero(t, r.perUserState())
}
