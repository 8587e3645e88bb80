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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// errNoProfiling is pluginHeap's answer for a plugin started without
// --profiling.
var errNoProfiling = errors.New("the plugin serves no /debug/pprof/ (run with --plugin-args=--profiling)")

// pluginHeap is the plugin's live heap after a garbage collection
// (runtime.MemStats HeapAlloc), which its /debug/pprof/heap?gc=1&debug=1
// (--profiling) forces and reports: unlike the RSS, what the plugin holds,
// to the byte, without the garbage and the pages the runtime has not
// returned yet. Divided by the mounted Workspaces, the memory each costs.
func pluginHeap(ctx context.Context, metricsURL string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL+"/debug/pprof/heap?gc=1&debug=1", http.NoBody)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, errNoProfiling
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /debug/pprof/heap: %s", resp.Status)
	}
	return parseHeapAlloc(resp.Body)
}

// parseHeapAlloc reads "# HeapAlloc = <bytes>" from a heap profile in its
// text form (debug=1), which ends with the runtime.MemStats.
func parseHeapAlloc(r io.Reader) (uint64, error) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		if value, found := strings.CutPrefix(scanner.Text(), "# HeapAlloc = "); found {
			return strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		}
	}
	if err := scanner.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("the heap profile has no HeapAlloc")
}
