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
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// awaitInterval is how often convergence is checked.
	awaitInterval = 100 * time.Millisecond
	// scrapeWait is how long the plugin's /metrics may take to answer at first.
	scrapeWait = 30 * time.Second
)

// errNotConverged is returned when the timeout passed before every Workspace
// showed a stage for each controller measured.
var errNotConverged = errors.New("not every mounted Workspace converged within the timeout")

// bench is one benchmark run against a started kcp and plugin.
type bench struct {
	opts     options
	kcp      *kcpServer
	plugin   *framework.Plugin
	clients  adminClients
	shardCfg *rest.Config
}

// newBench builds the clients: kcp-admin for the set-up, the shard admin
// (shard-base) for the watch across all clusters.
func newBench(kcp *kcpServer, plugin *framework.Plugin, opts options) (*bench, error) {
	baseCfg, err := kcp.BaseConfig("base")
	if err != nil {
		return nil, err
	}
	shardCfg, err := kcp.BaseConfig("shard-base")
	if err != nil {
		return nil, err
	}
	c, err := newAdminClients(baseCfg)
	if err != nil {
		return nil, err
	}
	return &bench{opts: opts, kcp: kcp, plugin: plugin, clients: c, shardCfg: shardCfg}, nil
}

// runFlips sets up the mounts, waits for the initial state, flips every
// mount object and waits until both controllers show the flip everywhere.
// The result, if not nil, holds what was measured even when runFlips fails.
func (b *bench) runFlips(ctx context.Context) (*result, error) {
	res := &result{benchmark: Controller, workspaces: b.opts.workspaces, clusters: b.opts.clusters, inTree: b.opts.inTree}
	setUpBefore, setUpBeforeErr := b.scrapeRequestsOnceUp(ctx)
	t, times, err := b.setUp(ctx, mount.PhaseConnecting, beforeURL, func(l layout) *tracker { return newTracker(l, initialStage, b.opts.inTree) })
	if err != nil {
		return nil, err
	}
	res.setup, res.mountsSetup = times.all, times.mounts
	setUpDone := time.Now()
	err = b.await(ctx, t, initialStage.name)
	res.initial = t.convergence(setUpDone)
	setUpAfter, setUpAfterErr := b.scrapeRequests(ctx)
	cpuAfter, cpuErr := b.cpuTimes()
	res.setUpCPU, res.setUpCPUErr = cpuTimes{kcp: cpuAfter.kcp - times.cpu.kcp, plugin: cpuAfter.plugin - times.cpu.plugin}, errors.Join(times.cpuErr, cpuErr)
	res.setUpRequests, res.setUpRequestsErr = setUpAfter.since(setUpBefore), errors.Join(setUpBeforeErr, setUpAfterErr)
	if err != nil || !b.opts.flip {
		if err != nil {
			res.missing = t.missing(10)
		}
		res.memory, res.memoryErr = b.plugin.Memory.Sample()
		return res, err
	}

	t.begin(flippedStage)
	requestsBefore, requestsErr := b.scrapeRequests(ctx)
	t0 := time.Now()
	logf("flipping %d mount objects to Ready", b.opts.workspaces)
	err = forEach(ctx, "flipping", b.opts.workspaces, b.opts.concurrency, func(ctx context.Context, i int) error {
		return b.clients.flipMount(ctx, t.layout, i)
	})
	res.flipsWritten = time.Since(t0)
	if err != nil {
		return res, err
	}
	err = b.await(ctx, t, flippedStage.name)
	res.flip = t.convergence(t0)
	requestsAfter, afterErr := b.scrapeRequests(ctx)
	res.requests, res.requestsErr = requestsAfter.since(requestsBefore), errors.Join(requestsErr, afterErr)
	res.memory, res.memoryErr = b.plugin.Memory.Sample()
	b.countSyncErrors(res)
	if err != nil {
		res.missing = t.missing(10)
	}
	return res, err
}

// runVirtual sets up the mounts with every mount object Ready from the start
// (no flip), waits until the plugin shows that on every Workspace, and then
// measures the virtual workspace. The result, if not nil, holds what was
// measured even when runVirtual fails.
func (b *bench) runVirtual(ctx context.Context) (*result, error) {
	res := &result{benchmark: Virtual, workspaces: b.opts.workspaces, clusters: b.opts.clusters}
	t, times, err := b.setUp(ctx, mount.PhaseReady, afterURL, func(l layout) *tracker { return newTracker(l, readyStage, false) })
	if err != nil {
		return nil, err
	}
	res.setup, res.mountsSetup = times.all, times.mounts
	setUpDone := time.Now()
	err = b.await(ctx, t, readyStage.name)
	res.initial = t.convergence(setUpDone)
	if err != nil {
		res.missing = t.missing(10)
		return res, err
	}
	res.virtual, err = b.measureVirtual(ctx, t)
	return res, err
}

// setUpTimes is how long the set-up took: all of it, and its part that
// created the mount objects and mounted Workspaces.
type setUpTimes struct {
	all, mounts time.Duration
	// cpu are the CPU times of kcp and the plugin when the creation of the mounts began; cpuErr why they are unknown.
	cpu    cpuTimes
	cpuErr error
}

// setUp creates the clusters with the mount CRD, starts the watch feeding the
// tracker that track returns for their layout, and creates the mount objects,
// each with the status phase at url(i), and the mounted Workspaces.
func (b *bench) setUp(ctx context.Context, phase mount.Phase, url func(i int) string, track func(layout) *tracker) (*tracker, setUpTimes, error) {
	began := time.Now()
	logf("creating %d workspaces with the %s CRD", b.opts.clusters, mountGVR.GroupResource())
	l := layout{clusters: make([]logicalcluster.Name, b.opts.clusters), mounts: b.opts.workspaces}
	err := forEach(ctx, "creating workspaces", b.opts.clusters, min(b.opts.concurrency, maxClusterConcurrency), func(ctx context.Context, i int) error {
		cluster, err := b.clients.CreateCluster(ctx, fmt.Sprintf("bench-%d", i), "")
		if err != nil {
			return err
		}
		l.clusters[i] = cluster
		return b.clients.installMountCRD(ctx, cluster)
	})
	if err != nil {
		return nil, setUpTimes{}, err
	}

	t := track(l)
	identity, err := clients.TenancyIdentity(ctx, b.shardCfg)
	if err != nil {
		return nil, setUpTimes{}, err
	}
	if err := watchWorkspaces(ctx, b.shardCfg, identity, t); err != nil {
		return nil, setUpTimes{}, fmt.Errorf("watching Workspaces: %w", err)
	}

	logf("creating %d mount objects and mounted Workspaces", b.opts.workspaces)
	cpu, cpuErr := b.cpuTimes()
	mountsBegan := time.Now()
	err = forEach(ctx, "creating mounts", b.opts.workspaces, b.opts.concurrency, func(ctx context.Context, i int) error {
		return b.clients.createMount(ctx, l, i, phase, url(i))
	})
	if err != nil {
		return nil, setUpTimes{}, err
	}
	times := setUpTimes{all: time.Since(began), mounts: time.Since(mountsBegan), cpu: cpu, cpuErr: cpuErr}
	logf("set-up took %s", times.all.Round(time.Millisecond))
	return t, times, nil
}

// restClientRequests is the plugin's rest_client_requests_total by method:
// its requests to kcp, from client-go's metrics.
type restClientRequests map[string]float64

// restClientRequestsMetric is client-go's request counter, labels code, host, method.
const restClientRequestsMetric = "rest_client_requests_total"

// scrapeRequests reads the plugin's requests to kcp so far from its /metrics.
func (b *bench) scrapeRequests(ctx context.Context) (restClientRequests, error) {
	if b.plugin == nil {
		return nil, errors.New("no plugin")
	}
	m, err := b.plugin.ScrapeMetrics(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the plugin's %s: %w", restClientRequestsMetric, err)
	}
	family := m[restClientRequestsMetric]
	if family == nil {
		return nil, fmt.Errorf("the plugin exports no %s (a build from before it registered client-go's metrics?)", restClientRequestsMetric)
	}
	requests := restClientRequests{}
	for _, metric := range family.GetMetric() {
		method := "?"
		for _, label := range metric.GetLabel() {
			if label.GetName() == "method" {
				method = label.GetValue()
			}
		}
		requests[method] += metric.GetCounter().GetValue()
	}
	return requests, nil
}

// scrapeRequestsOnceUp is scrapeRequests, tried for up to scrapeWait while the plugin's /metrics does not answer yet.
func (b *bench) scrapeRequestsOnceUp(ctx context.Context) (restClientRequests, error) {
	deadline := time.Now().Add(scrapeWait)
	for {
		requests, err := b.scrapeRequests(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return requests, err
		}
		time.Sleep(awaitInterval)
	}
}

// since is how many requests of each method were made after earlier; nil
// when either is unknown.
func (r restClientRequests) since(earlier restClientRequests) restClientRequests {
	if r == nil || earlier == nil {
		return nil
	}
	out := restClientRequests{}
	for method, n := range r {
		if d := n - earlier[method]; d > 0 {
			out[method] = d
		}
	}
	return out
}

// countSyncErrors counts the failed syncs both controllers logged so far.
func (b *bench) countSyncErrors(res *result) {
	var pluginErr, inTreeErr error
	res.pluginErrors, pluginErr = countSyncErrors(b.plugin.LogPath, pluginSyncError)
	if b.opts.inTree {
		res.inTreeErrors, inTreeErr = countSyncErrors(b.kcp.logPath(), inTreeSyncError)
	}
	res.syncErrorsErr = errors.Join(pluginErr, inTreeErr)
}

// await waits until every Workspace shows the tracker's stage for each
// controller it measures (both, the plugin alone with --in-tree=false), for
// at most the timeout. It returns errNotConverged on timeout, and another
// error if ctx is done or kcp or the plugin (if any) exited.
func (b *bench) await(ctx context.Context, t *tracker, label string) error {
	logf("waiting for the %s", label)
	defer every(progressInterval, func() {
		plugin, inTree := t.progress()
		var parts []string
		if t.withPlugin() {
			parts = append(parts, fmt.Sprintf("plugin %d/%d", plugin, t.layout.mounts))
		}
		if t.withInTree() {
			parts = append(parts, fmt.Sprintf("in-tree %d/%d", inTree, t.layout.mounts))
		}
		logf("%s: %s", label, strings.Join(parts, ", "))
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
		if err := b.checkRunning(); err != nil {
			return err
		}
	}
	return nil
}

// checkRunning returns an error if kcp or the plugin (if any) exited.
func (b *bench) checkRunning() error {
	err := b.kcp.CheckRunning()
	if b.plugin != nil {
		err = errors.Join(err, b.plugin.CheckRunning())
	}
	return err
}
