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
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// ErrSubjectRate is what a review fails with when the user's tenant
// (FairnessKey) brought more new subjects than its rate allows: a fresh
// token per request is a new subject each time, whose answers no cache
// holds. It is a kind of ErrUserShare: the request is answered 429, and
// no one else's reviews are touched.
var ErrSubjectRate = fmt.Errorf("%w: new subjects of the tenant over their rate", ErrUserShare)

// newSubjects bounds, per tenant, the rate of review subjects (subjectOf)
// not seen lately: a token bucket per FairnessKey (tenant.Limiters),
// charged once per subject, which is then known for ttl (as long as its
// answers may serve), in a bounded LRU cache: a subject forgotten early is
// charged again, to its own tenant only.
type newSubjects struct {
	buckets *tenant.Limiters[UserKey]
	known   *utilcache.LRUExpireCache // subject -> struct{}, for ttl
	ttl     time.Duration
}

func newNewSubjects(limit rate.Limit, burst, size int, ttl time.Duration, clk clock.PassiveClock) *newSubjects {
	return &newSubjects{
		buckets: tenant.NewLimiters[UserKey](limit, burst, clk.Now),
		known:   utilcache.NewLRUExpireCacheWithClock(size, clk), ttl: ttl,
	}
}

// admit tells whether a review of s may be asked: s is known, or the
// tenant's bucket has a token for it (s is known from then on).
func (n *newSubjects) admit(s subject, fair UserKey) bool {
	if _, found := n.known.Get(s); found {
		return true
	}
	if ok, _ := n.buckets.Allow(fair); !ok {
		return false
	}
	n.known.Add(s, struct{}{}, n.ttl)
	return true
}

// validateSubjectRate tells what is wrong with the rate options.
func validateSubjectRate(qps float64, burst int) error {
	if qps <= 0 || burst < 1 {
		return errors.New("--authorization-new-subjects-per-tenant-qps and --authorization-new-subjects-per-tenant-burst must be positive")
	}
	return nil
}
