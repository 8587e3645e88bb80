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
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// ErrUserShare fails a review whose user's own turns stayed taken for the whole Timeout: answered 429.
var ErrUserShare = errors.New("the user's reviews are all under way")

// ErrUnavailable fails a review kcp did not answer within the Timeout, and a denial while reviews are failing: answered
// 503 with a generic message, the detail only in the log.
var ErrUnavailable = errors.New("kcp did not answer the SubjectAccessReview")

// ErrNoSuchCluster fails a review of a logical cluster that does not exist (any more); [Reviews] answers it as a
// denial, neither remembered nor a failure.
var ErrNoSuchCluster = errors.New("the logical cluster does not exist")

// failingFor is how long after a review failed [Reviews.Failing] says so.
const failingFor = time.Minute

// Reviews answers "may this user verb workspaces in this cluster?" at a bounded cost: answers kept for a TTL in a
// bounded LRU, identical questions asked once, turns towards kcp per tenant and in all ([Limiter]), new subjects at a
// bounded rate per tenant, and answers asked again ahead of their TTL. The design: docs/design/virtual-authorization.md.
type Reviews struct {
	review ReviewFunc
	opts   ReviewOptions
	pathOf tenant.PathOf

	answers *utilcache.LRUExpireCache // reviewKey -> answer
	clock   clock.PassiveClock
	flights singleflight.Group
	// turns are the reviews under way towards kcp; refreshTurns the half of them refreshes may take, refreshes
	// those of one user.
	turns, refreshTurns, refreshes *Limiter
	newSubjects                    *newSubjects

	lastFailure atomic.Int64 // UnixNano of clock

	lock       sync.Mutex
	refreshing map[reviewKey]struct{}
	ahead      map[UserKey]map[reviewKey]aheadRefresh
}

// question is one review to ask: its answer's key, the share it is asked in, and the user it is about.
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
	// asked is when kcp was asked; a use from refreshAfter on asks again in the background.
	asked, freshUntil, refreshAfter time.Time
}

// NewReviews returns the cache over review; pathOf names the tenants of ServiceAccounts.
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

// Failing tells whether a review failed in the last minute, during which every denial answers as a failed review.
func (r *Reviews) Failing() bool {
	last := r.lastFailure.Load()
	return last != 0 && r.clock.Since(time.Unix(0, last)) < failingFor
}

func (r *Reviews) failed() {
	r.lastFailure.Store(r.clock.Now().UnixNano())
}

// Allowed tells whether u may verb workspaces.tenancy.kcp.io in cluster, one that exists. With maxAge 0 any answer
// kept serves, stale ones within the grace; with maxAge > 0 only one asked at most maxAge ago and within its TTL,
// else kcp is asked now and its failure is the error.
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
		case now.Before(a.freshUntil):
			if !now.Before(a.refreshAfter) {
				r.refresh(ctx, q, true)
			}
			return a.allowed, nil
		default:
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
		return res.Val.(answer).allowed, nil
	}
}

// reviewOnce asks kcp, in turn, and remembers the answer; the review has a deadline of its own, so that the first
// caller's cancellation fails no other caller waiting for the same answer.
func (r *Reviews) reviewOnce(ctx context.Context, q question) (answer, error) {
	reviewCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	release, err := r.acquire(reviewCtx, q.fair)
	if err != nil {
		return answer{}, err
	}
	defer release()
	asked := r.clock.Now()
	allowed, err := r.review(reviewCtx, q.key.cluster, spec(q.user, q.key.verb))
	switch {
	case errors.Is(err, ErrNoSuchCluster):
		metrics.AuthorizationReviews.WithLabelValues(metrics.ReviewDenied).Inc()
		r.answers.Remove(q.key)
		return answer{allowed: false, asked: asked, freshUntil: asked, refreshAfter: asked}, nil
	case err != nil:
		metrics.AuthorizationReviews.WithLabelValues(metrics.ReviewError).Inc()
		r.failed()
		return answer{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ttl, result := r.opts.DenyTTL, metrics.ReviewDenied
	if allowed {
		ttl, result = r.opts.AllowTTL, metrics.ReviewAllowed
	}
	metrics.AuthorizationReviews.WithLabelValues(result).Inc()
	a := answer{allowed: allowed, asked: asked, freshUntil: asked.Add(ttl), refreshAfter: asked.Add(ttl - ttl/refreshAheadFraction)}
	r.answers.Add(q.key, a, ttl+r.opts.StaleGrace)
	return a, nil
}

// acquire takes one of the user's turns and one of everyone's; waiting out ctx for the user's is [ErrUserShare],
// for everyone's [ErrUnavailable].
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

// ReviewOptions bound what the reviews cost, whatever the requests.
type ReviewOptions struct {
	// AllowTTL and DenyTTL are how long an answer is fresh.
	AllowTTL, DenyTTL time.Duration
	// StaleGrace is how long past its TTL an answer may still serve while it is asked again, when kcp does not
	// answer within StaleWait.
	StaleGrace, StaleWait time.Duration
	// CacheSize bounds the answers remembered, one per user, cluster and verb, least recently used first out.
	CacheSize int
	// Concurrency bounds the reviews under way towards kcp, PerUserConcurrency those of one [FairnessKey].
	Concurrency, PerUserConcurrency int
	// Timeout bounds one review, waiting for its turn included.
	Timeout time.Duration
	// NewSubjectsPerTenantQPS and NewSubjectsPerTenantBurst bound the rate of subjects not seen lately, per tenant.
	NewSubjectsPerTenantQPS   float64
	NewSubjectsPerTenantBurst int
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
	if o.NewSubjectsPerTenantQPS <= 0 || o.NewSubjectsPerTenantBurst < 1 {
		errs = append(errs, errors.New("--authorization-new-subjects-per-tenant-qps and --authorization-new-subjects-per-tenant-burst must be positive"))
	}
	return errors.Join(errs...)
}
