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
	"fmt"
	"os"
	"strings"
)

// syncErrors counts the failed syncs a controller logged.
type syncErrors struct {
	total int
	// conflicts are the failed syncs that wrote on an outdated resourceVersion.
	conflicts int
}

func (e syncErrors) String() string {
	return fmt.Sprintf("%d (%d conflicts)", e.total, e.conflicts)
}

// The markers of a failed sync in the logs, as each controller words it.
var (
	pluginSyncError = []string{"failed to sync, requeuing"}
	inTreeSyncError = []string{"kcp-workspace-mounts", "controller failed to sync"}
)

// conflictMessage is how the API server words a conflict.
const conflictMessage = "the object has been modified"

// countSyncErrors counts the lines of the log at path that contain every part
// of marker.
func countSyncErrors(path string, marker []string) (syncErrors, error) {
	f, err := os.Open(path) //nolint:gosec // G703: a log this benchmark had written.
	if err != nil {
		return syncErrors{}, err
	}
	defer f.Close()
	var counts syncErrors
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64<<10), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !containsAll(line, marker) {
			continue
		}
		counts.total++
		if strings.Contains(line, conflictMessage) {
			counts.conflicts++
		}
	}
	return counts, scanner.Err()
}

func containsAll(s string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}
