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

// Command virtual benchmarks the workspacemounts plugin's virtual workspace
// against one real kcp (without its in-tree mounts controller): it mounts N
// Workspaces, their mount objects Ready from the start, waits until the
// plugin shows them, then times lists of the WorkspaceMounts across all
// clusters against listing the Workspaces from kcp directly, and how fast one
// change reaches many watchers. The set-up is shared with the controller
// benchmark (test/bench/internal/mountbench). See README.md.
package main

import (
	"os"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/mountbench"
)

func main() {
	os.Exit(mountbench.Main(mountbench.Virtual))
}
