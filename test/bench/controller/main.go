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

// Command controller benchmarks the workspacemounts plugin's controller
// against one real kcp: it mounts N Workspaces, flips all their mount objects
// from Connecting to Ready at once, and measures how long the plugin (and,
// unless --in-tree=false, kcp's in-tree mounts controller) takes until every
// Workspace shows the flip. With --mode=routing it measures instead what kcp
// routes by, spec.URL and the phase of every mounted Workspace, as kcp's
// in-tree controller writes them on one kcp and the plugin with
// --workspace-condition --workspace-url on another. The set-up is shared
// with the virtual workspace benchmark (test/bench/internal/mountbench). See
// README.md.
package main

import (
	"os"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/mountbench"
)

func main() {
	os.Exit(mountbench.Main(mountbench.Controller))
}
