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
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

const mib = 1 << 20

func mibString(b float64) string { return fmt.Sprintf("%.0f MiB", b/mib) }

// report prints what each process measured, then the scale table.
func report(w io.Writer, o options, results []result, controllerCPU time.Duration, controllerRequests string) {
	slices.SortFunc(results, func(a, b result) int { return a.N - b.N })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measured\tclusters\theap/workspace\tRSS after list\tRSS released\tpeak RSS (list)\tinitial list\tCPU/change\t"+
		"list storage\ttable\tJSON\ttable JSON\tCPU/list\talloc/list\tpeak RSS (lists)\tscrape\tGC CPU")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%d\t%.0f B\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\n",
			r.N, r.Clusters, float64(r.HeapBytes)/float64(r.N), mibString(float64(r.RSSAfterList)), mibString(float64(r.RSSReleased)),
			mibString(float64(r.PeakRSS)), r.InitialList.Round(time.Millisecond), r.CPUPerChange.Round(time.Microsecond),
			r.ListStorage.Round(100*time.Microsecond), r.ListTable.Round(100*time.Microsecond), r.ListJSON.Round(100*time.Microsecond),
			r.ListTableJSON.Round(100*time.Microsecond), r.ListCPU.Round(time.Millisecond), mibString(float64(r.ListAlloc)),
			mibString(float64(r.PeakAfterLists)), r.Scrape.Round(100*time.Microsecond), 100*r.GCCPUFraction)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "controller (BenchmarkWorkspaceChange): %s CPU and %s per change\n\n", controllerCPU.Round(time.Microsecond), controllerRequests)
	reportShards(w, results)

	largest := results[len(results)-1]
	cpuPerChange := largest.CPUPerChange + controllerCPU
	fmt.Fprintf(w, "scale: %.2g%% of the mounts changing per minute, %.3g kcp requests per change, %s CPU per change (informers %s at %d + controller %s)\n",
		o.changeRate*100, o.requestsPerChange, cpuPerChange.Round(time.Microsecond), largest.CPUPerChange.Round(time.Microsecond), largest.N,
		controllerCPU.Round(time.Microsecond))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mounted workspaces\t\tRSS steady\tRSS peak\tchanges/s\tCPU (cores)\tinitial list\tkcp requests/s\tlist at * (Table)\tlist at * (JSON)")
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		how := "measured"
		if !slices.ContainsFunc(results, func(r result) bool { return r.N == n }) {
			how = "extrapolated"
		}
		at := func(f func(result) float64) float64 { return fit(results, n, f) }
		changes := float64(n) * o.changeRate / 60
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%.3f\t%s\t%.1f\t%s\t%s\n", n, how,
			mibString(at(func(r result) float64 { return float64(r.RSSReleased) })),
			mibString(at(func(r result) float64 { return float64(max(r.PeakRSS, r.PeakAfterLists)) })),
			changes, changes*cpuPerChange.Seconds(),
			seconds(at(func(r result) float64 { return r.InitialList.Seconds() })),
			changes*o.requestsPerChange,
			seconds(at(func(r result) float64 { return (r.ListTable + r.ListTableJSON).Seconds() })),
			seconds(at(func(r result) float64 { return (r.ListStorage + r.ListJSON).Seconds() })))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "(lists in-process: storage, table and encoding, no TLS or HTTP; extrapolated rows are linear in N through the measured ones)")
}

// reportShards prints, per process, one plugin over its shards: memory,
// the initial sync and paged Table lists at *.
func reportShards(w io.Writer, results []result) {
	fmt.Fprintf(w, "one plugin over its shards: paged Table lists at * of %d rows (REST.List and REST.WriteTableJSON, every continue)\n", results[0].PageLimit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mounted workspaces\tshards\thistory\theap/workspace\tRSS steady\tRSS peak\tpeak/steady\tinitial sync\t"+
		"first page p50\tp99\twalk p50\tp99\tpages")
	for _, r := range results {
		peak := mibString(float64(r.PeakRSS))
		if !r.PeakReset {
			peak += " (not reset)"
		}
		fmt.Fprintf(tw, "%d\t%d\t%t\t%.0f B\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%d\n",
			r.N, r.Shards, r.WithHistory, float64(r.HeapBytes)/float64(r.N), mibString(float64(r.RSSReleased)), peak,
			float64(r.PeakRSS)/float64(r.RSSReleased), r.InitialList.Round(time.Millisecond),
			r.FirstPage.Round(10*time.Microsecond), r.FirstPageP99.Round(10*time.Microsecond),
			r.Walk.Round(time.Millisecond), r.WalkP99.Round(time.Millisecond), r.Pages)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// fit is f at n: measured if a result has n, else on the line through the
// two measured Ns nearest to it (through 0 and the one, with one).
func fit(results []result, n int, f func(result) float64) float64 {
	for _, r := range results {
		if r.N == n {
			return f(r)
		}
	}
	if len(results) == 1 {
		return f(results[0]) * float64(n) / float64(results[0].N)
	}
	sorted := slices.Clone(results)
	slices.SortFunc(sorted, func(a, b result) int { return abs(a.N-n) - abs(b.N-n) })
	a, b := sorted[0], sorted[1]
	slope := (f(b) - f(a)) / float64(b.N-a.N)
	return f(a) + slope*float64(n-a.N)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
