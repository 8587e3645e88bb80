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
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	authorizationv1 "k8s.io/api/authorization/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
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
// holds (one deleted since the request or watch began) is ErrNoSuchCluster.
func ReviewByShard(shardOf func(cluster logicalcluster.Name) (ReviewFunc, bool)) ReviewFunc {
	return func(ctx context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		review, found := shardOf(cluster)
		if !found {
			return false, fmt.Errorf("%w: no shard holds logical cluster %s", ErrNoSuchCluster, cluster)
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
	// PerUserConcurrency the share of them one user (FairnessKey: every
	// ServiceAccount of an org and its workspaces is one) may hold.
	Concurrency, PerUserConcurrency int
	// Timeout bounds one review, waiting for its turn included.
	Timeout time.Duration
	// NewSubjectsPerTenantQPS and NewSubjectsPerTenantBurst bound the rate
	// of review subjects not seen lately, per tenant (newSubjects).
	NewSubjectsPerTenantQPS   float64
	NewSubjectsPerTenantBurst int
}

// ErrUserShare is what a review fails with when the user's own turns
// (PerUserConcurrency) stayed taken, by their other reviews, for the whole
// Timeout: the user is over their share, and the request is answered 429.
var ErrUserShare = errors.New("the user's reviews are all under way")

// ErrUnavailable is what a review fails with when kcp did not answer it
// (an error, or no answer within the Timeout, waiting for one of
// everyone's turns included); the detail follows in the error, for the
// log, never for the user: the request is answered 503 with a generic
// message. It is also what a denial fails with while reviews are failing
// (Authorizer.Authorize).
var ErrUnavailable = errors.New("kcp did not answer the SubjectAccessReview")

// ErrNoSuchCluster is what a review fails with when its logical cluster
// does not exist (any more): a watch re-checks the cluster of a workspace
// deleted meanwhile. Reviews answers it as a denial, neither remembered nor a
// failure: nothing of such a cluster is left to see, the watch ends (its
// client lists again and is denied), and it changes no one else's answers
// (Failing).
var ErrNoSuchCluster = errors.New("the logical cluster does not exist")

// failingFor is how long after a review failed Failing says so.
const failingFor = time.Minute

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

		NewSubjectsPerTenantQPS:   5,
		NewSubjectsPerTenantBurst: 50,
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
	if err := validateSubjectRate(o.NewSubjectsPerTenantQPS, o.NewSubjectsPerTenantBurst); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Reviews answers "may this user verb workspaces in this cluster?" at a
// bounded cost: every answer is remembered for a TTL in an LRU cache of
// fixed size; identical questions under way at once are asked once
// (singleflight); at most Concurrency questions are under way towards kcp,
// at most PerUserConcurrency of them for one tenant (FairnessKey), so that
// one tenant's requests cannot take every turn; and a tenant brings new
// subjects at a bounded rate (newSubjects), beyond which its reviews fail
// with ErrSubjectRate. A user is remembered only by hashes of who they
// are, so that no input's size reaches the cache: the answers by everything
// a review depends on (subjectOf), the shares by their tenant (FairnessKey),
// so that K tokens of the ServiceAccounts of an org's workspaces hold one
// share, not K.
//
// A caller may ask for an answer of a maximum age (Allowed's maxAge, what
// a watch re-authorizes with): one asked of kcp at most that long ago and
// within its TTL, else kcp is asked now, within the same bounds; no stale
// answer then, and an error if kcp does not answer within the Timeout.
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
	// pathOf names a ServiceAccount's tenant (FairnessKey).
	pathOf tenant.PathOf

	answers *utilcache.LRUExpireCache // reviewKey -> answer
	clock   clock.PassiveClock
	flights singleflight.Group
	// turns are the reviews under way towards kcp: PerUserConcurrency per
	// user (FairnessKey: a tenant), Concurrency in all.
	turns *Limiter
	// refreshTurns bound the share of turns refreshes of stale answers take
	// (half), so that a request waiting for an answer it does not have goes
	// first; refreshes, the refreshes under way per user (2 x
	// PerUserConcurrency, each going on with the user's queue: ahead).
	refreshTurns, refreshes *Limiter
	// newSubjects bound the subjects not seen lately, per tenant.
	newSubjects *newSubjects

	// lastFailure is when a review last failed (UnixNano of clock), for Failing.
	lastFailure atomic.Int64

	lock sync.Mutex
	// refreshing are the stale answers being asked again.
	refreshing map[reviewKey]struct{}
	// ahead are, per user, the answers waiting to be asked again ahead of
	// their TTL (refresh).
	ahead map[UserKey]map[reviewKey]aheadRefresh
}

// subject is a user as a review sees them: a hash of name, UID, groups and extra.
type subject [sha256.Size]byte

// question is one review to ask: its answer's key, the share it is asked
// in, and the user it is about.
type question struct {
	key  reviewKey
	fair UserKey
	user user.Info
}

type reviewKey struct {
	user    subject
	cluster logicalcluster.Name
	verb    string
}

type answer struct {
	allowed bool
	// asked is when kcp was asked (the review sent, its turn taken).
	asked      time.Time
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

// NewReviews returns the cache over review; pathOf names the tenants of
// ServiceAccounts (FairnessKey).
func NewReviews(review ReviewFunc, opts ReviewOptions, pathOf tenant.PathOf) *Reviews {
	return newReviews(review, opts, pathOf, clock.RealClock{})
}

func newReviews(review ReviewFunc, opts ReviewOptions, pathOf tenant.PathOf, clk clock.PassiveClock) *Reviews {
	return &Reviews{
		review:  review,
		opts:    opts,
		pathOf:  pathOf,
		answers: utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, clk),
		clock:   clk,
		turns:   NewLimiter(opts.PerUserConcurrency, opts.Concurrency),

		refreshTurns: NewLimiter(max(1, opts.Concurrency/2), max(1, opts.Concurrency/2)),
		refreshes:    NewLimiter(2*opts.PerUserConcurrency, 0),
		newSubjects: newNewSubjects(rate.Limit(opts.NewSubjectsPerTenantQPS), opts.NewSubjectsPerTenantBurst,
			opts.CacheSize, max(opts.AllowTTL, opts.DenyTTL)+opts.StaleGrace, clk),

		refreshing: map[reviewKey]struct{}{},
		ahead:      map[UserKey]map[reviewKey]aheadRefresh{},
	}
}

// Failing tells whether a review failed (ErrUnavailable) in the last
// minute: while it does, the authorizer answers every request it does not
// allow as it answers one whose review failed, so that no tenant can tell a
// cluster whose review failed from one that does not exist.
func (r *Reviews) Failing() bool {
	last := r.lastFailure.Load()
	return last != 0 && r.clock.Since(time.Unix(0, last)) < failingFor
}

// failed records a failed review for Failing.
func (r *Reviews) failed() {
	r.lastFailure.Store(r.clock.Now().UnixNano())
}

// Allowed tells whether u may verb workspaces.tenancy.kcp.io in cluster.
// The cluster must be one that exists: the caller checks, so that made-up
// names never reach the cache or kcp. With maxAge 0 any answer kept serves
// (its TTL, and the stale grace while kcp is slow); with maxAge > 0 only
// one asked of kcp at most maxAge ago and within its TTL, else kcp is
// asked now, and its failure is the error.
func (r *Reviews) Allowed(ctx context.Context, u user.Info, cluster logicalcluster.Name, verb string, maxAge time.Duration) (bool, error) {
	q := question{key: reviewKey{user: subjectOf(u), cluster: cluster, verb: verb}, fair: FairnessKey(u, r.pathOf), user: u}
	if cached, found := r.answers.Get(q.key); found {
		a := cached.(answer)
		now := r.clock.Now()
		switch {
		case maxAge > 0:
			if now.Before(a.freshUntil) && now.Sub(a.asked) <= maxAge {
				return a.allowed, nil
			}
			// Too old for the caller: asked now, below, and no stale answer.
		case now.Before(a.freshUntil):
			if !now.Before(a.refreshAfter) {
				r.refresh(ctx, q, true) // in the background; the answer is fresh meanwhile
			}
			return a.allowed, nil
		default:
			// Stale: ask again, and use the new answer if it comes soon enough.
			if refreshed := r.refresh(ctx, q, false); refreshed != nil {
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
	}
	if err := ctx.Err(); err != nil {
		return false, err // a request that is gone starts no review
	}
	if !r.newSubjects.admit(q.key.user, q.fair) {
		return false, fmt.Errorf("%w: more than %d, then %g a second", ErrSubjectRate, r.opts.NewSubjectsPerTenantBurst, r.opts.NewSubjectsPerTenantQPS)
	}
	flight := hex.EncodeToString(q.key.user[:]) + "/" + cluster.String() + "/" + verb
	result := r.flights.DoChan(flight, func() (interface{}, error) {
		return r.reviewOnce(ctx, q)
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

// maxAheadPerUser bounds the answers of one user waiting to be asked again
// ahead of their TTL; beyond, an answer is asked again once expired.
const maxAheadPerUser = 1000

// aheadRefresh is an answer waiting to be asked again ahead of its TTL
// (of a user of the queue's FairnessKey).
type aheadRefresh struct {
	ctx  context.Context //nolint:containedctx // the values of the request that used the answer, without its cancellation
	user user.Info
	key  reviewKey
}

// nextAheadLocked takes one of the user's answers waiting to be asked
// again ahead, skipping those asked again meanwhile or gone from the cache.
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

// reviewOnce asks kcp, in turn, and remembers the answer.
func (r *Reviews) reviewOnce(ctx context.Context, q question) (answer, error) {
	// The first request's cancellation must not fail the others waiting
	// for the same answer: the review has a deadline of its own.
	reviewCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	release, err := r.acquire(reviewCtx, q.fair)
	if err != nil {
		return answer{}, err
	}
	defer release()
	asked := r.clock.Now()
	allowed, err := r.review(reviewCtx, q.key.cluster, spec(q.user, q.key.verb))
	if errors.Is(err, ErrNoSuchCluster) {
		// A denial, not remembered: a cluster the LogicalCluster cache does
		// not hold yet is asked about again at its next use. An answer kept
		// from before the cluster went serves no longer.
		metrics.AuthorizationReviews.WithLabelValues(metrics.ReviewDenied).Inc()
		r.answers.Remove(q.key)
		return answer{allowed: false, asked: asked, freshUntil: asked, refreshAfter: asked}, nil
	}
	metrics.AuthorizationReviews.WithLabelValues(reviewResult(allowed, err)).Inc()
	if err != nil {
		r.failed()
		// Not remembered: the next request asks again, within the rate limit.
		return answer{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ttl := r.opts.DenyTTL
	if allowed {
		ttl = r.opts.AllowTTL
	}
	a := answer{allowed: allowed, asked: asked, freshUntil: asked.Add(ttl), refreshAfter: asked.Add(ttl - ttl/refreshAheadFraction)}
	r.answers.Add(q.key, a, ttl+r.opts.StaleGrace)
	return a, nil
}

// reviewResult is the result label of authorization_reviews_total.
func reviewResult(allowed bool, err error) string {
	switch {
	case err != nil:
		return metrics.ReviewError
	case allowed:
		return metrics.ReviewAllowed
	default:
		return metrics.ReviewDenied
	}
}

// acquire takes one of the user's turns and one of everyone's. Waiting
// out ctx (the review's Timeout) for the user's own turn is ErrUserShare,
// for everyone's ErrUnavailable: kcp is slower than the turns need.
func (r *Reviews) acquire(ctx context.Context, u UserKey) (release func(), err error) {
	release, full, err := r.turns.Acquire(ctx, u)
	switch {
	case err == nil:
		return release, nil
	case full == KeyFull:
		return nil, fmt.Errorf("%w: waiting %s for one of the user's %d turns: %w", ErrUserShare, r.opts.Timeout, r.opts.PerUserConcurrency, err)
	default:
		r.failed()
		return nil, fmt.Errorf("%w: waiting %s for one of the %d turns to ask kcp: %w", ErrUnavailable, r.opts.Timeout, r.opts.Concurrency, err)
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

// subjectOf hashes everything a review depends on of a user (the answers'
// key), each part length-prefixed so that no two users share a hash by
// concatenation.
func subjectOf(u user.Info) subject {
	h := sha256.New()
	writeLengthPrefixed(h, u.GetName())
	writeLengthPrefixed(h, u.GetUID())
	writeSet(h, u.GetGroups())
	keys := make([]string, 0, len(u.GetExtra()))
	for k := range u.GetExtra() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		writeLengthPrefixed(h, k)
		values := u.GetExtra()[k]
		writeLengthPrefixed(h, fmt.Sprint(len(values)))
		for _, v := range values {
			writeLengthPrefixed(h, v)
		}
	}
	var s subject
	h.Sum(s[:0])
	return s
}
