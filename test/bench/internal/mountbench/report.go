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

package mountbench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// convergence is when the mounted Workspaces showed a stage, per controller.
type convergence struct {
	// total is the number of Workspaces.
	total int
	// plugin and inTree hold one sorted latency per Workspace that showed the
	// stage; those that did not are missing. own, in the routing mode, those
	// until the controller's own writes showed it.
	plugin, inTree, own []time.Duration
}

// result is what one run measured.
type result struct {
	// benchmark is the benchmark that ran: Controller (flip, in the mode
	// annotations) or Virtual (virtual).
	benchmark            Benchmark
	workspaces, clusters int
	// inTree tells whether kcp's in-tree controller ran and was measured.
	inTree bool
	// setup is the whole set-up, mountsSetup its part that created the mount
	// objects and mounted Workspaces.
	setup, mountsSetup time.Duration
	// initial is measured from the end of the set-up.
	initial *convergence
	// flipsWritten is when the last flip write returned, after T0.
	flipsWritten time.Duration
	// flip is measured from T0, just before the first flip write.
	flip *convergence
	// requests are the plugin's requests to kcp from just before T0 to the
	// flip's convergence, by method; requestsErr why they are unknown.
	requests    restClientRequests
	requestsErr error
	// setUpRequests are the plugin's requests to kcp from just before the
	// set-up to the initial state on every Workspace, by method.
	setUpRequests    restClientRequests
	setUpRequestsErr error
	// setUpCPU is the CPU time kcp and the plugin used from the creation of
	// the first mount object to the initial state on every Workspace.
	setUpCPU    cpuTimes
	setUpCPUErr error
	// memory is the plugin's after convergence.
	memory    framework.Memory
	memoryErr error
	// pluginErrors and inTreeErrors are the failed syncs in the controllers' logs.
	pluginErrors, inTreeErrors syncErrors
	syncErrorsErr              error
	// missing describes Workspaces that did not converge in the last stage.
	missing []string
	// virtual is what the virtual workspace benchmark measured, nil in the
	// controller benchmark.
	virtual *virtualResult

	pluginVersion         string
	pluginArgs            []string
	loadBefore, loadAfter string
}

// print writes the table and the notes below it.
func (r *result) print(w io.Writer) {
	if r.benchmark == Virtual {
		r.printVirtual(w)
		return
	}
	flip := r.flip
	if flip == nil {
		flip = &convergence{total: r.workspaces}
	}
	rss, peak := "-", "-"
	if r.memory.Peak > 0 {
		rss, peak = framework.MiB(r.memory.RSS), framework.MiB(r.memory.Peak)
	}
	inTree := r.inTreePercentile
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workspaces\tclusters\tsetup\tflips-written\tplugin p50\tplugin p99\tplugin all\tin-tree p50\tin-tree p99\tin-tree all\tplugin RSS\tplugin peak RSS")
	fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
		r.workspaces, r.clusters, formatDuration(r.setup), r.flipsWrittenString(),
		percentile(flip.plugin, flip.total, 0.5), percentile(flip.plugin, flip.total, 0.99), percentile(flip.plugin, flip.total, 1),
		inTree(flip, 0.5), inTree(flip, 0.99), inTree(flip, 1),
		rss, peak)
	_ = tw.Flush()

	fmt.Fprintln(w)
	if r.flip != nil {
		fmt.Fprintln(w, "Flip times are from T0, just before the first flip write; flips-written is when the last one returned.")
		fmt.Fprintf(w, "From the last flip written to every annotation matching: plugin %s, in-tree %s%s.\n",
			sinceLastWrite(flip.plugin, flip.total, r.flipsWritten), r.inTreeOr(sinceLastWrite(flip.inTree, flip.total, r.flipsWritten)),
			r.sinceLastWriteRatio(flip))
		r.printRequests(w)
	}
	if r.mountsSetup > 0 {
		fmt.Fprintf(w, "Set-up: %d mount objects and mounted Workspaces in %s (%.0f/s, 3 writes each), after %s for the workspaces and their CRD.\n",
			r.workspaces, formatDuration(r.mountsSetup), float64(r.workspaces)/r.mountsSetup.Seconds(), formatDuration(r.setup-r.mountsSetup))
	}
	if r.initial != nil {
		fmt.Fprintf(w, "Initial state, from the end of the set-up: plugin all %s, in-tree all %s.\n",
			percentile(r.initial.plugin, r.initial.total, 1), inTree(r.initial, 1))
		r.printMountRate(w)
		r.printSetUpRequests(w)
	}
	if r.flip != nil {
		fmt.Fprintf(w, "Failed syncs logged (retried): plugin %s, in-tree %s.\n", r.pluginErrors, r.inTreeOr(r.inTreeErrors.String()))
	}
	if !r.inTree {
		fmt.Fprintln(w, "In-tree controller off (--in-tree=false): kcp ran without --feature-gates=WorkspaceMounts=true.")
	}
	if r.syncErrorsErr != nil {
		fmt.Fprintf(w, "Counting failed syncs: %v.\n", r.syncErrorsErr)
	}
	if r.memoryErr != nil {
		fmt.Fprintf(w, "Plugin memory: %v.\n", r.memoryErr)
	}
	fmt.Fprintf(w, "Plugin version %s, extra arguments %q.\n", r.pluginVersion, r.pluginArgs)
	fmt.Fprintf(w, "Load average (1, 5, 15 min): %s before, %s after.\n", r.loadBefore, r.loadAfter)
	if len(r.missing) > 0 {
		fmt.Fprintf(w, "Not converged (- above):\n  %s\n", strings.Join(r.missing, "\n  "))
	}
}

// printVirtual writes what the virtual workspace benchmark measured: its
// set-up, then the tables of the lists and the watchers.
func (r *result) printVirtual(w io.Writer) {
	holders := "workspaces"
	if r.clusters == 1 {
		holders = "workspace"
	}
	fmt.Fprintf(w, "%d mounted Workspaces in %d %s under root, every mount object Ready from its creation on; set-up %s", r.workspaces, r.clusters, holders, formatDuration(r.setup))
	if r.mountsSetup > 0 {
		fmt.Fprintf(w, " (%d mount objects and mounted Workspaces in %s, %.0f/s)",
			r.workspaces, formatDuration(r.mountsSetup), float64(r.workspaces)/r.mountsSetup.Seconds())
	}
	fmt.Fprintln(w, ".")
	if r.initial != nil {
		fmt.Fprintf(w, "The plugin showed every Workspace Ready %s after the end of the set-up.\n", percentile(r.initial.plugin, r.initial.total, 1))
	}
	fmt.Fprintf(w, "Plugin version %s, extra arguments %q; kcp without its in-tree mounts controller.\n", r.pluginVersion, r.pluginArgs)
	fmt.Fprintf(w, "Load average (1, 5, 15 min): %s before, %s after.\n", r.loadBefore, r.loadAfter)
	if len(r.missing) > 0 {
		fmt.Fprintf(w, "Not shown Ready (- above):\n  %s\n", strings.Join(r.missing, "\n  "))
	}
	if r.virtual != nil {
		fmt.Fprintln(w)
		r.virtual.print(w)
	}
}

// sinceLastWriteRatio is ", ratio plugin/in-tree <r>" when both converged
// after the last flip write, else "".
func (r *result) sinceLastWriteRatio(flip *convergence) string {
	plugin, pluginOK := sinceLastWriteDuration(flip.plugin, flip.total, r.flipsWritten)
	inTree, inTreeOK := sinceLastWriteDuration(flip.inTree, flip.total, r.flipsWritten)
	if !r.inTree || !pluginOK || !inTreeOK || inTree <= 0 {
		return ""
	}
	return fmt.Sprintf(", ratio plugin/in-tree %.2f (the issue's goal: at most 0.5 at 1000 workspaces)", plugin.Seconds()/inTree.Seconds())
}

// inTreePercentile is percentile for the in-tree controller, "off" when it did not run.
func (r *result) inTreePercentile(c *convergence, p float64) string {
	return r.inTreeOr(percentile(c.inTree, c.total, p))
}

// inTreeOr returns s, or "off" when the in-tree controller did not run.
func (r *result) inTreeOr(s string) string {
	if !r.inTree {
		return "off"
	}
	return s
}

func (r *result) flipsWrittenString() string {
	if r.flip == nil {
		return "-"
	}
	return formatDuration(r.flipsWritten)
}

// percentile returns the nearest-rank percentile p (0 < p <= 1) of total
// latencies of which only the sorted ones given are known, the others being
// infinite; "-" if it is one of those.
func percentile(sorted []time.Duration, total int, p float64) string {
	return formatPercentile(sorted, total, p, formatDuration)
}

// latencyPercentile is percentile formatted with formatLatency.
func latencyPercentile(sorted []time.Duration, total int, p float64) string {
	return formatPercentile(sorted, total, p, formatLatency)
}

func formatPercentile(sorted []time.Duration, total int, p float64, format func(time.Duration) string) string {
	rank := int(math.Ceil(p * float64(total)))
	if total == 0 || rank > len(sorted) {
		return "-"
	}
	return format(sorted[max(rank, 1)-1])
}

// sinceLastWrite returns how long after the last write the last Workspace converged.
func sinceLastWrite(sorted []time.Duration, total int, lastWrite time.Duration) string {
	d, ok := sinceLastWriteDuration(sorted, total, lastWrite)
	if !ok {
		return "-"
	}
	return formatDuration(d)
}

// sinceLastWriteDuration is how long after the last write the last
// Workspace converged; false if some did not.
func sinceLastWriteDuration(sorted []time.Duration, total int, lastWrite time.Duration) (time.Duration, bool) {
	if total == 0 || len(sorted) < total {
		return 0, false
	}
	return max(sorted[len(sorted)-1]-lastWrite, 0), true
}

// formatDuration rounds to milliseconds below a second, else to 10ms.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// print writes the virtual workspace's tables and the notes below them.
func (r *virtualResult) print(w io.Writer) {
	if len(r.lists) > 0 {
		r.printLists(w)
	}
	if r.watch != nil {
		if len(r.lists) > 0 {
			fmt.Fprintln(w)
		}
		r.watch.print(w)
	}
	if r.memoryErr != nil {
		fmt.Fprintf(w, "Plugin memory after the virtual workspace benchmark: %v.\n", r.memoryErr)
	} else {
		fmt.Fprintf(w, "Plugin RSS after the virtual workspace benchmark: %s (peak %s).\n", framework.MiB(r.memory.RSS), framework.MiB(r.memory.Peak))
	}
	if r.heapErr != nil {
		fmt.Fprintf(w, "Plugin heap: %v.\n", r.heapErr)
	} else {
		fmt.Fprintf(w, "Plugin heap after a GC, every mount served, before the lists: %s (HeapAlloc %d bytes), %d bytes per mounted Workspace.\n",
			framework.MiB(r.heap), r.heap, r.heap/uint64(max(1, r.workspaces)))
	}
}

// printLists writes the table of the lists at * and the notes below it.
func (r *virtualResult) printLists(w io.Writer) {
	printListTable(w, r.lists)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Each list: %d times after %d warm-ups, one list after the other, the kinds taking turns, over HTTP/2 unless named, one connection per server and protocol;\n",
		len(r.lists[0].total), listWarmUps)
	fmt.Fprintf(w, "every response held all %d benchmark objects. ", r.workspaces)
	fmt.Fprintln(w, "The virtual workspace's with kcp-admin's token, kcp's as the shard admin.")
	printListNotes(w)
}

// printListNotes explains the columns of printListTable.
func printListNotes(w io.Writer) {
	fmt.Fprintln(w, "p50, p99, mean: until the body was read and decoded into a minimal struct; headers p50, body p50: until the response headers, the body's last byte (gunzipped);")
	fmt.Fprintln(w, "decode mean: the decoding alone. bytes: the JSON body; wire: as sent, compressed.")
}

// printListTable writes the table of lists.
func printListTable(w io.Writer, lists []listStats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "list at *\titems\tbytes\twire\tp50\tp99\tmean\tdecode mean\theaders p50\tbody p50")
	for _, s := range lists {
		n, wire := len(s.total), "-"
		if s.last.encoding != "" {
			wire = s.last.encoding + " " + formatBytes(s.last.wire)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			s.name, s.last.items, formatBytes(s.last.bytes), wire,
			latencyPercentile(s.total, n, 0.5), latencyPercentile(s.total, n, 0.99), formatLatency(mean(s.total)), formatLatency(mean(s.decode)),
			latencyPercentile(s.headers, n, 0.5), latencyPercentile(s.body, n, 0.5))
	}
	_ = tw.Flush()
}

// print writes the table of the watchers and the notes below it.
func (wr *watchResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "watchers\testablished\treceived\twritten\tannotated\tp50\tp99\tmax")
	annotated := "-"
	if wr.annotated >= 0 {
		annotated = formatLatency(wr.annotated)
	}
	fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n",
		wr.watchers, formatLatency(wr.established), len(wr.received), wr.watchers, formatLatency(wr.written), annotated,
		latencyPercentile(wr.received, wr.watchers, 0.5), latencyPercentile(wr.received, wr.watchers, 0.99), latencyPercentile(wr.received, wr.watchers, 1))
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d watches of the virtual workspace at *, each on its own connection (%s), from the resource version %s of a list; established: until all had their response headers.\n",
		wr.watchers, wr.proto, wr.resourceVersion)
	fmt.Fprintln(w, "Then one mount object was set back from Ready to Connecting. From just before that write: written, when it returned; annotated, when the benchmark's Workspace")
	fmt.Fprintln(w, "informer saw the plugin's annotation change; p50, p99, max, when the watchers received the MODIFIED WorkspaceMount in phase Connecting (- if some did not).")
	for _, err := range wr.failures {
		fmt.Fprintf(w, "Failed watch: %v\n", err)
	}
}

// mean returns the mean of durations, 0 if there are none.
func mean(durations []time.Duration) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range durations {
		sum += d
	}
	return sum / time.Duration(len(durations))
}

// formatBytes formats a size in decimal units, e.g. 6.1MB.
func formatBytes(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1fMB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fkB", float64(n)/1e3)
	default:
		return fmt.Sprintf("%dB", n)
	}
}

// formatLatency formats a latency of the virtual workspace benchmark, finer than
// formatDuration below 100ms: to 10µs below 10ms, to 100µs below 100ms.
func formatLatency(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < 100*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return formatDuration(d)
	}
}
