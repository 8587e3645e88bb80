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
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// routingResult is what the routing mode measured, one side per controller.
type routingResult struct {
	workspaces, clusters int
	settle               time.Duration
	pluginArgs           []string
	sides                []*routingSide
}

// print writes the table, a row per controller, and the notes below it.
func (r *routingResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "controller\tworkspaces\tclusters\tsetup\tready p50\tready p99\tready all\twrites\tconflicts\tunavailable p50\tunavailable p99\tunavailable all\twrites\tconflicts\tplugin RSS\tplugin peak RSS")
	for _, s := range r.sides {
		cells := []string{s.name, fmt.Sprint(r.workspaces), fmt.Sprint(r.clusters), formatSetUp(s.setUp)}
		for i := range 2 {
			if i < len(s.steps) {
				cells = append(cells, s.steps[i].cells(s.inTree)...)
			} else {
				cells = append(cells, "-", "-", "-", "-", "-")
			}
		}
		rss, peak := "-", "-"
		if !s.inTree && s.memory.Peak > 0 {
			rss, peak = framework.MiB(s.memory.RSS), framework.MiB(s.memory.Peak)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, rss, peak), "\t"))
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each controller on its own kcp, one after the other: kcp's in-tree controller with --feature-gates=WorkspaceMounts=true and no plugin,")
	fmt.Fprintf(w, "the plugin with %s on a kcp without the gate. Times are from T0, just before the first of the %d writes of mount objects:\n", strings.Join(routingPluginArgs, " "), r.workspaces)
	fmt.Fprintln(w, "ready: until a Workspace first showed spec.URL = the after URL and phase Ready (Connecting -> Ready, URL before -> after);")
	fmt.Fprintln(w, "unavailable: until it first showed phase Unavailable (Ready -> Connecting, same URL).")
	fmt.Fprintf(w, "writes: Workspace writes (resourceVersion changes) the benchmark's informer saw, from T0 until %s after the last Workspace showed the step;\n", formatDuration(r.settle))
	fmt.Fprintln(w, "conflicts: the plugin's patches answered 409 (its metrics), the in-tree controller's failed syncs for a conflict (kcp's log).")
	for _, s := range r.sides {
		s.printNotes(w, r.workspaces)
	}
	fmt.Fprintf(w, "Plugin extra arguments %q.\n", r.pluginArgs)
	for _, s := range r.sides {
		if len(s.missing) > 0 {
			fmt.Fprintf(w, "%s, not converged in the %s (- above):\n  %s\n", s.name, s.failed, strings.Join(s.missing, "\n  "))
		}
	}
}

// formatSetUp formats the whole set-up time, "-" if it did not finish.
func formatSetUp(t setUpTimes) string {
	if t.all == 0 {
		return "-"
	}
	return formatDuration(t.all)
}

// cells are the table's cells of one step: p50, p99, all, writes, conflicts.
func (s *routingStep) cells(inTree bool) []string {
	writes := "-"
	if s.writes > 0 || len(s.times) == s.total {
		writes = fmt.Sprint(s.writes)
	}
	return []string{
		percentile(s.times, s.total, 0.5), percentile(s.times, s.total, 0.99), percentile(s.times, s.total, 1),
		writes, s.conflicts(inTree),
	}
}

// printNotes writes what the table leaves out of a side.
func (s *routingSide) printNotes(w io.Writer, workspaces int) {
	fmt.Fprintf(w, "%s:\n", s.name)
	if s.setUp.mounts > 0 {
		fmt.Fprintf(w, "  set-up %s: %d mount objects and mounted Workspaces in %s (%.0f/s); ",
			formatDuration(s.setUp.all), workspaces, formatDuration(s.setUp.mounts), float64(workspaces)/s.setUp.mounts.Seconds())
	} else {
		fmt.Fprint(w, "  ")
	}
	if s.initial != nil {
		fmt.Fprintf(w, "initial state (spec.URL before, phase Unavailable) all %s after the set-up, the controller's own writes (spec.URL, condition False) all %s.\n",
			percentile(s.times(s.initial), s.initial.total, 1), percentile(s.initial.own, s.initial.total, 1))
	} else {
		fmt.Fprintln(w)
	}
	for _, step := range s.steps {
		fmt.Fprintf(w, "  %s: mount writes returned after %s, all showed it %s after the last; the controller's own writes (spec.URL, condition %s) p50 %s, p99 %s, all %s;\n",
			step.name, formatDuration(step.written), sinceLastWrite(step.times, step.total, step.written), step.condition,
			percentile(step.own, step.total, 0.5), percentile(step.own, step.total, 0.99), percentile(step.own, step.total, 1))
		fmt.Fprintf(w, "    %d Workspace writes (%d after all showed it), %d phase changes; at the end %d/%d still showed it",
			step.writes, step.writesAfter, step.phaseChanges, step.showing, step.total)
		if step.syncErrorsErr == nil {
			fmt.Fprintf(w, "; failed syncs logged %s", step.syncErrors)
		}
		if step.patches != nil {
			fmt.Fprintf(w, "; patches (applied/conflict/error): Workspace %s, status %s",
				formatPatches(step.patches[annotationPatchesMetric]), formatPatches(step.patches[statusPatchesMetric]))
		}
		fmt.Fprintln(w, ".")
		if step.patchErr != nil {
			fmt.Fprintf(w, "  %v\n", step.patchErr)
		}
		if step.syncErrorsErr != nil {
			fmt.Fprintf(w, "  counting failed syncs: %v\n", step.syncErrorsErr)
		}
	}
	if s.kcpMemory.RSS > 0 {
		fmt.Fprintf(w, "  kcp RSS after the flip to Ready: %s", framework.MiB(s.kcpMemory.RSS))
		if s.memoryErr != nil {
			fmt.Fprintf(w, "; plugin memory: %v", s.memoryErr)
		}
		fmt.Fprintln(w, ".")
	}
	if s.pluginVersion != "" {
		fmt.Fprintf(w, "  plugin version %s.\n", s.pluginVersion)
	}
	if s.loadAfter != "" {
		fmt.Fprintf(w, "  load average (1, 5, 15 min): %s before, %s after.\n", s.loadBefore, s.loadAfter)
	}
}

// formatPatches formats the patches of one metric as applied/conflict/error.
func formatPatches(results map[string]float64) string {
	parts := make([]string, 0, len(patchResults))
	for _, result := range patchResults {
		parts = append(parts, fmt.Sprintf("%.0f", results[result]))
	}
	return strings.Join(parts, "/")
}
