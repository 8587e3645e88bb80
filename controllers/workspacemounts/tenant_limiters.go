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

// This file holds the token buckets kept per tenant: a tenant's retries
// and repairs wait for its own bucket, never for one all tenants share.

package workspacemounts

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// tenantLimiters are token buckets (rate.Limiter), one per tenant, created
// full on first use. A bucket that is full again behaves as a new one, so
// the map forgets those once it has doubled since it last did: it holds
// the tenants that spent tokens recently, not every tenant ever seen.
type tenantLimiters struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	lock     sync.Mutex
	byTenant map[tenant.Name]*rate.Limiter
	pruneAt  int
}

func newTenantLimiters(limit rate.Limit, burst int) *tenantLimiters {
	return &tenantLimiters{limit: limit, burst: burst, now: time.Now, byTenant: map[tenant.Name]*rate.Limiter{}, pruneAt: minPruneAt}
}

// minPruneAt is how many tenants the map holds before it first prunes.
const minPruneAt = 64

// reserve takes a token of t's bucket, and returns how long to wait until
// it is due (0 if at once).
func (l *tenantLimiters) reserve(t tenant.Name) time.Duration {
	l.lock.Lock()
	defer l.lock.Unlock()
	now := l.now()
	return l.limiterOf(t, now).ReserveN(now, 1).DelayFrom(now)
}

// allow takes a token of t's bucket if one is there now; otherwise it
// takes none, and returns how long until one is.
func (l *tenantLimiters) allow(t tenant.Name) (bool, time.Duration) {
	l.lock.Lock()
	defer l.lock.Unlock()
	now := l.now()
	limiter := l.limiterOf(t, now)
	if limiter.AllowN(now, 1) {
		return true, 0
	}
	r := limiter.ReserveN(now, 1)
	defer r.CancelAt(now)
	return false, r.DelayFrom(now)
}

// limiterOf is t's bucket; called with the lock held.
func (l *tenantLimiters) limiterOf(t tenant.Name, now time.Time) *rate.Limiter {
	if limiter, found := l.byTenant[t]; found {
		return limiter
	}
	if len(l.byTenant) >= l.pruneAt {
		for other, limiter := range l.byTenant {
			if limiter.TokensAt(now) >= float64(l.burst) {
				delete(l.byTenant, other)
			}
		}
		l.pruneAt = max(minPruneAt, 2*len(l.byTenant))
	}
	limiter := rate.NewLimiter(l.limit, l.burst)
	l.byTenant[t] = limiter
	return limiter
}

// size is how many tenants' buckets are kept, for tests.
func (l *tenantLimiters) size() int {
	l.lock.Lock()
	defer l.lock.Unlock()
	return len(l.byTenant)
}

// tenantBucketRateLimiter is client-go's overall bucket of retries
// (workqueue.TypedBucketRateLimiter) per tenant: a tenant whose keys keep
// failing waits for its own tokens; the others' retries are not delayed.
type tenantBucketRateLimiter struct {
	tenantOf func(key string) tenant.Name
	buckets  *tenantLimiters
}

func (r *tenantBucketRateLimiter) When(key string) time.Duration {
	return r.buckets.reserve(r.tenantOf(key))
}

func (r *tenantBucketRateLimiter) Forget(string) {}

func (r *tenantBucketRateLimiter) NumRequeues(string) int { return 0 }

// keyTenant is the tenant of a workspacemounts-workspaces key
// (cluster|workspace): of its cluster, by tenantOf. A key that does not
// parse is a tenant of its own, "".
func keyTenant(tenantOf func(logicalcluster.Name) tenant.Name) func(key string) tenant.Name {
	return func(key string) tenant.Name {
		cluster, _, _, err := kcpcache.SplitMetaClusterNamespaceKey(key)
		if err != nil || cluster.Empty() {
			return ""
		}
		return tenantOf(cluster)
	}
}
