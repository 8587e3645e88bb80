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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// The routing mode (--mode=routing) measures what kcp routes by: spec.URL
// and kcp's phase of every mounted Workspace, as kcp's in-tree mounts
// controller writes them on one kcp (the WorkspaceMounts feature gate on, no
// plugin), and as the plugin with --workspace-condition and --workspace-url
// writes them on another (the gate off: the plugin refuses --workspace-url
// where the in-tree controller runs). The two kcp run one after the other.

// routingPluginArgs are the plugin's flags that make it write what kcp routes by.
var routingPluginArgs = []string{"--workspace-condition", "--workspace-url"}

// mountAvailableCondition is the plugin's condition on the Workspace (--workspace-condition).
const mountAvailableCondition conditionsv1alpha1.ConditionType = "WorkspaceMountAvailable"

// Plugin metrics of the Workspace writes, by result (applied, conflict, error).
const (
	annotationPatchesMetric = "workspacemounts_annotation_patches_total"
	statusPatchesMetric     = "workspacemounts_workspace_status_patches_total"
)

// patchResults are the values of the result label of the patch metrics.
var patchResults = []string{"applied", "conflict", "error"}

// The stages of the routing mode. Each is reached when spec.URL is the
// stage's URL and the phase one of its workspacePhases; the controller's own
// writes for it (its condition's status, and spec.URL) are timed too.
var (
	// routingInitialStage is the state after set-up, every mount object
	// Connecting at its before URL: spec.URL is that URL and the phase
	// Unavailable. Mounted Workspaces are created Scheduling, and neither
	// controller sets a phase for a mount that is not Ready; kcp's phase rule
	// turns them Unavailable once it sees the controller's False condition.
	// Waiting for that, on both sides, has kcp's own Workspace controller
	// done with the set-up before the flip.
	routingInitialStage = stage{
		name: "initial state", url: beforeURL, condition: corev1.ConditionFalse,
		workspacePhases: []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseUnavailable},
		describe:        describeRouting,
	}
	// routingFlippedStage is the state after the flip to Ready at the after
	// URL: spec.URL is that URL and the phase Ready, so kcp routes the
	// Workspace there.
	routingFlippedStage = stage{
		name: "flip to Ready", url: afterURL, condition: corev1.ConditionTrue,
		workspacePhases: []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseReady},
		describe:        describeRouting,
	}
	// routingFlippedBackStage is the state after the flip back to Connecting,
	// at the same URL: the phase is Unavailable, kcp answers 503.
	routingFlippedBackStage = stage{
		name: "flip back to Connecting", url: afterURL, condition: corev1.ConditionFalse,
		workspacePhases: []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseUnavailable},
		describe:        describeRouting,
	}
)

// routingShows tells whether a Workspace shows a routing stage: spec.URL and
// the phase.
func routingShows(s stage, ws *tenancyv1alpha1.Workspace, i int) bool {
	return ws.Spec.URL == s.url(i) && slices.Contains(s.workspacePhases, ws.Status.Phase)
}

// ownWritesShow returns whether a Workspace shows what a controller whose
// condition is conditionType writes itself for a routing stage: spec.URL
// and the condition's status.
func ownWritesShow(conditionType conditionsv1alpha1.ConditionType) shows {
	return func(s stage, ws *tenancyv1alpha1.Workspace, i int) bool {
		c := conditions.Get(ws, conditionType)
		return ws.Spec.URL == s.url(i) && c != nil && c.Status == s.condition
	}
}

// describeRouting says what a Workspace shows of what kcp routes by.
func describeRouting(ws *tenancyv1alpha1.Workspace) string {
	condition := func(t conditionsv1alpha1.ConditionType) string {
		if c := conditions.Get(ws, t); c != nil {
			return fmt.Sprintf("%s=%s (%s)", t, c.Status, c.Reason)
		}
		return string(t) + "=none"
	}
	return fmt.Sprintf("spec.URL=%q phase=%q %s %s", ws.Spec.URL, ws.Status.Phase,
		condition(tenancyv1alpha1.MountConditionReady), condition(mountAvailableCondition))
}

// routingSide is one controller's part of the routing mode, on its own kcp.
type routingSide struct {
	name string
	// inTree is kcp's in-tree controller on kcp with the gate on; otherwise
	// the plugin on kcp without it.
	inTree bool

	setUp setUpTimes
	// initial is measured from the end of the set-up.
	initial *convergence
	steps   []*routingStep
	// memory is the plugin's after the flip to Ready and its settle period,
	// kcpMemory kcp's then.
	memory, kcpMemory framework.Memory
	memoryErr         error
	pluginVersion     string
	// loadBefore and loadAfter are the load averages before kcp started and after the last step.
	loadBefore, loadAfter string
	// failed names the stage not every Workspace reached, if any; missing
	// describes some of those that did not.
	failed  string
	missing []string
}

// routingStep is one flip of every mount object and what it cost.
type routingStep struct {
	name string
	// condition is the status of the controller's condition the step leads to.
	condition corev1.ConditionStatus
	// written is when the last write of a mount object returned, from T0.
	written time.Duration
	// times holds, sorted, when each Workspace first showed the stage, from
	// T0; own when the controller's own writes first showed it.
	times, own []time.Duration
	total      int
	// writes are the Workspace writes seen from T0 until the end of the
	// settle period, writesAfter those after all Workspaces showed the stage;
	// phaseChanges those of them that changed status.phase.
	writes, writesAfter, phaseChanges int
	// showing is how many Workspaces still showed the stage at the end of the settle period.
	showing int
	// patches are the plugin's, by metric and result, during the same time.
	patches  map[string]map[string]float64
	patchErr error
	// syncErrors are the failed syncs the controller logged during the same time.
	syncErrors    syncErrors
	syncErrorsErr error
}

// conflicts is the number of writes the controller made on an outdated
// resourceVersion: the plugin's patches answered with a conflict, or the
// in-tree controller's failed syncs for one.
func (s *routingStep) conflicts(inTree bool) string {
	if inTree {
		if s.syncErrorsErr != nil {
			return "?"
		}
		return fmt.Sprint(s.syncErrors.conflicts)
	}
	if s.patchErr != nil {
		return "?"
	}
	return fmt.Sprint(s.patches[annotationPatchesMetric]["conflict"] + s.patches[statusPatchesMetric]["conflict"])
}

// runRouting runs the routing mode: the in-tree controller on one kcp
// (unless --in-tree=false), then the plugin on another, and prints one table.
func runRouting(ctx context.Context, opts options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "workspacemounts-bench-")
	if err != nil {
		return err
	}
	defer warnOnError(func() error { return os.RemoveAll(dir) })

	res := &routingResult{workspaces: opts.workspaces, clusters: opts.clusters, settle: opts.settle, pluginArgs: opts.pluginArgs}
	var errs []error
	if opts.inTree {
		side := &routingSide{name: "in-tree (kcp, gate on)", inTree: true}
		res.sides = append(res.sides, side)
		errs = append(errs, side.run(ctx, opts, filepath.Join(dir, "in-tree")))
	}
	if ctx.Err() == nil {
		side := &routingSide{name: "plugin (" + routingPluginArgs[0] + " " + routingPluginArgs[1] + ")"}
		res.sides = append(res.sides, side)
		errs = append(errs, side.run(ctx, opts, filepath.Join(dir, "plugin")))
	}
	res.print(out)
	return errors.Join(errs...)
}

// run starts kcp (and the plugin), sets up the mounts, waits for the initial
// state and flips every mount object to Ready and back, recording what it
// measured in s. It stops kcp and the plugin before it returns.
func (s *routingSide) run(ctx context.Context, opts options, dir string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the Workspace informer
	s.loadBefore = loadAverage()
	defer func() { s.loadAfter = loadAverage() }()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	kcpLog := opts.kcpLog
	if kcpLog != "" {
		kcpLog += "." + s.label()
	}
	logf("%s: starting kcp (root directory %s)", s.name, filepath.Join(dir, "kcp"))
	kcp, err := startKCP(ctx, kcpLog, filepath.Join(dir, "kcp"), s.inTree)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	defer warnOnError(kcp.stop)
	logf("kcp at %s ready after %s", kcp.BaseURL, kcp.ReadyAfter.Round(time.Millisecond))

	var plugin *framework.Plugin
	if !s.inTree {
		pluginLog := opts.pluginLog
		if pluginLog == "" {
			pluginLog = filepath.Join(dir, "workspacemounts.log")
		}
		s.pluginVersion = framework.PluginVersion(ctx, opts.plugin)
		args := append(slices.Clone(routingPluginArgs), opts.pluginArgs...)
		plugin, err = framework.StartPlugin(ctx, framework.PluginOptions{Binary: opts.plugin, ExtraArgs: args, Kubeconfig: kcp.KubeconfigPath, LogPath: pluginLog, WorkDir: dir})
		if err != nil {
			return err
		}
		defer warnOnError(plugin.Stop)
		logf("plugin %s (version %s) started (pid %d) with %q, logging to %s, metrics at %s",
			opts.plugin, s.pluginVersion, plugin.Pid(), args, pluginLog, plugin.MetricsURL)
		// Before the set-up: a plugin that refuses its flags ends here, not
		// minutes later, and it watches the Workspaces from their creation on.
		if err := waitForPluginReady(ctx, plugin); err != nil {
			plugin.PrintLogTail(os.Stderr, 20)
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}

	b, err := newBench(kcp, plugin, opts)
	if err != nil {
		return err
	}
	err = s.measure(ctx, b)
	if err != nil && ctx.Err() == nil {
		if plugin != nil {
			plugin.PrintLogTail(os.Stderr, 20)
		}
		fmt.Fprintf(os.Stderr, "last lines of kcp's log:\n%s\n", kcp.LogTail(20))
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", s.name, err)
	}
	return err
}

// waitForPluginReady waits until the plugin's /readyz answers 200, for at
// most benchsetup.ReadyTimeout, and fails at once if the plugin exits.
func waitForPluginReady(ctx context.Context, plugin *framework.Plugin) error {
	began := time.Now()
	err := wait.PollUntilContextTimeout(ctx, awaitInterval, benchsetup.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := plugin.CheckRunning(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, plugin.MetricsURL+"/readyz", http.NoBody)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: try again
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the plugin to be ready: %w", err)
	}
	logf("plugin ready after %s", formatDuration(time.Since(began)))
	return nil
}

// label names the side in file names.
func (s *routingSide) label() string {
	if s.inTree {
		return "in-tree"
	}
	return "plugin"
}

// measure sets up the mounts, waits for the initial state, and flips.
func (s *routingSide) measure(ctx context.Context, b *bench) error {
	t, times, err := b.setUp(ctx, mount.PhaseConnecting, beforeURL, func(l layout) *tracker {
		if s.inTree {
			t := newTrackerOf(l, routingInitialStage, nil, routingShows)
			t.ownShows = ownWritesShow(tenancyv1alpha1.MountConditionReady)
			return t
		}
		t := newTrackerOf(l, routingInitialStage, routingShows, nil)
		t.ownShows = ownWritesShow(mountAvailableCondition)
		return t
	})
	if err != nil {
		return err
	}
	s.setUp = times
	setUpDone := time.Now()
	err = b.await(ctx, t, routingInitialStage.name)
	s.initial = s.measured(t.convergence(setUpDone))
	if err != nil {
		s.failed, s.missing = routingInitialStage.name, t.missing(10)
		return err
	}
	if err := b.settle(ctx, t); err != nil {
		return err
	}

	for _, step := range []struct {
		stage stage
		phase string
	}{{routingFlippedStage, "Ready"}, {routingFlippedBackStage, "Connecting"}} {
		err := s.flip(ctx, b, t, step.stage, step.phase)
		if step.stage.name == routingFlippedStage.name && b.plugin != nil {
			s.memory, s.memoryErr = b.plugin.Memory.Sample()
		}
		if step.stage.name == routingFlippedStage.name {
			s.kcpMemory, _ = framework.ReadMemory(b.kcp.Pid())
		}
		if err != nil {
			s.failed, s.missing = step.stage.name, t.missing(10)
			return err
		}
	}
	return nil
}

// measured returns the times of the controller the side measures.
func (s *routingSide) measured(c *convergence) *convergence {
	if s.inTree {
		return &convergence{total: c.total, inTree: c.inTree, own: c.own}
	}
	return &convergence{total: c.total, plugin: c.plugin, own: c.own}
}

// times returns the sorted times of the controller the side measures.
func (s *routingSide) times(c *convergence) []time.Duration {
	if s.inTree {
		return c.inTree
	}
	return c.plugin
}

// flip sets every mount object to phase at the URL of stage, waits until
// every Workspace shows the stage, then for the settle period, and records
// the step.
func (s *routingSide) flip(ctx context.Context, b *bench, t *tracker, st stage, phase string) error {
	step := &routingStep{name: st.name, condition: st.condition, total: b.opts.workspaces}
	s.steps = append(s.steps, step)
	patchesBefore, patchErrBefore := b.pluginPatches(ctx)
	syncBefore, syncErrBefore := b.routingSyncErrors()

	t.begin(st)
	t0 := time.Now()
	logf("flipping %d mount objects to %s", b.opts.workspaces, phase)
	err := forEach(ctx, "flipping", b.opts.workspaces, b.opts.concurrency, func(ctx context.Context, i int) error {
		return b.clients.setMountStatus(ctx, t.layout, i, phase, st.url(i))
	})
	step.written = time.Since(t0)
	if err != nil {
		return err
	}
	err = b.await(ctx, t, st.name)
	converged := t.convergence(t0)
	step.times, step.own = s.times(converged), converged.own
	writesAtConvergence, _ := t.writesSeen()
	if err != nil {
		return err
	}
	if err := b.settle(ctx, t); err != nil {
		return err
	}
	step.writes, step.phaseChanges = t.writesSeen()
	step.writesAfter = step.writes - writesAtConvergence
	plugin, inTree := t.showingNow()
	step.showing = plugin
	if s.inTree {
		step.showing = inTree
	}

	patchesAfter, patchErrAfter := b.pluginPatches(ctx)
	if step.patchErr = errors.Join(patchErrBefore, patchErrAfter); step.patchErr == nil && b.plugin != nil {
		step.patches = subtractPatches(patchesAfter, patchesBefore)
	}
	syncAfter, syncErrAfter := b.routingSyncErrors()
	if step.syncErrorsErr = errors.Join(syncErrBefore, syncErrAfter); step.syncErrorsErr == nil {
		step.syncErrors = syncErrors{total: syncAfter.total - syncBefore.total, conflicts: syncAfter.conflicts - syncBefore.conflicts}
	}
	return nil
}

// settle waits for the settle period, so that late writes count for the
// step they belong to and the next one starts from a quiet state.
func (b *bench) settle(ctx context.Context, t *tracker) error {
	logf("settling for %s", b.opts.settle)
	deadline := time.NewTimer(b.opts.settle)
	defer deadline.Stop()
	ticker := time.NewTicker(awaitInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			writes, _ := t.writesSeen()
			logf("settled: %d Workspace writes seen since the stage began", writes)
			return nil
		case <-ticker.C:
			if err := b.checkRunning(); err != nil {
				return err
			}
		}
	}
}

// pluginPatches scrapes the plugin's patch counters by metric and result;
// nil without a plugin.
func (b *bench) pluginPatches(ctx context.Context) (map[string]map[string]float64, error) {
	if b.plugin == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := framework.ScrapeMetrics(ctx, http.DefaultClient, b.plugin.MetricsURL+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping the plugin's metrics: %w", err)
	}
	patches := map[string]map[string]float64{}
	for _, name := range []string{annotationPatchesMetric, statusPatchesMetric} {
		patches[name] = map[string]float64{}
		for _, result := range patchResults {
			patches[name][result], _ = m.Sum(name, map[string]string{"result": result})
		}
	}
	return patches, nil
}

// subtractPatches returns after-before, by metric and result.
func subtractPatches(after, before map[string]map[string]float64) map[string]map[string]float64 {
	diff := map[string]map[string]float64{}
	for name, results := range after {
		diff[name] = map[string]float64{}
		for result, v := range results {
			diff[name][result] = v - before[name][result]
		}
	}
	return diff
}

// routingSyncErrors counts the failed syncs the side's controller logged so
// far: the plugin's in its log, the in-tree controller's in kcp's.
func (b *bench) routingSyncErrors() (syncErrors, error) {
	if b.plugin != nil {
		return countSyncErrors(b.plugin.LogPath, pluginSyncError)
	}
	return countSyncErrors(b.kcp.logPath(), inTreeSyncError)
}
