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
	"strings"
	"text/tabwriter"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// print writes the sharded benchmark's three tables (flip per shard, lists
// through the front-proxy, memory per process) and the notes below them.
func (r *shardedResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tworkspaces\tclusters\tinitial all\tflip p50\tflip p99\tflip all")
	for _, name := range r.shards {
		initial, flip := r.initial[name], r.flip[name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", name, r.workspaces, r.clusters,
			convergencePercentile(initial, 1), convergencePercentile(flip, 0.5), convergencePercentile(flip, 0.99), convergencePercentile(flip, 1))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "kcp (cache server, %d shards, front-proxy) ready after %s; the plugin ready %s after its start.\n",
		len(r.shards), formatDuration(r.kcpReadyAfter), formatDuration(r.pluginReadyAfter))
	if r.mountsSetup > 0 {
		total := len(r.shards) * r.workspaces
		fmt.Fprintf(w, "Set-up %s: %d mount objects and mounted Workspaces in %s (%.0f/s, 3 writes each, straight to their shard), after %s for the workspaces and their CRD.\n",
			formatDuration(r.setup), total, formatDuration(r.mountsSetup), float64(total)/r.mountsSetup.Seconds(), formatDuration(r.setup-r.mountsSetup))
	}
	fmt.Fprintln(w, "initial all: from the end of the set-up until every Workspace of the shard showed its mount Connecting. flip: from T0, just before the first write")
	if r.flip != nil {
		fmt.Fprintf(w, "setting every mount object on every shard to Ready at a new URL (the shards' writes interleaved), until each Workspace's annotations showed it; the last write returned at %s.\n",
			formatDuration(r.flipsWritten))
		var after []string
		for _, name := range r.shards {
			if c := r.flip[name]; c != nil {
				after = append(after, name+" "+sinceLastWrite(c.plugin, c.total, r.flipsWritten))
			}
		}
		fmt.Fprintf(w, "After the last flip write, every Workspace showed it: %s.\n", strings.Join(after, ", "))
		fmt.Fprintf(w, "Failed syncs logged by the plugin (retried): %s.\n", r.pluginErrors)
	} else {
		fmt.Fprintln(w, "setting every mount object to Ready: not reached.")
	}
	if r.syncErrorsErr != nil {
		fmt.Fprintf(w, "Counting failed syncs: %v.\n", r.syncErrorsErr)
	}

	if len(r.lists) > 0 {
		fmt.Fprintln(w)
		printListTable(w, r.lists)
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Lists of the WorkspaceMounts at * through the front-proxy (/services/workspacemounts/clusters/*, kcp-admin's client certificate), after the flip:\n")
		fmt.Fprintf(w, "each %d times after %d warm-ups, the kinds taking turns, one HTTP/2 connection; every response held all %d benchmark objects, each with its own shard in status.shard.\n",
			len(r.lists[0].total), listWarmUps, len(r.shards)*r.workspaces)
		printListNotes(w)
	}

	if r.memoryAfterFlip != nil || r.memoryAfterLists != nil {
		fmt.Fprintln(w)
		r.printMemory(w)
	}
	if r.memoryErr != nil {
		fmt.Fprintf(w, "Memory: %v.\n", r.memoryErr)
	}
	fmt.Fprintf(w, "Plugin version %s, extra arguments %q; kcp without its in-tree mounts controller.\n", r.pluginVersion, r.pluginArgs)
	fmt.Fprintf(w, "Load average (1, 5, 15 min): %s before, %s after.\n", r.loadBefore, r.loadAfter)
	if len(r.missing) > 0 {
		fmt.Fprintf(w, "Not converged (- above):\n  %s\n", strings.Join(r.missing, "\n  "))
	}
}

// printMemory writes the memory table: each process's RSS after the flip and
// after the lists, and its peak.
func (r *shardedResult) printMemory(w io.Writer) {
	latest := r.memoryAfterLists
	if latest == nil {
		latest = r.memoryAfterFlip
	}
	rss := func(memory map[string]framework.Memory, name string) string {
		if m, ok := memory[name]; ok {
			return framework.MiB(m.RSS)
		}
		return "-"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "process\tRSS after flip\tRSS after lists\tpeak RSS")
	for _, name := range sortedProcesses(latest, r.shards) {
		peak := "-"
		if m, ok := latest[name]; ok {
			peak = framework.MiB(m.Peak)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, rss(r.memoryAfterFlip, name), rss(r.memoryAfterLists, name), peak)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "VmRSS and VmHWM from /proc/<pid>/status; workspacemounts is the plugin, the others the sharded kcp's processes.")
}

// convergencePercentile is percentile of the plugin's latencies of c, "-" without c.
func convergencePercentile(c *convergence, p float64) string {
	if c == nil {
		return "-"
	}
	return percentile(c.plugin, c.total, p)
}
