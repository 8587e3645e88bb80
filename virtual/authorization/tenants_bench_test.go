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
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// BenchmarkHonestDenialBesideOrgFlood: an org with 25 child workspaces
// floods reviews with a fresh ServiceAccount token per request (a new
// subject each time), while an honest ServiceAccount of another org asks
// about clusters it may not see, each once. kcp answers a review in 5ms, at
// most 100 a second (--authorization-qps). per-workspace is the keying of
// before (each workspace a tenant of its own, no bound on new subjects),
// per-org today's. It reports the honest user's latency and how many of
// their denials were answered 503 (an error, or a denial while reviews are
// failing) instead of 403, and the flood's 429s.
func BenchmarkHonestDenialBesideOrgFlood(b *testing.B) {
	const children = 25
	clusterPaths := map[logicalcluster.Name]string{"c-other": "root:other"}
	for i := range children {
		clusterPaths[logicalcluster.Name(fmt.Sprint("c-child-", i))] = fmt.Sprint("root:org:child-", i)
	}
	for _, mode := range []struct {
		name   string
		pathOf tenant.PathOf
		qps    float64
		burst  int
	}{
		{name: "per-workspace", qps: 1e9, burst: 1e9},
		{name: "per-org", pathOf: paths(clusterPaths), qps: DefaultReviewOptions().NewSubjectsPerTenantQPS, burst: DefaultReviewOptions().NewSubjectsPerTenantBurst},
	} {
		b.Run(mode.name, func(b *testing.B) {
			kcpRate := rate.NewLimiter(100, 200)
			review := func(ctx context.Context, _ logicalcluster.Name, _ authorizationv1.SubjectAccessReviewSpec) (bool, error) {
				if err := kcpRate.Wait(ctx); err != nil {
					return false, err
				}
				time.Sleep(5 * time.Millisecond)
				return false, nil
			}
			opts := DefaultReviewOptions()
			opts.Timeout = time.Second // the default's 10s, scaled down
			opts.NewSubjectsPerTenantQPS, opts.NewSubjectsPerTenantBurst = mode.qps, mode.burst
			r := NewReviews(review, opts, mode.pathOf)

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var token, flood429 atomic.Int64
			for g := range 4 * children {
				wg.Go(func() {
					for ctx.Err() == nil {
						i := token.Add(1)
						u := &user.DefaultInfo{Name: "system:serviceaccount:default:flooder", Extra: map[string][]string{
							"authentication.kcp.io/cluster-name":         {fmt.Sprint("c-child-", g%children)},
							"authentication.kubernetes.io/credential-id": {fmt.Sprint("JTI=", i)},
						}}
						if _, err := r.Allowed(ctx, u, "c1", "list", 0); errors.Is(err, ErrUserShare) {
							flood429.Add(1)
							time.Sleep(10 * time.Millisecond) // a client's backoff, shortened
						}
					}
				})
			}
			time.Sleep(200 * time.Millisecond) // the flood under way

			honest := serviceAccountOf("c-other", "default", "honest")
			var unavailable int
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				began := time.Now()
				allowed, err := r.Allowed(context.Background(), honest, logicalcluster.Name(fmt.Sprint("c-deny-", i)), "list", 0)
				took = append(took, time.Since(began))
				if err != nil || !allowed && r.Failing() {
					unavailable++
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(unavailable)/float64(b.N)*100, "honest-503-%")
			b.ReportMetric(float64(percentileOf(took, 50).Microseconds())/1000, "honest-p50-ms")
			b.ReportMetric(float64(percentileOf(took, 99).Microseconds())/1000, "honest-p99-ms")
			b.ReportMetric(float64(flood429.Load()), "flood-429s")
		})
	}
}

// percentileOf is the p-th percentile of took.
func percentileOf(took []time.Duration, p int) time.Duration {
	if len(took) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), took...)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)*p/100]
}
