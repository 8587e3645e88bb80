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

// Command scale simulates the workspacemounts process without kcp: real
// client-go shared informers (the same indexers and cache transforms as
// server), the controller's indexers and mount object informer, the
// virtual workspace's store and REST, and the metrics collector, fed by a fake
// ListerWatcher with N synthetic mounted Workspaces. Each N runs in a process
// of its own, which measures memory per Workspace, the initial list, the CPU
// of a change, a list at * and a metrics scrape; the controller's own CPU per
// change comes from its benchmark (BenchmarkWorkspaceChange). From those it
// prints a scale table for 10^4, 10^5 and 10^6 mounted Workspaces. See
// README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// childEnv names the N a child process simulates on each shard.
const childEnv = "WORKSPACEMOUNTS_SCALE_CHILD"

type options struct {
	workspaces        []int
	shards            int
	withHistory       bool
	clustersDivisor   int
	changes           int
	lists, walks      int
	pageLimit         int64
	changeRate        float64
	requestsPerChange float64
	controllerCPU     time.Duration
	memoryLimit       string
	heapProfileDir    string
}

func main() {
	klog.SetOutput(os.Stderr)
	if n := os.Getenv(childEnv); n != "" {
		if err := child(n); err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var workspaces string
	flag.StringVar(&workspaces, "workspaces", "10000,100000", "comma-separated numbers of mounted Workspaces to simulate on each shard, each number in a process of its own")
	flag.IntVar(&o.shards, "shards", 1, "shards of --workspaces each, one plugin over all (one set of informers per shard, one virtual workspace store)")
	flag.BoolVar(&o.withHistory, "with-history", false, "every mount's status annotation with a full history (mount.MaxTransitions transitions)")
	flag.IntVar(&o.clustersDivisor, "workspaces-per-cluster", 100, "mounted Workspaces per logical cluster (N/100 clusters by default)")
	flag.IntVar(&o.changes, "changes", 5000, "mount changes sent through the informers to measure the CPU of one (at most N)")
	flag.IntVar(&o.lists, "lists", 20, "lists at * to time (the median is printed) and to measure the memory after, and first pages of paged lists")
	flag.IntVar(&o.walks, "walks", 5, "paged Table lists at * to walk to their end (p50 and p99 are printed)")
	flag.Int64Var(&o.pageLimit, "page-limit", 500, "the limit of each page of the paged Table lists at *")
	flag.Float64Var(&o.changeRate, "change-rate", 0.01, "fraction of the mounts changing per minute, for the scale table")
	flag.Float64Var(&o.requestsPerChange, "requests-per-change", 1, "kcp requests the controller sends per mount change, for the scale table (1: the PATCH, reading mount objects from its full-object informers)")
	flag.DurationVar(&o.controllerCPU, "controller-cpu-per-change", 0,
		"the controller's CPU per change; 0 runs its benchmark (go test -bench BenchmarkWorkspaceChange ./controllers/workspacemounts) to measure it")
	flag.StringVar(&o.memoryLimit, "memory-limit", "", "a soft memory limit for each simulated process, as GOMEMLIMIT (e.g. 150MiB); none by default")
	flag.StringVar(&o.heapProfileDir, "heap-profile", "", "a directory where each process writes heap-<N>.pprof after the initial list (go tool pprof -sample_index=inuse_space)")
	flag.Parse()
	for _, field := range strings.Split(workspaces, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 100 {
			fmt.Fprintf(os.Stderr, "scale: --workspaces: %q is not a number of at least 100\n", field)
			os.Exit(1)
		}
		o.workspaces = append(o.workspaces, n)
	}
	if o.shards < 1 || o.clustersDivisor < 1 || o.changes < 1 || o.lists < 1 || o.walks < 1 || o.pageLimit < 1 || o.changeRate <= 0 || o.requestsPerChange < 0 {
		fmt.Fprintln(os.Stderr, "scale: --shards, --workspaces-per-cluster, --changes, --lists, --walks, --page-limit and --change-rate must be positive, --requests-per-change not negative")
		os.Exit(1)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// result is what a child measured for its N on each shard.
type result struct {
	// N is every shard's mounted Workspaces, PerShard each shard's.
	N, PerShard, Shards, Clusters int
	WithHistory                   bool
	// Heap after GC, the simulation's objects only (minus the baseline),
	// and RSS (VmRSS) after the initial list, after FreeOSMemory, peak (VmHWM),
	// reset after the lists' JSON was written (and PeakAfterLists after the
	// check of a list at *) if PeakReset.
	HeapBytes                                   uint64
	BaseRSS, RSSAfterList, RSSReleased, PeakRSS uint64
	PeakReset                                   bool
	InitialList                                 time.Duration
	// CPU (user+system) of the whole process per change, and the wall time.
	CPUPerChange, WallPerChange time.Duration
	// One list at * (medians), its allocation, and the memory after the lists.
	ListStorage, ListTable, ListJSON, ListTableJSON time.Duration
	ListBytes, ListTableBytes                       int64
	// ListCPU is the process's CPU per list (all four steps, and the GC).
	ListCPU                       time.Duration
	ListAlloc, HeapAfterLists     uint64
	RSSAfterLists, PeakAfterLists uint64
	// A metrics scrape (after the first, which fills the collector's cache)
	// and the heap it keeps.
	Scrape          time.Duration
	HeapAfterScrape uint64
	GCCPUFraction   float64
	// Paged Table lists at * of PageLimit rows: the first page and the
	// walk of all Pages, p50 and p99.
	PageLimit                              int64
	Pages                                  int
	FirstPage, FirstPageP99, Walk, WalkP99 time.Duration
}

func run(o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The benchmark first: it fails fast outside the repository's root.
	controllerCPU, controllerRequests := o.controllerCPU, "given"
	if controllerCPU == 0 {
		fmt.Fprintln(os.Stderr, "benchmarking the controller's reconcile of a change (BenchmarkWorkspaceChange)...")
		if controllerCPU, controllerRequests, err = benchmarkController(); err != nil {
			return err
		}
	}
	var results []result
	for _, n := range o.workspaces {
		fmt.Fprintf(os.Stderr, "simulating %d mounted Workspaces on each of %d shards...\n", n, o.shards)
		cmd := exec.CommandContext(context.Background(), self, os.Args[1:]...) //nolint:gosec // G204: this very command
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n))
		if o.memoryLimit != "" {
			cmd.Env = append(cmd.Env, "GOMEMLIMIT="+o.memoryLimit)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("the simulation of %d: %w", n, err)
		}
		var r result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			return fmt.Errorf("the simulation of %d printed %q: %w", n, out.String(), err)
		}
		results = append(results, r)
	}
	report(os.Stdout, o, results, controllerCPU, controllerRequests)
	return nil
}

var benchLine = regexp.MustCompile(`BenchmarkWorkspaceChange\S*\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) gets/op\s+([\d.]+) patches/op`)

// benchmarkController runs the controller's benchmark in its package (its
// function fields stand for kcp) and returns its time per change and the
// requests it counted.
func benchmarkController() (time.Duration, string, error) {
	cmd := exec.CommandContext(context.Background(), "go", "test", "-run", "^$", "-bench", "^BenchmarkWorkspaceChange$/^read=cache$", "-benchtime", "5000x", "-count", "3",
		"./controllers/workspacemounts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, "", fmt.Errorf("go test -bench BenchmarkWorkspaceChange (run from the repository's root, or give --controller-cpu-per-change): %w\n%s", err, out)
	}
	var times []float64
	var gets, patches string
	for _, m := range benchLine.FindAllStringSubmatch(string(out), -1) {
		ns, _ := strconv.ParseFloat(m[1], 64)
		times = append(times, ns)
		gets, patches = m[2], m[3]
	}
	if len(times) == 0 {
		return 0, "", fmt.Errorf("no BenchmarkWorkspaceChange result (run from the repository's root, or give --controller-cpu-per-change):\n%s", out)
	}
	slices.Sort(times)
	return time.Duration(times[len(times)/2]), gets + " GET + " + patches + " PATCH", nil
}
