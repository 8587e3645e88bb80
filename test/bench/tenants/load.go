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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// tenantPause is how long a tenant waits between two lists.
	tenantPause = 200 * time.Millisecond
	// honestPause is how long the honest user waits between two lists.
	honestPause = 100 * time.Millisecond
	// watchRetryPause is how long a tenant waits before watching again after its watch ended.
	watchRetryPause = time.Second
	// maxWatchRestarts bounds how often one tenant watches again.
	maxWatchRestarts = 100
	// maxLoopIterations bounds every loop of the load, whatever the duration.
	maxLoopIterations = 100000
	// heapInterval is how often the plugin's heap is scraped during the load.
	heapInterval = 2 * time.Second
	// heapMetric is the Go heap in use, from the plugin's /metrics.
	heapMetric = "go_memstats_heap_inuse_bytes"
)

// memorySample is the plugin's memory at one moment.
type memorySample struct {
	framework.Memory
	// heap is heapMetric, if the plugin exports it (heapFound).
	heap      float64
	heapFound bool
}

// sampleMemory reads the plugin's VmRSS and VmHWM and scrapes its heap.
func (b *bench) sampleMemory(ctx context.Context) memorySample {
	var s memorySample
	s.Memory, _ = b.plugin.Memory.Sample()
	s.heap, s.heapFound = b.pluginHeap(ctx)
	return s
}

// pluginHeap scrapes the plugin's heap in use.
func (b *bench) pluginHeap(ctx context.Context) (float64, bool) {
	m, err := framework.ScrapeMetrics(ctx, b.metricsClient, b.plugin.MetricsURL+"/metrics")
	if err != nil {
		return 0, false
	}
	return m.Sum(heapMetric, nil)
}

// reviewCounts are the SubjectAccessReviews and TokenReviews kcp has served.
type reviewCounts struct {
	subjectAccessReviews, tokenReviews float64
}

// kcpReviews scrapes kcp's apiserver_request_total for creates of
// subjectaccessreviews and tokenreviews (the plugin is the only client that
// sends them here).
func (b *bench) kcpReviews(ctx context.Context) (reviewCounts, error) {
	m, err := framework.ScrapeMetrics(ctx, b.kcpMetrics, b.kcp.BaseURL+"/metrics")
	if err != nil {
		return reviewCounts{}, fmt.Errorf("scraping kcp's metrics: %w", err)
	}
	count := func(resource string) float64 {
		var sum float64
		// apiserver_request_total calls a create POST; accept both spellings.
		for _, verb := range []string{"POST", "create"} {
			v, _ := m.Sum("apiserver_request_total", map[string]string{"resource": resource, "verb": verb})
			sum += v
		}
		return sum
	}
	return reviewCounts{subjectAccessReviews: count("subjectaccessreviews"), tokenReviews: count("tokenreviews")}, nil
}

// floodNames returns the flooder's made-up cluster names: n like x00001z,
// then long ones like system:a:a:...:a.
func floodNames(n, long int) []string {
	names := make([]string, 0, n+long)
	for i := range n {
		names = append(names, fmt.Sprintf("x%05dz", i+1))
	}
	for i := range long {
		names = append(names, "system:"+strings.Repeat("a:", 10+i)+"a")
	}
	return names
}

// counter counts strings, safe for concurrent use.
type counter struct {
	lock   sync.Mutex
	counts map[string]int
}

func (c *counter) add(key string) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key]++
}

func (c *counter) snapshot() map[string]int {
	c.lock.Lock()
	defer c.lock.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// codeOf is a response's status code as a string, or "error" without a response.
func codeOf(code int, err error) string {
	if err != nil {
		return "error"
	}
	return fmt.Sprint(code)
}

// load runs the tenants, the flood and the honest user for the duration,
// counting the reviews kcp served and sampling the plugin's memory.
func (b *bench) load(ctx context.Context, res *result) error {
	res.before = b.sampleMemory(ctx)
	if b.opts.alone > 0 {
		logf("the honest user lists * alone for %s", b.opts.alone)
		honest, err := b.vwClient()
		if err != nil {
			return err
		}
		aloneCtx, cancel := context.WithTimeout(ctx, b.opts.alone)
		res.honestAloneLatencies, res.honestAloneCodes = b.honestLists(aloneCtx, honest)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	reviewsBefore, err := b.kcpReviews(ctx)
	if err != nil {
		return err
	}
	logf("load for %s: %d tenants listing and watching *, a flood of %d made-up cluster names, the honest user listing *",
		b.opts.duration, len(b.tokens.tenants), b.opts.floodNames+b.opts.floodLongNames)
	loadCtx, cancel := context.WithTimeout(ctx, b.opts.duration)
	defer cancel()
	began := time.Now()

	var group sync.WaitGroup
	var tenantLists, tenantListErrors, watchEvents, watchRestarts atomic.Int64
	var tenantCodes, floodCodes counter
	for _, tenant := range b.tokens.tenants {
		lister, err := b.vwClient()
		if err != nil {
			return err
		}
		watcher, err := b.vwClient()
		if err != nil {
			return err
		}
		watcher.Timeout = 0 // the watch lasts until loadCtx ends
		group.Go(func() {
			for range maxLoopIterations {
				code, _, err := get(loadCtx, lister, b.plugin.VirtualWorkspaceURL+wildcardList, tenant.token)
				if loadCtx.Err() != nil {
					return
				}
				tenantLists.Add(1)
				tenantCodes.add(codeOf(code, err))
				if err != nil || code != http.StatusOK {
					tenantListErrors.Add(1)
				}
				if !sleep(loadCtx, tenantPause) {
					return
				}
			}
		})
		group.Go(func() {
			for range maxWatchRestarts {
				events, _ := watch(loadCtx, watcher, b.plugin.VirtualWorkspaceURL+wildcardList, tenant.token)
				watchEvents.Add(int64(events))
				if loadCtx.Err() != nil || !sleep(loadCtx, watchRetryPause) {
					return
				}
				watchRestarts.Add(1)
			}
		})
	}

	// The flood: each name once, a bounded number in flight.
	names := floodNames(b.opts.floodNames, b.opts.floodLongNames)
	flooder, err := b.vwClient()
	if err != nil {
		return err
	}
	var floodDone atomic.Int64
	var floodTook time.Duration
	group.Go(func() {
		floodBegan := time.Now()
		_ = benchsetup.ForEach(loadCtx, len(names), b.opts.floodConcurrency, func(ctx context.Context, i int) error {
			u := b.plugin.VirtualWorkspaceURL + "/services/workspacemounts/clusters/" + url.PathEscape(names[i]) + "/apis/workspacemounts.io/v1alpha1/workspacemounts"
			code, _, err := get(ctx, flooder, u, b.tokens.flooder.token)
			if ctx.Err() != nil {
				return nil //nolint:nilerr // the load window ended: this request does not count
			}
			floodCodes.add(codeOf(code, err))
			floodDone.Add(1)
			return nil
		})
		floodTook = time.Since(floodBegan)
	})

	// The tokens of one ServiceAccount: lists at * and in their cluster,
	// without pause, each token on a connection of its own.
	var saLists atomic.Int64
	var saCodes counter
	saList := b.plugin.VirtualWorkspaceURL + "/services/workspacemounts/clusters/" + b.clusters[len(b.clusters)-1].String() + "/apis/workspacemounts.io/v1alpha1/workspacemounts"
	for _, token := range b.saTokens {
		client, err := b.vwClient()
		if err != nil {
			return err
		}
		group.Go(func() {
			for i := range maxLoopIterations {
				u := b.plugin.VirtualWorkspaceURL + wildcardList
				if i%2 == 1 {
					u = saList
				}
				code, _, err := get(loadCtx, client, u, token)
				if loadCtx.Err() != nil {
					return
				}
				saLists.Add(1)
				saCodes.add(codeOf(code, err))
			}
		})
	}

	// The honest user, timed.
	honest, err := b.vwClient()
	if err != nil {
		return err
	}
	var honestLatencies []time.Duration
	var honestCodes map[string]int
	group.Go(func() { honestLatencies, honestCodes = b.honestLists(loadCtx, honest) })

	// The plugin's peak memory and heap during the load.
	var peak memorySample
	group.Go(func() {
		lastHeap := time.Time{}
		for {
			if m, err := framework.ReadMemory(b.plugin.Pid()); err == nil {
				peak.RSS = max(peak.RSS, m.RSS)
				peak.Peak = max(peak.Peak, m.Peak)
			}
			if time.Since(lastHeap) >= heapInterval {
				if heap, ok := b.pluginHeap(loadCtx); ok {
					peak.heap, peak.heapFound = max(peak.heap, heap), true
				}
				lastHeap = time.Now()
			}
			if !sleep(loadCtx, 250*time.Millisecond) {
				return
			}
		}
	})

	group.Wait()
	res.elapsed = time.Since(began)
	res.loadAverage = loadAverage()
	reviewsAfter, err := b.kcpReviews(ctx)
	if err != nil {
		return err
	}
	res.after = b.sampleMemory(ctx)
	res.peak = peak
	res.subjectAccessReviews = reviewsAfter.subjectAccessReviews - reviewsBefore.subjectAccessReviews
	res.tokenReviews = reviewsAfter.tokenReviews - reviewsBefore.tokenReviews
	res.tenantLists, res.tenantListErrors = tenantLists.Load(), tenantListErrors.Load()
	res.tenantCodes = tenantCodes.snapshot()
	res.watchEvents, res.watchRestarts = watchEvents.Load(), watchRestarts.Load()
	res.floodRequests, res.floodCodes, res.floodTook = floodDone.Load(), floodCodes.snapshot(), floodTook
	res.floodPlanned = len(names)
	res.honestLatencies, res.honestCodes = honestLatencies, honestCodes
	res.saLists, res.saCodes = saLists.Load(), saCodes.snapshot()
	logf("load done after %s", res.elapsed.Round(time.Millisecond))
	return errors.Join(b.kcp.CheckRunning(), b.plugin.CheckRunning())
}

// honestLists lists * as the honest user until ctx ends, honestPause
// between lists, and returns the latencies of the 200 answers and the codes
// of all.
func (b *bench) honestLists(ctx context.Context, client *http.Client) ([]time.Duration, map[string]int) {
	var latencies []time.Duration
	var codes counter
	for range maxLoopIterations {
		start := time.Now()
		code, _, err := get(ctx, client, b.plugin.VirtualWorkspaceURL+wildcardList, b.tokens.honest.token)
		took := time.Since(start)
		if ctx.Err() != nil {
			break
		}
		codes.add(codeOf(code, err))
		if err == nil && code == http.StatusOK {
			latencies = append(latencies, took)
		}
		if !sleep(ctx, honestPause) {
			break
		}
	}
	return latencies, codes.snapshot()
}

// watch watches url until ctx ends or the server ends the watch, and returns
// how many events came.
func watch(ctx context.Context, client *http.Client, url, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"?watch=true&allowWatchBookmarks=true", http.NoBody)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return 0, fmt.Errorf("watch: %s", resp.Status)
	}
	decoder := json.NewDecoder(resp.Body)
	events := 0
	for {
		var event struct {
			Type string `json:"type"`
		}
		if err := decoder.Decode(&event); err != nil {
			return events, err
		}
		events++
	}
}

// sleep waits for d and tells whether ctx is still running.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}
