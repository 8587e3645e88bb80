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

// Package framework starts a real kcp server for end-to-end tests and
// benchmarks and offers helpers to set up workspaces and APIs in it.
//
// kcp runs as a child process from a binary (by default <repo>/bin/kcp, built
// from hack/kcp; or $KCP_BINARY) with embedded etcd in a temporary root
// directory, listening on 127.0.0.1 on free ports.
//
// A test starts a server of its own with StartT, which stops it when the test
// ends (a test package sharing one server starts it in TestMain with Start):
//
//	func TestSomething(t *testing.T) {
//		server := framework.StartT(t, framework.Options{FeatureGates: "WorkspaceMounts=true"})
//		cfg := server.BaseConfigT(t, "base")
//		cluster, _ := framework.CreateWorkspace(t, cfg, framework.RootPath, framework.UniqueName("test"))
//		...
//	}
//
// A server can be stopped and started again on the same
// address, ports and root directory (Restart; StopProcess or Kill, then
// StartAgain) and paused with SIGSTOP (Pause, Resume). kcp rewrites
// admin.kubeconfig on every start: the shard-base context keeps its token,
// root and base get a new one.
//
// StartPlugin (StartPluginT in a test) runs the workspacemounts binary as a
// separate process against such a server, for the end-to-end tests and the
// benchmarks alike; Eventually is the one wait of the tests; ReadMemory and the Plugin's
// MemorySampler read a process's memory from /proc, and ScrapeMetrics parses
// a Prometheus endpoint (kcp's or the plugin's) with expfmt.
//
// StartPrometheus runs a real Prometheus (<repo>/bin/prometheus, built from
// hack/prometheus; or $PROMETHEUS_BINARY) scraping a plugin with rule files
// loaded, and asks its HTTP API for values and alerts.
//
// Helpers never delete what they create: with kcp v0.28.1, deleting a
// mount object's CRD or APIBinding while a Workspace still mounts it can
// crash the server, and a shared server is torn down as a whole anyway. Use
// UniqueName so that tests do not collide.
package framework
