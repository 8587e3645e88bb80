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
	"sort"
	"strings"
	"time"
)

// printMountRate writes the rate at which new mounted Workspaces were set up, from the first mount object created until
// the plugin showed the initial state on every Workspace.
func (r *result) printMountRate(w io.Writer) {
	if r.mountsSetup <= 0 || r.initial.total == 0 || len(r.initial.plugin) < r.initial.total {
		return
	}
	mounted := r.mountsSetup + r.initial.plugin[len(r.initial.plugin)-1]
	fmt.Fprintf(w, "Mounted: %d new Workspaces shown by the plugin %s after the first mount object's creation, %.1f mounts/s.\n",
		r.workspaces, formatDuration(mounted), float64(r.workspaces)/mounted.Seconds())
	if r.setUpCPUErr != nil {
		fmt.Fprintf(w, "CPU time during the set-up: %v.\n", r.setUpCPUErr)
		return
	}
	fmt.Fprintf(w, "CPU time meanwhile: kcp %s (%.1f ms per mount), plugin %s (%.1f ms per mount).\n",
		formatDuration(r.setUpCPU.kcp), perMountMillis(r.setUpCPU.kcp, r.workspaces), formatDuration(r.setUpCPU.plugin), perMountMillis(r.setUpCPU.plugin, r.workspaces))
}

func perMountMillis(d time.Duration, mounts int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(mounts)
}

// printSetUpRequests writes the plugin's requests to kcp per new mounted Workspace, from just before the set-up to the
// initial state everywhere.
func (r *result) printSetUpRequests(w io.Writer) {
	if r.setUpRequestsErr != nil {
		fmt.Fprintf(w, "Plugin requests to kcp during the set-up: %v.\n", r.setUpRequestsErr)
		return
	}
	if r.setUpRequests == nil || r.workspaces == 0 {
		return
	}
	fmt.Fprintf(w, "Plugin kcp requests per new mounted Workspace (rest_client_requests_total, just before the set-up to the initial state, over %d): %s.\n",
		r.workspaces, perMount(r.setUpRequests, r.workspaces))
}

// printRequests writes the plugin's requests to kcp per mount change.
func (r *result) printRequests(w io.Writer) {
	if r.requestsErr != nil {
		fmt.Fprintf(w, "Plugin requests to kcp: %v.\n", r.requestsErr)
		return
	}
	if r.requests == nil || r.workspaces == 0 {
		return
	}
	fmt.Fprintf(w, "Plugin kcp requests per change (rest_client_requests_total, just before T0 to convergence, over %d changes): %s.\n",
		r.workspaces, perMount(r.requests, r.workspaces))
}

// perMount is requests by method divided by mounts, and their total: "GET 0.00, PATCH 1.00; total 1.00".
func perMount(requests restClientRequests, mounts int) string {
	methods := make([]string, 0, len(requests))
	var total float64
	for method, n := range requests {
		methods = append(methods, method)
		total += n
	}
	sort.Strings(methods)
	parts := make([]string, 0, len(methods))
	for _, method := range methods {
		parts = append(parts, fmt.Sprintf("%s %.2f", method, requests[method]/float64(mounts)))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	return fmt.Sprintf("%s; total %.2f", strings.Join(parts, ", "), total/float64(mounts))
}
