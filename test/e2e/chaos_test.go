//go:build e2e

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

package e2e

// This file holds TestChaosSoak and its set-up: kcp, the two replicas, the
// mounted Workspaces, the seed. The fault schedule is in chaos_faults_test.go,
// the mount churn in chaos_churn_test.go, the checks in chaos_checks_test.go.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// chaosSeedEnv and -chaos.seed give the soak's seed; without either, the time.
const chaosSeedEnv = "WORKSPACEMOUNTS_CHAOS_SEED"

var chaosSeedFlag = flag.Int64("chaos.seed", 0, "the seed of TestChaosSoak's randomness (0: $"+chaosSeedEnv+", else the time)")

// The leader election of the replicas: the shortest times that stay clear
// of a renewal missed under load (-race, two cores shared).
const (
	chaosLeaseDuration = 8 * time.Second
	chaosRenewDeadline = 5 * time.Second
	chaosRetryPeriod   = time.Second
	// chaosConditionDelay is --workspace-condition-delay.
	chaosConditionDelay = 2 * time.Second
)

// chaosSize is how big and long the soak is.
type chaosSize struct {
	workspaces int
	// rounds of the three fault kinds (kcp paused, kcp stopped, the leader
	// killed and the new one frozen), in an order the seed shuffles.
	rounds int
	// pause and down are how long kcp is paused and stopped; gap the most
	// between two faults.
	pause, down, gap time.Duration
	// churnEvery is the most between two changes of a mount object.
	churnEvery time.Duration
	// stay is how long the Workspaces are watched after they converged.
	stay time.Duration
}

// chaosSizeFor is the soak of make test-chaos (framework.Slow) or the
// short one of make test.
func chaosSizeFor(slow bool) chaosSize {
	if slow {
		return chaosSize{workspaces: 300, rounds: 3, pause: 45 * time.Second, down: 30 * time.Second, gap: 15 * time.Second,
			churnEvery: 20 * time.Millisecond, stay: 4 * chaosLeaseDuration}
	}
	return chaosSize{workspaces: 30, rounds: 1, pause: 12 * time.Second, down: 5 * time.Second, gap: 3 * time.Second,
		churnEvery: 100 * time.Millisecond, stay: 2 * chaosLeaseDuration}
}

// chaosSeed is the seed: -chaos.seed, else $WORKSPACEMOUNTS_CHAOS_SEED, else the time.
func chaosSeed(t *testing.T) int64 {
	if *chaosSeedFlag != 0 {
		return *chaosSeedFlag
	}
	if v := os.Getenv(chaosSeedEnv); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "$%s", chaosSeedEnv)
		return seed
	}
	return time.Now().UnixNano()
}

// chaosEnv is the soak's kcp, replicas and Workspaces.
type chaosEnv struct {
	size     chaosSize
	kcp      *framework.Server
	c        clients // shard-base: its token survives kcp's restarts
	org      logicalcluster.Path
	names    []string // the mounted Workspaces; each mounts the KubeCluster of its name
	replicas []*framework.Plugin
	timeline *chaosTimeline
	// requests are each replica's rest_client_requests_total by verb, of
	// its lives before the current one (a kill resets the counters).
	requests []map[string]float64
}

// TestChaosSoak is issue 41's fault soak: two replicas at level 3 with
// leader election and the gate, many mounted Workspaces whose mount objects
// change, are deleted and re-created all the time, while kcp is paused and
// stopped, the leader is killed, and the new leader is frozen past its
// Lease. Then the Workspaces must converge to what their mount objects say,
// stay so once the frozen replica resumes, and carry a history of states
// that existed, in order. make test runs a short form; make test-chaos
// (framework.Slow) the full one. The seed is logged for a replay. Not
// parallel: it runs before the parallel tests, alone, so that its faults and
// its lease timing neither starve nor are starved by the others on 2 cores.
func TestChaosSoak(t *testing.T) { //nolint:paralleltest // alone, see above
	began := time.Now()
	seed := chaosSeed(t)
	size := chaosSizeFor(framework.Slow())
	t.Logf("chaos seed %d: replay with %s=%d make test-chaos (or -chaos.seed=%d); %d Workspaces, %d rounds of faults",
		seed, chaosSeedEnv, seed, seed, size.workspaces, size.rounds)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos seed %d failed: replay with %s=%d make test-chaos", seed, chaosSeedEnv, seed)
		}
	})
	e := &chaosEnv{size: size, timeline: newChaosTimeline()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("fault timeline:\n%s", e.timeline)
		}
	})
	e.start(t)
	t.Logf("set up in %s", time.Since(began).Round(time.Second))

	churn := newChaosChurn(e, seed)
	churnDone := churn.run(t)
	frozen := e.runFaults(t, seed)
	churn.stop()
	<-churnDone
	e.timeline.addf("the churn stopped: %d writes (%d failed)", churn.writes.Load(), churn.failed.Load())

	want := e.converge(t)
	e.resume(t, frozen)
	e.stay(t, want)
	e.checkHistory(t, churn)
	e.reportRequests(t)
	e.reportFenced(t)
	t.Logf("fault timeline:\n%s", e.timeline)
	t.Logf("TestChaosSoak (seed %d) took %s", seed, time.Since(began).Round(time.Second))
}

// start starts kcp (without its in-tree mounts controller: level 3), the
// org with the KubeCluster CRD, a mount object and a mounted Workspace per
// name, and the two replicas.
func (e *chaosEnv) start(t *testing.T) {
	// kcp ends the replicas' watches itself on SIGTERM (see TestResilience).
	s, err := framework.Start(t.Context(), framework.Options{ExtraArgs: []string{"--shutdown-watch-termination-grace-period=5s"}})
	require.NoError(t, err, "starting kcp")
	e.kcp = s
	t.Logf("kcp at %s ready after %s, log %s", s.BaseURL, s.ReadyAfter.Round(time.Millisecond), s.LogPath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kcp (%v): last lines of its log:\n%s", s.CheckRunning(), s.LogTail(20))
		}
		framework.ReportKCPStop(t, "kcp", s.Stop())
	})
	cfg := s.BaseConfigT(t, "base")
	admin := newClientsFor(t, cfg)
	e.c = newClientsFor(t, s.BaseConfigT(t, "shard-base"))
	name := framework.UniqueName("chaos")
	framework.CreateWorkspace(t, cfg, framework.RootPath, name)
	e.org = framework.RootPath.Join(name)
	framework.InstallCRD(t, cfg, e.org, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	for i := range e.size.workspaces {
		e.names = append(e.names, fmt.Sprintf("ws-%03d", i))
	}
	for _, n := range e.names {
		admin.createMountObject(t, e.org, kubeClusters, n, map[string]interface{}{"phase": "Connecting"})
		admin.createMountedWorkspace(t, e.org, n, kubeClusters.ref(n))
	}

	dir := t.TempDir()
	args := []string{
		"--workspace-condition", "--workspace-url",
		fmt.Sprintf("--max-unavailable=%d", max(1, e.size.workspaces/5)),
		"--workspace-condition-delay=" + chaosConditionDelay.String(),
		"--leader-elect=true",
		"--leader-election-lease-duration=" + chaosLeaseDuration.String(),
		"--leader-election-renew-deadline=" + chaosRenewDeadline.String(),
		"--leader-election-retry-period=" + chaosRetryPeriod.String(),
	}
	for i := range 2 {
		name := fmt.Sprintf("replica-%d", i)
		workDir := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(workDir, 0o755))
		p := framework.StartPluginT(t, t, framework.PluginOptions{Name: name, Kubeconfig: s.KubeconfigPath, WorkDir: workDir, ExtraArgs: args})
		e.replicas = append(e.replicas, p)
		e.requests = append(e.requests, map[string]float64{})
	}
	for _, p := range e.replicas {
		require.NoError(t, p.WaitReady(t.Context(), 2*time.Minute), "%s ready", p.Name)
	}
	t.Logf("the replicas: workspacemounts start %v", args)
}

// chaosNotFound is the status of a Workspace whose mount object is gone.
var chaosNotFound = mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound}
