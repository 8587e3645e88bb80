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

// Command sharded benchmarks the workspacemounts plugin in sharded mode
// against a real sharded kcp (test/framework StartSharded: a cache server,
// the root shard, shard-2 and a front-proxy) with N mounted Workspaces on
// each shard: the memory of the plugin and of kcp's processes, lists of the
// WorkspaceMounts at * through the front-proxy, and how long a flip of every
// mount object on every shard takes to show on each shard's Workspaces. The
// set-up is shared with the other benchmarks (test/bench/internal/mountbench).
// See README.md.
package main

import (
	"os"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/mountbench"
)

func main() {
	os.Exit(mountbench.Main(mountbench.Sharded))
}
