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
// Waiting is kcp's sdk/testing helpers.Eventually. Processes, workspaces
// and certificates stay here, because kcp's fixtures start kcp in-process or
// use one that never restarts, while these tests stop, pause and restart
// every process and name workspaces themselves.
//
// Everything the framework starts (kcp and each process of a sharded kcp,
// the plugin, Prometheus) is a Process: in a process group of its own,
// logging to a file (LogTail reads its end), stopped with SIGTERM and then
// SIGKILL (Stop), and with its exit tracked (CheckRunning, Exited, ExitErr,
// ExitCode). A server can also be stopped and started again on the same
// address, ports and root directory (Restart; StopProcess or Kill, then
// StartAgain) and paused with SIGSTOP (Pause, Resume). kcp rewrites
// admin.kubeconfig on every start: the shard-base context keeps its token,
// root and base get a new one.
//
// StartSharded (StartShardedT in a test) starts a sharded kcp instead: a
// cache server, the root shard, further shards (by default shard-2) and a
// front-proxy in front of them, each a child process (bin/kcp,
// bin/cache-server and bin/kcp-front-proxy, all built from hack/kcp; or
// $KCP_BINARY, $CACHE_SERVER_BINARY, $KCP_FRONT_PROXY_BINARY) on free
// ports, sharing a PKI made in Go (ShardedPKI: the serving, client and
// request-header CAs, the admin's and the front-proxy's client
// certificates, a service account key, static tokens for the admin and a
// few users):
//
//	s := framework.StartShardedT(t, framework.ShardedOptions{FeatureGates: "WorkspaceMounts=true"})
//	cluster, _ := s.CreateWorkspaceOnShard(t, framework.RootPath, framework.UniqueName("test"), "shard-2")
//	shard := s.AdminConfig(s.Shard("shard-2").BaseURL) // system:masters there, as /clusters/* needs
//
// Only the front-proxy resolves workspace paths (FrontProxyConfig,
// UserConfig); a shard knows its logical clusters by name only (ShardOf
// finds a cluster's shard). One admin client certificate works on every
// process (AdminConfig); AdminKubeconfigPath, RootKubeconfigPath and
// ShardsKubeconfigPath hold it as kubeconfigs, the last two as a plugin's
// --root-kubeconfig and --shards-kubeconfig. OnShard places a workspace
// created with CreateWorkspace on a shard (kcp picks one at random
// otherwise); WaitForWorkspacePath waits until the front-proxy serves its
// path. Each Shard is a Server of its own: StopProcess and StartAgain take
// one shard down and back on the same ports and root directory; AddShard
// starts another. ServiceMappings route the front-proxy's /services/<name>/
// to a backend, e.g. a virtual workspace, which then trusts
// ShardedPKI.RequestHeaderCAFile for the user in X-Remote-* headers.
// LogTails shows the last lines of every process's log, Memory their memory.
//
// A MountProvider (StartMountProvider) is a mount target in the process,
// following kcp's newer mount contract: https, identity only in X-Remote-*
// headers from the client certificate it makes for kcp's mount proxy
// (KCPArgs: the flags KCPMountProxyFlags finds in the kcp binary), 508 at
// kcp's hop limit; it answers `kubectl auth whoami` with who it believed.
// The front-proxy passes on X-Remote-* headers that a client sends (see
// ShardedServer): keep them out of the requests of access-control tests.
//
// What it costs, measured on the 2-core machine the tests run on (with
// another end-to-end run beside): a two-shard kcp is ready 48 to 60s after
// StartSharded (the cache server after 4 to 8s, the root shard 24 to 29s
// later, shard-2 19 to 22s after that, the front-proxy within 1s); its four
// processes then hold about 0.9 GB (resident: root shard 370 to 430 MiB,
// shard-2 300 to 350, cache server 110 to 120, front-proxy 60 to 65). A
// shard stops within about 1s and is ready 5 to 6s after StartAgain;
// AddShard takes about 22s and 370 to 430 MiB. The shards start one after
// the other: started together, shard-2 lists the root shard's APIs too
// early, its informers back off, and the whole took 41 to 69s.
//
// StartPlugin (StartPluginT in a test) runs the workspacemounts binary as a
// separate process against such a server, for the end-to-end tests, the
// benchmarks and make run (hack/run) alike; WaitReady waits for its /readyz.
// A plugin stopped or killed (StopProcess, Kill) starts again on the same
// ports and log with StartAgain.
// Eventually is the one wait of the tests; ReadMemory and the Plugin's
// MemorySampler read a process's memory from /proc, and ScrapeMetrics parses
// a Prometheus endpoint (kcp's or the plugin's) with expfmt.
//
// A plugin serves a whole ShardedServer behind the front-proxy's one
// mapping of /services/workspacemounts/: its virtual workspace's port is
// picked before the front-proxy starts (which reads its mapping file once),
// and ShardedServer.PluginOptions fills in the rest (--root-kubeconfig and
// --shards-kubeconfig with the admin's certificate, the PKI's serving
// certificate, which the front-proxy trusts, and the --requestheader-* flags
// that accept the user from the front-proxy's client certificate alone):
//
//	port, _ := framework.FreePort(ctx)
//	s := framework.StartShardedT(t, framework.ShardedOptions{ServiceMappings: []framework.ServiceMapping{framework.PluginServiceMapping(port)}})
//	plugin := framework.StartPluginT(t, t, s.PluginOptions(port, t.TempDir()))
//	// kubectl --server "$(s.PluginServiceURL("*"))" get workspacemounts
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
