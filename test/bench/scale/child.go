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
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// child simulates N Workspaces on each shard and prints its result as JSON.
func child(arg string) (err error) {
	n, err := strconv.Atoi(arg)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	perCluster := fs.Int("workspaces-per-cluster", 100, "")
	changes := fs.Int("changes", 5000, "")
	lists := fs.Int("lists", 20, "")
	walks := fs.Int("walks", 5, "")
	pageLimit := fs.Int64("page-limit", 500, "")
	shards := fs.Int("shards", 1, "")
	history := fs.Bool("with-history", false, "")
	heapProfileDir := fs.String("heap-profile", "", "")
	fs.String("workspaces", "", "")
	fs.Float64("change-rate", 0, "")
	fs.Float64("requests-per-change", 0, "")
	fs.Duration("controller-cpu-per-change", 0, "")
	fs.String("memory-limit", "", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "workspacemounts-scale-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	clusters := max(1, n / *perCluster)
	r := result{N: n * *shards, PerShard: n, Shards: *shards, Clusters: clusters * *shards, WithHistory: *history}
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	baseHeap := m.HeapAlloc
	r.BaseRSS = memory().RSS

	s, err := newSim(dir, *shards, n, clusters, *history)
	if err != nil {
		return err
	}
	// The lists' JSON is in files now: what writing them took is not the plugin's.
	runtime.GC()
	debug.FreeOSMemory()
	r.PeakReset = resetPeak() == nil
	began := time.Now()
	if err := s.start(ctx); err != nil {
		return err
	}
	r.InitialList = time.Since(began)
	r.RSSAfterList = memory().RSS
	r.HeapBytes = liveHeap() - baseHeap
	debug.FreeOSMemory()
	released := memory()
	r.RSSReleased, r.PeakRSS = released.RSS, released.Peak
	if *heapProfileDir != "" {
		if err := writeHeapProfile(*heapProfileDir, r.N); err != nil {
			return err
		}
	}
	// Changes: each of the first m2 Workspaces flips to the other phase, once.
	m2 := min(*changes, n)
	encoded, err := s.encodeChanges(m2)
	if err != nil {
		return err
	}
	cpuBefore := cpuTime()
	began = time.Now()
	for _, c := range encoded {
		if err := s.send(c); err != nil {
			return err
		}
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()
	if err := s.waitForLatest(waitCtx, m2-1); err != nil {
		return err
	}
	clear(encoded) // the events are garbage now
	r.WallPerChange = time.Since(began) / time.Duration(m2)
	r.CPUPerChange = (cpuTime() - cpuBefore) / time.Duration(m2)

	// The metrics: the first scrape fills the collector's cache.
	if _, err := scrape(ctx); err != nil {
		return err
	}
	var scrapes []time.Duration
	for range 5 {
		d, err := scrape(ctx)
		if err != nil {
			return err
		}
		scrapes = append(scrapes, d)
	}
	r.Scrape = median(scrapes)
	r.HeapAfterScrape = liveHeap() - baseHeap

	// Lists at *: one that checks what is written, then those timed.
	t, err := s.list(ctx, true)
	if err != nil {
		return err
	}
	if t.items != r.N {
		return fmt.Errorf("a list at * had %d items, not %d", t.items, r.N)
	}
	// The check's copies are not the lists': the peak after the lists is theirs.
	runtime.GC()
	debug.FreeOSMemory()
	if r.PeakReset {
		r.PeakReset = resetPeak() == nil
	}
	var storage, table, js, tableJS []time.Duration
	runtime.ReadMemStats(&m)
	allocBefore := m.TotalAlloc
	cpuBefore = cpuTime()
	for range *lists {
		t, err := s.list(ctx, false)
		if err != nil {
			return err
		}
		storage, table, js, tableJS = append(storage, t.storage), append(table, t.table), append(js, t.json), append(tableJS, t.tableJSON)
		r.ListBytes, r.ListTableBytes = int64(t.bytes), int64(t.tableBytes)
	}
	r.ListCPU = (cpuTime() - cpuBefore) / time.Duration(*lists)
	runtime.ReadMemStats(&m)
	r.ListAlloc = uint64(float64(m.TotalAlloc-allocBefore) / float64(*lists))
	r.ListStorage, r.ListTable, r.ListJSON, r.ListTableJSON = median(storage), median(table), median(js), median(tableJS)
	afterLists := memory()
	r.RSSAfterLists, r.PeakAfterLists = afterLists.RSS, afterLists.Peak
	r.HeapAfterLists = liveHeap() - baseHeap
	r.GCCPUFraction = m.GCCPUFraction
	if err := pagedLists(ctx, s, &r, *pageLimit, *lists, *walks); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// pagedLists measures paged Table lists at * of limit rows: one walk that
// checks every WorkspaceMount comes once, then first pages and walks.
func pagedLists(ctx context.Context, s *sim, r *result, limit int64, firsts, walks int) error {
	seen := make(map[string]bool, r.N)
	t, err := s.pagedTable(ctx, limit, false, seen)
	if err != nil {
		return err
	}
	if len(seen) != r.N {
		return fmt.Errorf("a paged list at * had %d WorkspaceMounts in %d pages, not %d", len(seen), t.pages, r.N)
	}
	r.Pages, r.PageLimit = t.pages, limit
	clear(seen)
	var first, walk []time.Duration
	for range firsts {
		t, err := s.pagedTable(ctx, limit, true, nil)
		if err != nil {
			return err
		}
		first = append(first, t.first)
	}
	for range walks {
		t, err := s.pagedTable(ctx, limit, false, nil)
		if err != nil {
			return err
		}
		walk = append(walk, t.walk)
	}
	r.FirstPage, r.FirstPageP99 = percentile(first, 50), percentile(first, 99)
	r.Walk, r.WalkP99 = percentile(walk, 50), percentile(walk, 99)
	return nil
}

// scrape serves /metrics once, as Prometheus scrapes it.
func scrape(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	recorder := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(recorder, httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", http.NoBody))
	if recorder.Code != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %d", recorder.Code)
	}
	return time.Since(began), nil
}

// resetPeak sets the process's VmHWM to its RSS (proc(5), clear_refs).
func resetPeak() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// liveHeap is the heap in use after a full GC.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func writeHeapProfile(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(fmt.Sprintf("%s/heap-%d.pprof", dir, n))
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}

// memory is the process's own VmRSS and VmHWM (framework.ReadMemory); zero if unreadable.
func memory() framework.Memory {
	m, err := framework.ReadMemory(os.Getpid())
	if err != nil {
		return framework.Memory{}
	}
	return m
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// percentile is the p-th percentile of ds, by nearest rank.
func percentile(ds []time.Duration, p int) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[max(0, (len(ds)*p+99)/100-1)]
}
