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
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	authorizationv1 "k8s.io/api/authorization/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// ReviewFunc asks kcp one question: may the subject of spec do what spec
// says in cluster? It is one SubjectAccessReview. kcp's reason is not kept:
// a tenant learns no more from a denial than from a cluster that does not exist.
type ReviewFunc func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (allowed bool, err error)

// NewSubjectAccessReviewer sends SubjectAccessReviews to
// /clusters/<cluster>/apis/authorization.k8s.io/v1/subjectaccessreviews
// through one REST client, whatever the cluster: one connection pool and
// one rate limiter (cfg's QPS and Burst) for every review, unlike a
// cluster-aware clientset, which keeps a client (and a rate limiter) per
// cluster it was ever asked about. cfg.Host is the shard's base URL.
func NewSubjectAccessReviewer(cfg *rest.Config) (ReviewFunc, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	restClient := client.AuthorizationV1().RESTClient()
	return func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		var result authorizationv1.SubjectAccessReview
		err := restClient.Post().
			AbsPath(cluster.Path().RequestPath(), "apis", authorizationv1.SchemeGroupVersion.Group, authorizationv1.SchemeGroupVersion.Version, "subjectaccessreviews").
			Body(&authorizationv1.SubjectAccessReview{Spec: spec}).
			Do(ctx).
			Into(&result)
		if err != nil {
			return false, err
		}
		return result.Status.Allowed && !result.Status.Denied, nil
	}, nil
}

// ReviewByShard sends each review to the shard holding its cluster, as
// shardOf tells (from the shards' LogicalCluster caches): a shard answers
// SubjectAccessReviews only for its own logical clusters. A cluster no shard
// holds is an error, which the caller takes as a denial.
func ReviewByShard(shardOf func(cluster logicalcluster.Name) (ReviewFunc, bool)) ReviewFunc {
	return func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		review, found := shardOf(cluster)
		if !found {
			return false, fmt.Errorf("no shard holds logical cluster %s", cluster)
		}
		return review(ctx, cluster, spec)
	}
}

// ReviewOptions bound what the reviews cost, whatever the requests.
type ReviewOptions struct {
	// AllowTTL and DenyTTL are how long an answer is fresh.
	AllowTTL, DenyTTL time.Duration
	// StaleGrace is how long after that an answer may still be used while it
	// is asked again, when kcp does not answer within StaleWait: under load,
	// a request then does not wait for a review whose answer it already has,
	// and while kcp is unreachable, what a user could see stays visible.
	StaleGrace, StaleWait time.Duration
	// CacheSize bounds the answers remembered, one per (user, cluster, verb);
	// the least recently used goes first.
	CacheSize int
	// Concurrency bounds the reviews under way towards kcp at once;
	// PerUserConcurrency the share of them one user's requests may hold.
	Concurrency, PerUserConcurrency int
	// Timeout bounds one review, waiting for its turn included.
	Timeout time.Duration
}

// DefaultReviewOptions are the defaults of the flags.
func DefaultReviewOptions() ReviewOptions {
	return ReviewOptions{
		AllowTTL:           time.Minute,
		DenyTTL:            30 * time.Second,
		StaleGrace:         5 * time.Minute,
		StaleWait:          100 * time.Millisecond,
		CacheSize:          10000,
		Concurrency:        16,
		PerUserConcurrency: 2,
		Timeout:            10 * time.Second,
	}
}

// Validate tells what is wrong with the options.
func (o ReviewOptions) Validate() error {
	var errs []error
	if o.AllowTTL < 0 || o.DenyTTL < 0 || o.StaleGrace < 0 || o.StaleWait < 0 {
		errs = append(errs, errors.New("the authorization cache TTLs and grace must not be negative"))
	}
	if o.CacheSize < 1 {
		errs = append(errs, fmt.Errorf("--authorization-cache-size must be at least 1, not %d", o.CacheSize))
	}
	if o.Concurrency < 1 || o.PerUserConcurrency < 1 {
		errs = append(errs, errors.New("--authorization-concurrency and --authorization-per-user-concurrency must be at least 1"))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("--authorization-timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Reviews answers "may this user verb workspaces in this cluster?" at a
// bounded cost: every answer is remembered for a TTL in an LRU cache of
// fixed size; identical questions under way at once are asked once
// (singleflight); at most Concurrency questions are under way towards kcp,
// at most PerUserConcurrency of them for one user, so that one user's
// requests cannot take every turn. A user is remembered only by a hash of
// who they are, so that no input's size reaches the cache.
//
// An answer used in the last quarter of its TTL is asked again in the
// background (refreshAheadFraction). An answer past its TTL is asked again
// at its next use; if kcp answers
// within StaleWait, the new answer is used (so a revocation shows within
// the TTL while kcp keeps up), else the old one, for at most StaleGrace
// more, while the review goes on: a list at * over many clusters does not
// wait for the reviews of everyone else when kcp is saturated.
type Reviews struct {
	review ReviewFunc
	opts   ReviewOptions

	answers *utilcache.LRUExpireCache // reviewKey -> answer
	clock   clock.PassiveClock
	flights singleflight.Group
	slots   chan struct{}
	// refreshSlots bound the share of slots refreshes of stale answers take
	// (half), so that a request waiting for an answer it does not have goes first.
	refreshSlots chan struct{}

	lock     sync.Mutex
	userBusy map[subject]*userSlots
	// refreshing are the stale answers being asked again, userRefreshes how many per user.
	refreshing    map[reviewKey]struct{}
	userRefreshes map[subject]int
	// ahead are, per user, the answers waiting to be asked again ahead of
	// their TTL (refresh).
	ahead map[subject]map[reviewKey]aheadRefresh
}

// subject is a user as kcp sees them: a hash of name, UID, groups and extra.
type subject [sha256.Size]byte

type reviewKey struct {
	user    subject
	cluster logicalcluster.Name
	verb    string
}

type answer struct {
	allowed    bool
	freshUntil time.Time
	// refreshAfter is when a use of the answer starts asking again in the
	// background (refreshAheadFraction before freshUntil).
	refreshAfter time.Time
}

// refreshAheadFraction: an answer used in the last quarter of its TTL is
// asked again in the background, while it serves, so that a client that
// keeps asking never finds it expired (a list at * over a hundred clusters
// would otherwise wait, every TTL, for a review per cluster one after the
// other: StaleWait each). No answer serves longer than its TTL for that:
// a revocation shows sooner, never later. It costs at most one review per
// answer in use per three quarters of its TTL instead of per TTL, within
// the same per-user and global bounds.
const refreshAheadFraction = 4

type userSlots struct {
	slots chan struct{}
	users int
}

// NewReviews returns the cache over review.
func NewReviews(review ReviewFunc, opts ReviewOptions) *Reviews {
	return newReviews(review, opts, clock.RealClock{})
}

func newReviews(review ReviewFunc, opts ReviewOptions, clk clock.PassiveClock) *Reviews {
	return &Reviews{
		review:  review,
		opts:    opts,
		answers: utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, clk),
		clock:   clk,
		slots:   make(chan struct{}, opts.Concurrency),

		refreshSlots: make(chan struct{}, max(1, opts.Concurrency/2)),
		userBusy:     map[subject]*userSlots{},

		refreshing:    map[reviewKey]struct{}{},
		userRefreshes: map[subject]int{},
		ahead:         map[subject]map[reviewKey]aheadRefresh{},
	}
}

// Allowed tells whether u may verb workspaces.tenancy.kcp.io in cluster.
// The cluster must be one that exists: the caller checks, so that made-up
// names never reach the cache or kcp.
func (r *Reviews) Allowed(ctx context.Context, u user.Info, cluster logicalcluster.Name, verb string) (bool, error) {
	key := reviewKey{user: subjectOf(u), cluster: cluster, verb: verb}
	if cached, found := r.answers.Get(key); found {
		a := cached.(answer)
		if now := r.clock.Now(); now.Before(a.freshUntil) {
			if !now.Before(a.refreshAfter) {
				r.refresh(ctx, key, u, true) // in the background; the answer is fresh meanwhile
			}
			return a.allowed, nil
		}
		// Stale: ask again, and use the new answer if it comes soon enough.
		if refreshed := r.refresh(ctx, key, u, false); refreshed != nil {
			wait := time.NewTimer(r.opts.StaleWait)
			defer wait.Stop()
			select {
			case res := <-refreshed:
				if res.err == nil {
					a = res.answer
				}
			case <-wait.C:
			case <-ctx.Done():
			}
		}
		return a.allowed, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err // a request that is gone starts no review
	}
	flight := hex.EncodeToString(key.user[:]) + "/" + cluster.String() + "/" + verb
	result := r.flights.DoChan(flight, func() (interface{}, error) {
		return r.reviewOnce(ctx, key, u)
	})
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case res := <-result:
		if res.Err != nil {
			return false, res.Err
		}
		a := res.Val.(answer)
		return a.allowed, nil
	}
}

type refreshed struct {
	answer answer
	err    error
}

// refresh asks kcp again about an answer, unless that is under way
// already or the user has more than a few refreshes under way: nil then,
// and the answer serves as it is. An answer asked ahead of its TTL (ahead)
// that finds the user's refreshes under way waits in the user's queue
// instead (at most maxAheadPerUser), and a refresh that is done takes the
// next from there: so every answer a list at * uses gets asked again before
// it expires, at the pace of the user's few refreshes.
func (r *Reviews) refresh(ctx context.Context, key reviewKey, u user.Info, ahead bool) <-chan refreshed {
	r.lock.Lock()
	if _, found := r.refreshing[key]; found {
		r.lock.Unlock()
		return nil
	}
	if r.userRefreshes[key.user] >= 2*r.opts.PerUserConcurrency {
		if queue := r.ahead[key.user]; ahead && len(queue) < maxAheadPerUser {
			if queue == nil {
				queue = map[reviewKey]aheadRefresh{}
				r.ahead[key.user] = queue
			}
			queue[key] = aheadRefresh{ctx: context.WithoutCancel(ctx), user: u}
		}
		r.lock.Unlock()
		return nil
	}
	r.refreshing[key] = struct{}{}
	r.userRefreshes[key.user]++
	r.lock.Unlock()

	result := make(chan refreshed, 1)
	go func() {
		a, err := r.refreshOnce(ctx, key, u)
		result <- refreshed{answer: a, err: err}
		for {
			r.lock.Lock()
			delete(r.refreshing, key)
			next, found := r.nextAheadLocked(key.user)
			if !found {
				r.userRefreshes[key.user]--
				if r.userRefreshes[key.user] == 0 {
					delete(r.userRefreshes, key.user)
				}
				r.lock.Unlock()
				return
			}
			r.refreshing[next.key] = struct{}{}
			r.lock.Unlock()
			key = next.key
			_, _ = r.refreshOnce(next.ctx, next.key, next.user) // remembered, or asked again when next used
		}
	}()
	return result
}

// maxAheadPerUser bounds the answers of one user waiting to be asked again
// ahead of their TTL; beyond, an answer is asked again once expired.
const maxAheadPerUser = 1000

// aheadRefresh is an answer waiting to be asked again ahead of its TTL.
type aheadRefresh struct {
	ctx  context.Context //nolint:containedctx // the values of the request that used the answer, without its cancellation
	user user.Info
	key  reviewKey
}

// nextAheadLocked takes one of the user's answers waiting to be asked
// again ahead, skipping those asked again meanwhile or gone from the cache.
func (r *Reviews) nextAheadLocked(u subject) (aheadRefresh, bool) {
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
func (r *Reviews) refreshOnce(ctx context.Context, key reviewKey, u user.Info) (answer, error) {
	select {
	case r.refreshSlots <- struct{}{}:
		defer func() { <-r.refreshSlots }()
		return r.reviewOnce(ctx, key, u)
	case <-time.After(r.opts.Timeout):
		return answer{}, errors.New("no turn to ask kcp again")
	}
}

// reviewOnce asks kcp, in turn, and remembers the answer.
func (r *Reviews) reviewOnce(ctx context.Context, key reviewKey, u user.Info) (answer, error) {
	// The first request's cancellation must not fail the others waiting
	// for the same answer: the review has a deadline of its own.
	reviewCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	mine, err := r.acquire(reviewCtx, key.user)
	if err != nil {
		return answer{}, fmt.Errorf("waiting for a turn to ask kcp: %w", err)
	}
	defer r.release(key.user, mine)
	allowed, err := r.review(reviewCtx, key.cluster, spec(u, key.verb))
	if err != nil {
		return answer{}, err // not remembered: the next request asks again, within the rate limit
	}
	ttl := r.opts.DenyTTL
	if allowed {
		ttl = r.opts.AllowTTL
	}
	now := r.clock.Now()
	a := answer{allowed: allowed, freshUntil: now.Add(ttl), refreshAfter: now.Add(ttl - ttl/refreshAheadFraction)}
	r.answers.Add(key, a, ttl+r.opts.StaleGrace)
	return a, nil
}

// acquire takes one of the user's turns, then one of everyone's.
func (r *Reviews) acquire(ctx context.Context, u subject) (*userSlots, error) {
	r.lock.Lock()
	mine := r.userBusy[u]
	if mine == nil {
		mine = &userSlots{slots: make(chan struct{}, r.opts.PerUserConcurrency)}
		r.userBusy[u] = mine
	}
	mine.users++
	r.lock.Unlock()

	select {
	case mine.slots <- struct{}{}:
	case <-ctx.Done():
		r.leave(u, mine)
		return nil, ctx.Err()
	}
	select {
	case r.slots <- struct{}{}:
		return mine, nil
	case <-ctx.Done():
		<-mine.slots
		r.leave(u, mine)
		return nil, ctx.Err()
	}
}

func (r *Reviews) release(u subject, mine *userSlots) {
	<-r.slots
	<-mine.slots
	r.leave(u, mine)
}

// leave forgets a user with nothing under way, so that the map holds only
// the users of requests in flight.
func (r *Reviews) leave(u subject, mine *userSlots) {
	r.lock.Lock()
	defer r.lock.Unlock()
	mine.users--
	if mine.users == 0 {
		delete(r.userBusy, u)
	}
}

// spec is the SubjectAccessReview asked for verb on workspaces.
func spec(u user.Info, verb string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(u.GetExtra()) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(u.GetExtra()))
		for k, v := range u.GetExtra() {
			extra[k] = v
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		User:   u.GetName(),
		UID:    u.GetUID(),
		Groups: u.GetGroups(),
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:     verb,
			Group:    tenancyv1alpha1.SchemeGroupVersion.Group,
			Version:  tenancyv1alpha1.SchemeGroupVersion.Version,
			Resource: "workspaces",
		},
	}
}

// subjectOf hashes everything a review depends on of a user, each part
// length-prefixed so that no two users share a hash by concatenation.
func subjectOf(u user.Info) subject {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write(u.GetName())
	write(u.GetUID())
	groups := append([]string(nil), u.GetGroups()...)
	sort.Strings(groups)
	write(fmt.Sprint(len(groups)))
	for _, g := range groups {
		write(g)
	}
	keys := make([]string, 0, len(u.GetExtra()))
	for k := range u.GetExtra() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		write(k)
		values := u.GetExtra()[k]
		write(fmt.Sprint(len(values)))
		for _, v := range values {
			write(v)
		}
	}
	var s subject
	h.Sum(s[:0])
	return s
}
