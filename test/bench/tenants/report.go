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
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// result is what one run measured.
type result struct {
	opts          options
	label         string
	pluginVersion string
	setup         time.Duration
	// elapsed is the load window, from before the first request to after the last.
	elapsed time.Duration

	// subjectAccessReviews and tokenReviews are the creates kcp served during the load window.
	subjectAccessReviews, tokenReviews float64

	tenantLists, tenantListErrors int64
	tenantCodes                   map[string]int
	watchEvents, watchRestarts    int64

	floodPlanned  int
	floodRequests int64
	floodCodes    map[string]int
	floodTook     time.Duration

	honestLatencies []time.Duration
	honestCodes     map[string]int
	// honestAlone* are the honest user's lists alone, before the load (--alone).
	honestAloneLatencies []time.Duration
	honestAloneCodes     map[string]int

	// saLists and saCodes are the lists of the --sa-tokens tokens of one ServiceAccount.
	saLists int64
	saCodes map[string]int

	// before, peak, after and idle are the plugin's memory before the load,
	// the highest during it, right after it, and after --idle.
	before, peak, after, idle memorySample
	// loadAverage is the machine's, right after the load.
	loadAverage string

	// conns is what --conns measured, instead of the load.
	conns *connsResult
}

// print writes the two tables and notes.
func (r *result) print(w io.Writer) {
	if r.conns != nil {
		r.printConns(w)
		return
	}
	perMinute := func(count float64) string {
		if r.elapsed <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", count/r.elapsed.Minutes())
	}
	p50, p99 := percentile(r.honestLatencies, 50), percentile(r.honestLatencies, 99)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "plugin\tload\tSARs\tSARs/min\tTokenReviews/min\thonest lists\thonest p50\thonest p99\ttenant lists\ttenant errors\twatch events\twatch restarts\tflood\tflood codes") //nolint:dupword // two columns
	fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d/%d in %s\t%s\n",
		r.label, r.elapsed.Round(time.Second), r.subjectAccessReviews, perMinute(r.subjectAccessReviews), perMinute(r.tokenReviews),
		len(r.honestLatencies), format(p50), format(p99),
		r.tenantLists, r.tenantListErrors, r.watchEvents, r.watchRestarts,
		r.floodRequests, r.floodPlanned, r.floodTook.Round(100*time.Millisecond), codes(r.floodCodes))
	_ = tw.Flush()
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "plugin\tRSS before\tRSS peak\tRSS after\tRSS idle\tVmHWM\theap before\theap peak\theap after\theap idle")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.label,
		framework.MiB(r.before.RSS), framework.MiB(r.peak.RSS), framework.MiB(r.after.RSS), framework.MiB(r.idle.RSS),
		framework.MiB(max(r.idle.Peak, r.after.Peak, r.peak.Peak)),
		heap(r.before), heap(r.peak), heap(r.after), heap(r.idle))
	_ = tw.Flush()

	fmt.Fprintf(w, "\nSet-up: %d clusters, %d mounted Workspaces, %d tenants with %d clusters each, in %s.\n",
		r.opts.clusters, r.opts.clusters*r.opts.mountsPerCluster, r.opts.users, r.opts.grantsPerUser, r.setup.Round(time.Second))
	fmt.Fprintf(w, "Honest user's responses: %s; tenants' lists: %s.\n", codes(r.honestCodes), codes(r.tenantCodes))
	if r.opts.alone > 0 {
		fmt.Fprintf(w, "Honest user alone for %s before the load: %d lists, p50 %s, p99 %s, max %s (%s); during the load: p50 %s, p99 %s, max %s.\n",
			r.opts.alone, len(r.honestAloneLatencies), format(percentile(r.honestAloneLatencies, 50)), format(percentile(r.honestAloneLatencies, 99)),
			format(percentile(r.honestAloneLatencies, 100)), codes(r.honestAloneCodes), format(p50), format(p99), format(percentile(r.honestLatencies, 100)))
	}
	if r.opts.saTokens > 0 {
		fmt.Fprintf(w, "%d tokens of one ServiceAccount, listing * and their cluster without pause: %d lists (%s).\n", r.opts.saTokens, r.saLists, codes(r.saCodes))
	}
	fmt.Fprintf(w, "Load average (1, 5, 15 min) after the load: %s.\n", r.loadAverage)
	fmt.Fprintf(w, "Plugin version %s; heap is %s from its /metrics, idle is after %s without requests.\n", r.pluginVersion, heapMetric, r.opts.idle)
}

// heap formats a sample's heap in MiB, or - if the plugin does not export it.
func heap(s memorySample) string {
	if !s.heapFound {
		return "-"
	}
	return framework.MiB(uint64(s.heap))
}

// codes formats status code counts as "403:10000 400:100", most frequent first.
func codes(counts map[string]int) string {
	if len(counts) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// percentile returns the p-th percentile (nearest rank) of ds, 0 if empty.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// format rounds a latency for the table, - for none.
func format(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

// loadAverage returns the 1, 5 and 15 minute load averages of the machine, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

// printConns writes --conns' table and notes.
func (r *result) printConns(w io.Writer) {
	c := r.conns
	growth := func(from, to uint64) string {
		if to < from {
			return "-" + framework.MiB(from-to)
		}
		return framework.MiB(to - from)
	}
	perConn := func(from, to float64) string {
		if r.opts.conns == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f KB", (to-from)/float64(r.opts.conns)/1000)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "plugin\tprotocol\tconns\taccepted\trefused\topen (accepted)\topen (refused)\tplugin sockets\tRSS before\tRSS with\tgrowth\tper conn\theap before\theap with\tgrowth\tper conn\tRSS closed\theap closed")
	fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d -> %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.label, c.protocol, r.opts.conns,
		c.accepted, c.refused, c.openAccepted, c.openRefused, c.socketsBefore, c.socketsWith,
		framework.MiB(c.before.RSS), framework.MiB(c.with.RSS), growth(c.before.RSS, c.with.RSS), perConn(float64(c.before.RSS), float64(c.with.RSS)),
		heap(c.before), heap(c.with), growth(uint64(c.before.heap), uint64(c.with.heap)), perConn(c.before.heap, c.with.heap),
		framework.MiB(c.closed.RSS), heap(c.closed))
	_ = tw.Flush()
	fmt.Fprintf(w, "\nAnswers: %s. Open: still open %s after the last answer (client side); plugin sockets: its open sockets before and then."+
		" With: then; closed: %s after the client closed them all.\n",
		codes(c.codes.snapshot()), connsSettle, r.opts.idle)
	fmt.Fprintf(w, "Set-up: %d clusters, %d mounted Workspaces, in %s. Load average (1, 5, 15 min): %s.\n",
		r.opts.clusters, r.opts.clusters*r.opts.mountsPerCluster, r.setup.Round(time.Second), loadAverage())
	fmt.Fprintf(w, "Plugin version %s; heap is %s from its /metrics.\n", r.pluginVersion, heapMetric)
}
