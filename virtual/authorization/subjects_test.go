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
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kcp-dev/logicalcluster/v3"
)

// childToken is the i-th token of a ServiceAccount of the org's child
// workspace c-child-<i%3> (orgPaths): a new subject each time.
func childToken(i int) *user.DefaultInfo {
	return &user.DefaultInfo{
		Name: "system:serviceaccount:default:flooder",
		Extra: map[string][]string{
			"authentication.kcp.io/cluster-name":         {fmt.Sprintf("c-child-%d", i%3)},
			"authentication.kubernetes.io/credential-id": {fmt.Sprintf("JTI=token-%d", i)},
		},
	}
}

// TestReviewsBoundNewSubjectsPerTenant: an org whose children bring a fresh
// token per request gets its burst of new subjects, then its rate, then
// 429 (ErrSubjectRate, a kind of ErrUserShare), never a failure of kcp's;
// subjects it brought before, and every other tenant, are not touched.
func TestReviewsBoundNewSubjectsPerTenant(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	review := &countingReview{}
	opts := testReviewOptions()
	opts.NewSubjectsPerTenantQPS, opts.NewSubjectsPerTenantBurst = 1, 3
	r := newReviews(review.review, opts, orgPaths, clock)
	ctx := context.Background()
	ask := func(u user.Info, cluster string) error {
		_, err := r.Allowed(ctx, u, logicalcluster.Name(cluster), "list", 0)
		return err
	}

	for i := range 3 {
		require.NoError(t, ask(childToken(i), "c1"), "token %d: within the burst", i)
	}
	err := ask(childToken(3), "c1")
	require.ErrorIs(t, err, ErrSubjectRate)
	require.ErrorIs(t, err, ErrUserShare, "answered 429")
	require.False(t, r.Failing(), "the tenant's rate says nothing about kcp")
	require.Equal(t, 3, review.count(), "no review for a subject over the rate")

	// A subject the org brought before is known: in another cluster too.
	require.NoError(t, ask(childToken(0), "c2"))
	// Others are not touched: another org, a user, a cluster of unknown path.
	require.NoError(t, ask(serviceAccountOf("c-other", "default", "sa"), "c1"))
	require.NoError(t, ask(alice, "c1"))
	require.NoError(t, ask(serviceAccountOf("c-new", "default", "sa"), "c1"))

	// The rate: one more a second.
	clock.Step(time.Second)
	require.NoError(t, ask(childToken(4), "c1"))
	require.ErrorIs(t, ask(childToken(5), "c1"), ErrSubjectRate)

	// A subject known is known for its answers' lifetime, no longer.
	clock.Step(opts.AllowTTL + opts.StaleGrace + time.Second)
	for i := 6; i < 9; i++ {
		require.NoError(t, ask(childToken(i), "c1"), "the bucket is full again")
	}
	require.ErrorIs(t, ask(childToken(0), "c3"), ErrSubjectRate, "token 0 is forgotten: new again")
}

// FuzzNewSubjects: whatever the sequence of subjects, tenants and pauses,
// the subjects a tenant was first to bring stay within its burst and rate; a
// subject admitted lately is admitted again, whatever its tenant's bucket;
// and a tenant idle long enough for its bucket to fill is admitted a new
// subject, whatever the others did.
func FuzzNewSubjects(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 1, 0, 0, 0, 200})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const qps, burst, ttl = 2, 3, 5 * time.Second
		clock := clocktesting.NewFakeClock(time.Unix(1e9, 0))
		start := clock.Now()
		n := newNewSubjects(qps, burst, 1000, ttl, clock)
		admitted := map[UserKey]map[subject]bool{}
		lastAdmitted := map[subject]time.Time{}
		lastAsked := map[UserKey]time.Time{}
		for i := 0; i+2 < len(ops); i += 3 {
			var s subject
			s[0] = ops[i] % 16
			var tenant UserKey
			tenant[0] = ops[i+1] % 4
			clock.Step(time.Duration(ops[i+2]) * 10 * time.Millisecond)
			now := clock.Now()

			idle, seen := lastAsked[tenant]
			ok := n.admit(s, tenant)
			lastAsked[tenant] = now
			if at, found := lastAdmitted[s]; found && now.Sub(at) < ttl/2 {
				if !ok {
					t.Fatalf("op %d: subject %d admitted %s ago is refused", i/3, s[0], now.Sub(at))
				}
			}
			if (!seen || now.Sub(idle) > burst*time.Second/qps+time.Second) && !ok {
				t.Fatalf("op %d: tenant %d idle since %v is refused", i/3, tenant[0], idle)
			}
			if !ok {
				continue
			}
			if _, found := lastAdmitted[s]; !found { // charged to this tenant
				if admitted[tenant] == nil {
					admitted[tenant] = map[subject]bool{}
				}
				admitted[tenant][s] = true
				if bound := burst + int(qps*now.Sub(start).Seconds()); len(admitted[tenant]) > bound {
					t.Fatalf("op %d: tenant %d brought %d new subjects, more than %d", i/3, tenant[0], len(admitted[tenant]), bound)
				}
			}
			lastAdmitted[s] = now
		}
	})
}
