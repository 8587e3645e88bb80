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
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// shardedPluginFlags are the `start` flags the sharded benchmark sets (with
// framework.ShardedServer.PluginOptions) beside framework.PluginServingFlags.
var shardedPluginFlags = []string{
	"--kubeconfig", "--context", "--root-kubeconfig", "--client-ca-file", "--shards-kubeconfig", "--tls-cert-file", "--tls-private-key-file",
	"--requestheader-client-ca-file", "--requestheader-username-headers", "--requestheader-group-headers",
	"--requestheader-extra-headers-prefix", "--requestheader-allowed-names",
}

// shardedBench is one run of the sharded benchmark against a started
// sharded kcp and the plugin in sharded mode.
type shardedBench struct {
	opts   options
	kcp    *framework.ShardedServer
	plugin *framework.Plugin
	// shards are the shards' names, the root shard first; shardClients the
	// admin's clients at each one's base URL (system:masters there), by name;
	// frontProxy the admin's through the front-proxy, which creates the
	// workspaces (kcp v0.28.1 records their owner only there: created at the
	// root shard's base URL, they stay Initializing, "LogicalCluster ... had
	// no user recorded").
	shards       []string
	shardClients map[string]adminClients
	frontProxy   adminClients
}

// shardedResult is what the sharded benchmark measured.
type shardedResult struct {
	// workspaces and clusters are per shard.
	shards               []string
	workspaces, clusters int
	kcpReadyAfter        time.Duration
	pluginReadyAfter     time.Duration
	setup, mountsSetup   time.Duration
	// initial is from the end of the set-up, flip from T0, just before the
	// first flip write; both per shard, by name.
	initial, flip map[string]*convergence
	flipsWritten  time.Duration
	// lists are the lists at * through the front-proxy.
	lists []listStats
	// memory is each process's, by name (framework.ShardedServer.Memory's
	// names, and pluginProcess), after the flip converged and after the lists.
	memoryAfterFlip, memoryAfterLists map[string]framework.Memory
	memoryErr                         error
	pluginErrors                      syncErrors
	syncErrorsErr                     error
	missing                           []string

	pluginVersion         string
	pluginArgs            []string
	loadBefore, loadAfter string
}

// pluginProcess names the plugin among the processes whose memory is read.
const pluginProcess = "workspacemounts"

// shardNames returns the names of n shards: root, shard-2, ...
func shardNames(n int) []string {
	names := []string{framework.RootShard}
	for i := 2; i <= n; i++ {
		names = append(names, "shard-"+strconv.Itoa(i))
	}
	return names
}

// runSharded starts a sharded kcp and the plugin in sharded mode behind
// its front-proxy, runs the benchmark and prints the results to out. It
// stops every process and removes its temporary directory (not --dir)
// before it returns, also when ctx is cancelled.
func runSharded(ctx context.Context, opts options, out io.Writer) error {
	dir := opts.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "workspacemounts-bench-sharded-")
		if err != nil {
			return err
		}
		defer warnOnError(func() error { return os.RemoveAll(tmp) })
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	loadBefore := loadAverage()
	names := shardNames(opts.shards)

	port, err := framework.FreePort(ctx)
	if err != nil {
		return err
	}
	kcpDir := filepath.Join(dir, "kcp")
	logf("starting a sharded kcp: cache server, shards %v, front-proxy (root directory %s)", names, kcpDir)
	s, err := framework.StartSharded(ctx, framework.ShardedOptions{
		RootDir:         kcpDir,
		Shards:          names[1:],
		ServiceMappings: []framework.ServiceMapping{framework.PluginServiceMapping(port)},
	})
	if err != nil {
		return err
	}
	defer warnOnError(s.Stop)
	logf("sharded kcp ready after %s, front-proxy at %s", s.ReadyAfter.Round(time.Millisecond), s.FrontProxyURL)

	pluginDir := filepath.Join(dir, "workspacemounts")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return err
	}
	pluginOpts := s.PluginOptions(port, pluginDir)
	pluginOpts.Binary = opts.plugin
	pluginOpts.ExtraArgs = append(pluginOpts.ExtraArgs, opts.pluginArgs...)
	pluginOpts.LogPath = opts.pluginLog
	if pluginOpts.LogPath == "" {
		pluginOpts.LogPath = filepath.Join(dir, "workspacemounts.log")
	}
	version := framework.PluginVersion(ctx, opts.plugin)
	plugin, err := framework.StartPlugin(ctx, pluginOpts)
	if err != nil {
		return err
	}
	defer warnOnError(plugin.Stop)
	logf("plugin %s (version %s) started in sharded mode (pid %d), logging to %s, virtual workspace at %s behind %s/services/workspacemounts/, metrics at %s",
		opts.plugin, version, plugin.Pid(), pluginOpts.LogPath, plugin.VirtualWorkspaceURL, s.FrontProxyURL, plugin.MetricsURL)

	b := &shardedBench{opts: opts, kcp: s, plugin: plugin, shards: names, shardClients: map[string]adminClients{}}
	if b.frontProxy, err = newAdminClients(s.FrontProxyConfig()); err != nil {
		return err
	}
	for _, name := range names {
		shard := s.Shard(name)
		if shard == nil {
			return fmt.Errorf("no shard %s", name)
		}
		if b.shardClients[name], err = newAdminClients(s.AdminConfig(shard.BaseURL)); err != nil {
			return err
		}
	}
	res := &shardedResult{shards: names, workspaces: opts.workspaces, clusters: opts.clusters, kcpReadyAfter: s.ReadyAfter,
		pluginVersion: version, pluginArgs: opts.pluginArgs, loadBefore: loadBefore}
	err = b.run(ctx, res)
	res.loadAfter = loadAverage()
	res.print(out)
	if err != nil && ctx.Err() == nil {
		plugin.PrintLogTail(os.Stderr, 20)
		fmt.Fprintf(os.Stderr, "the sharded kcp:%s\n", s.LogTails(10))
	}
	return err
}

// run measures, in this order: the plugin's readiness, the set-up (mount
// objects Connecting), the initial state, the flip of every mount object to
// Ready on every shard at once, the memory, the lists at * through the
// front-proxy, the memory again.
func (b *shardedBench) run(ctx context.Context, res *shardedResult) error {
	if err := b.awaitPluginReady(ctx); err != nil {
		return err
	}
	res.pluginReadyAfter = time.Since(b.plugin.Started)

	t, err := b.setUp(ctx, res)
	if err != nil {
		return err
	}
	setUpDone := time.Now()
	err = b.await(ctx, t, initialStage.name)
	res.initial = b.perShard(t, setUpDone)
	if err != nil {
		res.missing = t.missing(10)
		return err
	}

	t.begin(flippedStage)
	total := len(b.shards) * b.opts.workspaces
	t0 := time.Now()
	logf("flipping %d mount objects to Ready, %d on each shard", total, b.opts.workspaces)
	err = forEach(ctx, "flipping", total, b.opts.concurrency, func(ctx context.Context, i int) error {
		return b.shardClients[t.layout.shard(i)].flipMount(ctx, t.layout, i)
	})
	res.flipsWritten = time.Since(t0)
	if err != nil {
		return err
	}
	err = b.await(ctx, t, flippedStage.name)
	res.flip = b.perShard(t, t0)
	res.pluginErrors, res.syncErrorsErr = countSyncErrors(b.plugin.LogPath, pluginSyncError)
	res.memoryAfterFlip, res.memoryErr = b.memory()
	if err != nil {
		res.missing = t.missing(10)
		return err
	}

	res.lists, err = b.measureLists(ctx, t.layout)
	var memoryErr error
	res.memoryAfterLists, memoryErr = b.memory()
	res.memoryErr = errors.Join(res.memoryErr, memoryErr)
	return err
}

// awaitPluginReady waits until the plugin's /readyz answers 200: it has
// found the shards and synced their caches.
func (b *shardedBench) awaitPluginReady(ctx context.Context) error {
	logf("waiting for the plugin to be ready")
	deadline := time.Now().Add(benchsetup.ReadyTimeout)
	for {
		if err := b.plugin.CheckRunning(); err != nil {
			return err
		}
		ready, why := readyz(ctx, b.plugin.MetricsURL+"/readyz")
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the plugin was not ready within %s: %s", benchsetup.ReadyTimeout, why)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(benchsetup.PollInterval):
		}
	}
}

// readyz asks url once: ready on 200, else what it answered.
func readyz(ctx context.Context, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
}

// setUp creates --clusters workspaces under root on each shard with the
// mount CRD, starts one Workspace informer per shard feeding the tracker,
// and creates on each shard --workspaces mount objects, Connecting at their
// before URL, and the Workspaces mounting them.
func (b *shardedBench) setUp(ctx context.Context, res *shardedResult) (*tracker, error) {
	began := time.Now()
	n := len(b.shards)
	l := layout{clusters: make([]logicalcluster.Name, n*b.opts.clusters), mounts: n * b.opts.workspaces, shards: b.shards}
	logf("creating %d workspaces with the %s CRD, %d on each shard", len(l.clusters), mountGVR.GroupResource(), b.opts.clusters)
	err := forEach(ctx, "creating workspaces", len(l.clusters), min(b.opts.concurrency, maxClusterConcurrency), func(ctx context.Context, j int) error {
		shard := b.shards[j%n]
		cluster, err := b.frontProxy.CreateCluster(ctx, fmt.Sprintf("bench-%d", j), shard)
		if err != nil {
			return err
		}
		// The Workspace in root says where kcp scheduled it; the shard must hold it.
		c := b.shardClients[shard]
		if _, err := c.KCP.Cluster(cluster.Path()).CoreV1alpha1().LogicalClusters().Get(ctx, corev1alpha1.LogicalClusterName, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("workspace root:bench-%d (%s), meant for shard %s: %w", j, cluster, shard, err)
		}
		l.clusters[j] = cluster
		return c.installMountCRD(ctx, cluster)
	})
	if err != nil {
		return nil, err
	}

	t := newTracker(l, initialStage, false)
	identity, err := clients.TenancyIdentity(ctx, b.kcp.AdminConfig(b.kcp.Shard(framework.RootShard).BaseURL))
	if err != nil {
		return nil, err
	}
	for _, name := range b.shards {
		if err := watchWorkspaces(ctx, b.kcp.AdminConfig(b.kcp.Shard(name).BaseURL), identity, t); err != nil {
			return nil, fmt.Errorf("watching Workspaces on shard %s: %w", name, err)
		}
	}

	logf("creating %d mount objects and mounted Workspaces, %d on each shard", l.mounts, b.opts.workspaces)
	mountsBegan := time.Now()
	err = forEach(ctx, "creating mounts", l.mounts, b.opts.concurrency, func(ctx context.Context, i int) error {
		return b.shardClients[l.shard(i)].createMount(ctx, l, i, mount.PhaseConnecting, beforeURL(i))
	})
	if err != nil {
		return nil, err
	}
	res.setup, res.mountsSetup = time.Since(began), time.Since(mountsBegan)
	logf("set-up took %s", res.setup.Round(time.Millisecond))
	return t, nil
}

// await waits until every Workspace shows the tracker's stage, for at most
// the timeout, logging the progress per shard.
func (b *shardedBench) await(ctx context.Context, t *tracker, label string) error {
	logf("waiting for the %s", label)
	defer every(progressInterval, func() {
		line := label + ":"
		for k, name := range b.shards {
			c := t.convergenceOf(time.Now(), b.opts.workspaces, func(i int) bool { return i%len(b.shards) == k })
			line += fmt.Sprintf(" %s %d/%d", name, len(c.plugin), c.total)
		}
		logf("%s", line)
	})()
	ticker := time.NewTicker(awaitInterval)
	defer ticker.Stop()
	timeout := time.NewTimer(b.opts.timeout)
	defer timeout.Stop()
	for !t.done() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-timeout.C:
			return errNotConverged
		case <-ticker.C:
		}
		if err := errors.Join(b.kcp.CheckRunning(), b.plugin.CheckRunning()); err != nil {
			return err
		}
	}
	return nil
}

// perShard returns the tracker's convergence since since, per shard.
func (b *shardedBench) perShard(t *tracker, since time.Time) map[string]*convergence {
	byShard := map[string]*convergence{}
	for k, name := range b.shards {
		byShard[name] = t.convergenceOf(since, b.opts.workspaces, func(i int) bool { return i%len(b.shards) == k })
	}
	return byShard
}

// memory reads the memory of the plugin and of every process of the sharded kcp.
func (b *shardedBench) memory() (map[string]framework.Memory, error) {
	memory, err := b.kcp.Memory()
	if err != nil {
		return nil, err
	}
	if memory[pluginProcess], err = b.plugin.Memory.Sample(); err != nil {
		return nil, err
	}
	return memory, nil
}

// measureLists lists the WorkspaceMounts at * through the front-proxy's
// /services/workspacemounts/, as kcp-admin by client certificate, as JSON
// and as a Table, each with and without gzip, once the virtual workspace
// serves every mount Ready.
func (b *shardedBench) measureLists(ctx context.Context, l layout) ([]listStats, error) {
	client, err := newHTTPClient(b.kcp.FrontProxyConfig(), http2)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()
	url := b.kcp.FrontProxyURL + workspaceMountsAtWildcard
	if err := awaitVirtualWorkspace(ctx, listCase{name: "front-proxy", client: client, url: url, accept: acceptJSON, proto: http2}, l); err != nil {
		return nil, err
	}
	cases := []listCase{
		{name: "front-proxy (JSON)", client: client, url: url, accept: acceptJSON, proto: http2},
		{name: "front-proxy (JSON, gzip)", client: client, url: url, accept: acceptJSON, gzip: true, proto: http2},
		{name: "front-proxy (Table)", client: client, url: url, accept: acceptTable, proto: http2},
		{name: "front-proxy (Table, gzip)", client: client, url: url, accept: acceptTable, gzip: true, proto: http2},
	}
	return measureLists(ctx, cases, l, b.opts.listIterations)
}

// sortedProcesses returns the names of the processes in memory: the plugin
// first, then the shards in order, then the others sorted.
func sortedProcesses(memory map[string]framework.Memory, shards []string) []string {
	names := []string{pluginProcess}
	names = append(names, shards...)
	var rest []string
	for name := range memory {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}
