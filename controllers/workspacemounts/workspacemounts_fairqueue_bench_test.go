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

package workspacemounts

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHonestKeyBehindHangingTenant measures how long an honest
// tenant's key takes to be processed while another tenant has N keys whose
// reconcile blocks (as a GET that kcp never answers does, here for
// hangFor), with 10 workers: through the shared FIFO queue the controller
// had, through the fair queue, and through the fair queue with the reads
// behind a mountBreaker (one pair). The honest key is added once the
// hanging keys hold every worker they can. It reports ms/honest-key.
func BenchmarkHonestKeyBehindHangingTenant(b *testing.B) {
	const workers, hangFor = 10, 100 * time.Millisecond
	for _, n := range []int{40, 400} {
		for _, kind := range []string{"fifo", "fair", "fair+breaker"} {
			b.Run(fmt.Sprintf("queue=%s/hanging=%d", kind, n), func(b *testing.B) {
				var total time.Duration
				for range b.N {
					var q queue
					if kind == "fifo" {
						q = newQueue("")
					} else {
						q = newTenantQueue("", keyTenant(testTenantOf))
					}
					honest := testKey("honest", 0)
					processed := make(chan struct{})
					ctx, cancel := context.WithCancel(context.Background())
					var hanging sync.WaitGroup
					busy := workers
					var breaker *mountBreaker
					if kind == "fair+breaker" {
						busy = 1 // the pair's one read; the others wait for it
						breaker = newMountBreaker(hangFor, maxBreakerBackoff, nil, nil, q.Add)
					}
					hanging.Add(busy)
					var once [workers]sync.Once
					var started atomic.Int32
					process := func(ctx context.Context, key string) error {
						if key == honest {
							close(processed)
							return nil
						}
						const pair = "hostile|hangs.v2.example.com"
						if breaker != nil {
							verdict, _ := breaker.admit(pair, key)
							if verdict != readAllowed && verdict != readProbes {
								return nil // Unknown, or waiting for the read under way: no worker held
							}
							defer breaker.done(pair, verdict == readProbes, context.DeadlineExceeded)
						}
						if i := int(started.Add(1)); i <= busy {
							once[i-1].Do(hanging.Done)
						}
						select { // a hanging read
						case <-time.After(hangFor):
						case <-ctx.Done():
						}
						return nil
					}
					for i := range n {
						q.Add(testKey("hostile", i))
					}
					var wg sync.WaitGroup
					for range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for processNextWorkItem(ctx, q, process) {
							}
						}()
					}
					hanging.Wait() // every worker waits on a hanging key
					began := time.Now()
					q.Add(honest)
					<-processed
					total += time.Since(began)
					cancel()
					q.ShutDown()
					wg.Wait()
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/honest-key")
			})
		}
	}
}
