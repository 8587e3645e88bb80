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
