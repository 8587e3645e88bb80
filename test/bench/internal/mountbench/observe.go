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
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
)

// stage is the state every mounted Workspace is to reach, as each of the two
// controllers shows it.
type stage struct {
	name  string
	phase mount.Phase
	ready bool
	url   func(i int) string

	// For the routing mode (routing.go): workspacePhases are kcp's phases of
	// the Workspace that show the stage, and condition, if set, the status the
	// measured controller's condition must have.
	workspacePhases []corev1alpha1.LogicalClusterPhaseType
	condition       corev1.ConditionStatus
	// describe says what a Workspace shows instead, if set.
	describe func(ws *tenancyv1alpha1.Workspace) string
}

var (
	// initialStage is the state right after set-up: every mount object is Connecting.
	initialStage = stage{name: "initial state", phase: mount.PhaseConnecting, url: beforeURL}
	// flippedStage is the state after the flip: every mount object is Ready at a new URL.
	flippedStage = stage{name: "flip", phase: mount.PhaseReady, ready: true, url: afterURL}
	// readyStage is the state right after the set-up of the virtual
	// workspace benchmark: every mount object is Ready at its after URL.
	readyStage = stage{name: "Ready state", phase: mount.PhaseReady, ready: true, url: afterURL}
	// flippedBackStage is the state of the one mount object the virtual
	// workspace benchmark sets back to Connecting, keeping its URL.
	flippedBackStage = stage{name: "flip back", phase: mount.PhaseConnecting, url: afterURL}
)

// pluginShows tells whether the plugin's annotations on ws, mounting object
// i, show the stage.
func (s stage) pluginShows(ws *tenancyv1alpha1.Workspace, i int) bool {
	if ws.Annotations[mount.PhaseAnnotationKey] != string(s.phase) {
		return false
	}
	status, ok := mount.StatusOf(ws.Annotations)
	return ok && status.Phase == s.phase && status.Ready == s.ready && status.URL == s.url(i)
}

// inTreeShows tells whether what kcp's in-tree controller writes on ws
// (spec.URL and the WorkspaceMountReady condition) shows the stage.
func (s stage) inTreeShows(ws *tenancyv1alpha1.Workspace, i int) bool {
	want := corev1.ConditionFalse
	if s.ready {
		want = corev1.ConditionTrue
	}
	condition := conditions.Get(ws, tenancyv1alpha1.MountConditionReady)
	return ws.Spec.URL == s.url(i) && condition != nil && condition.Status == want
}

// shows tells whether a Workspace, mounting object i, shows a stage as one
// controller writes it.
type shows func(s stage, ws *tenancyv1alpha1.Workspace, i int) bool

// tracker records, for the current stage, when each controller was first seen
// to show it on each mounted Workspace, and counts the Workspaces' writes.
type tracker struct {
	layout layout
	// pluginShows and inTreeShows tell whether a Workspace shows the stage as
	// each controller writes it; nil for a controller that is not measured.
	pluginShows, inTreeShows shows
	// ownShows, if set, tells whether a Workspace shows what the controller
	// measured writes itself for the stage (the routing mode: spec.URL and its
	// condition, before kcp's phase rule follows); only recorded.
	ownShows shows

	lock   sync.Mutex
	stage  stage
	latest map[int]*tenancyv1alpha1.Workspace
	plugin map[int]time.Time
	inTree map[int]time.Time
	own    map[int]time.Time
	// writes counts the writes of the mounted Workspaces seen since the stage
	// began (resourceVersion changes), phaseChanges those that changed
	// status.phase.
	writes, phaseChanges int
}

// newTracker tracks the plugin's annotations and, with withInTree, what kcp's
// in-tree controller writes (spec.URL and its condition).
func newTracker(l layout, s stage, withInTree bool) *tracker {
	t := newTrackerOf(l, s, stage.pluginShows, nil)
	if withInTree {
		t.inTreeShows = stage.inTreeShows
	}
	return t
}

// newTrackerOf tracks the controllers whose shows function is not nil.
func newTrackerOf(l layout, s stage, pluginShows, inTreeShows shows) *tracker {
	return &tracker{
		layout: l, pluginShows: pluginShows, inTreeShows: inTreeShows, stage: s,
		latest: map[int]*tenancyv1alpha1.Workspace{}, plugin: map[int]time.Time{}, inTree: map[int]time.Time{}, own: map[int]time.Time{},
	}
}

// withPlugin and withInTree tell whether each controller is measured.
func (t *tracker) withPlugin() bool { return t.pluginShows != nil }
func (t *tracker) withInTree() bool { return t.inTreeShows != nil }

// begin starts tracking stage s, forgetting the times and writes of the
// previous one. Workspaces that show s already count as showing it now.
func (t *tracker) begin(s stage) {
	t.lock.Lock()
	defer t.lock.Unlock()
	t.stage = s
	t.plugin, t.inTree, t.own = map[int]time.Time{}, map[int]time.Time{}, map[int]time.Time{}
	t.writes, t.phaseChanges = 0, 0
	now := time.Now()
	for i, ws := range t.latest {
		t.record(i, ws, now)
	}
}

// observe is the informer's event handler for added and updated Workspaces.
func (t *tracker) observe(obj interface{}) {
	now := time.Now()
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return
	}
	i, ok := t.layout.index(ws)
	if !ok {
		return
	}
	t.lock.Lock()
	defer t.lock.Unlock()
	if previous, ok := t.latest[i]; ok && previous.ResourceVersion != ws.ResourceVersion {
		t.writes++
		if previous.Status.Phase != ws.Status.Phase {
			t.phaseChanges++
		}
	}
	t.latest[i] = ws
	t.record(i, ws, now)
}

// record notes the first time each controller shows the stage on ws.
func (t *tracker) record(i int, ws *tenancyv1alpha1.Workspace, now time.Time) {
	if _, seen := t.plugin[i]; !seen && t.withPlugin() && t.pluginShows(t.stage, ws, i) {
		t.plugin[i] = now
	}
	if _, seen := t.inTree[i]; !seen && t.withInTree() && t.inTreeShows(t.stage, ws, i) {
		t.inTree[i] = now
	}
	if _, seen := t.own[i]; !seen && t.ownShows != nil && t.ownShows(t.stage, ws, i) {
		t.own[i] = now
	}
}

// writesSeen returns the writes and phase changes seen since the stage began.
func (t *tracker) writesSeen() (writes, phaseChanges int) {
	t.lock.Lock()
	defer t.lock.Unlock()
	return t.writes, t.phaseChanges
}

// showingNow returns how many Workspaces show the stage now, in their latest
// version, for each controller measured.
func (t *tracker) showingNow() (plugin, inTree int) {
	t.lock.Lock()
	defer t.lock.Unlock()
	for i, ws := range t.latest {
		if t.withPlugin() && t.pluginShows(t.stage, ws, i) {
			plugin++
		}
		if t.withInTree() && t.inTreeShows(t.stage, ws, i) {
			inTree++
		}
	}
	return plugin, inTree
}

// progress returns how many Workspaces show the stage for each controller.
func (t *tracker) progress() (plugin, inTree int) {
	t.lock.Lock()
	defer t.lock.Unlock()
	return len(t.plugin), len(t.inTree)
}

// done tells whether every Workspace shows the stage for each controller measured.
func (t *tracker) done() bool {
	plugin, inTree := t.progress()
	return (!t.withPlugin() || plugin == t.layout.mounts) && (!t.withInTree() || inTree == t.layout.mounts)
}

// pluginShownAt returns when the plugin was first seen to show the stage on
// the Workspace of mount object i.
func (t *tracker) pluginShownAt(i int) (time.Time, bool) {
	t.lock.Lock()
	defer t.lock.Unlock()
	at, ok := t.plugin[i]
	return at, ok
}

// convergence returns, for each controller, the sorted latencies from since
// until the Workspaces showed the stage (zero for those that did before).
func (t *tracker) convergence(since time.Time) *convergence {
	t.lock.Lock()
	defer t.lock.Unlock()
	return &convergence{total: t.layout.mounts, plugin: sortedSince(t.plugin, since), inTree: sortedSince(t.inTree, since), own: sortedSince(t.own, since)}
}

// convergenceOf is convergence for the mounts i for which keep(i) is true,
// of which there are total.
func (t *tracker) convergenceOf(since time.Time, total int, keep func(i int) bool) *convergence {
	t.lock.Lock()
	defer t.lock.Unlock()
	kept := map[int]time.Time{}
	for i, at := range t.plugin {
		if keep(i) {
			kept[i] = at
		}
	}
	return &convergence{total: total, plugin: sortedSince(kept, since)}
}

func sortedSince(times map[int]time.Time, since time.Time) []time.Duration {
	durations := make([]time.Duration, 0, len(times))
	for _, at := range times {
		durations = append(durations, max(at.Sub(since), 0))
	}
	sort.Slice(durations, func(a, b int) bool { return durations[a] < durations[b] })
	return durations
}

// missing describes up to limit Workspaces that do not show the stage for a
// controller yet, with what they show instead.
func (t *tracker) missing(limit int) []string {
	t.lock.Lock()
	defer t.lock.Unlock()
	var lines []string
	for i := range t.layout.mounts {
		_, plugin := t.plugin[i]
		_, inTree := t.inTree[i]
		plugin = plugin || !t.withPlugin()
		inTree = inTree || !t.withInTree()
		if plugin && inTree {
			continue
		}
		if len(lines) == limit {
			lines = append(lines, "...")
			break
		}
		lines = append(lines, t.describe(i, plugin, inTree))
	}
	return lines
}

// describe says what the Workspace of mount object i shows, for the
// controllers that are not done with it. The stage's describe, if set, says
// it for both.
func (t *tracker) describe(i int, pluginDone, inTreeDone bool) string {
	ws := t.latest[i]
	line := fmt.Sprintf("%s|%s:", t.layout.cluster(i), mountName(i))
	if ws == nil {
		return line + " never seen"
	}
	if t.stage.describe != nil {
		return line + " " + t.stage.describe(ws)
	}
	if !pluginDone {
		status, _ := mount.StatusOf(ws.Annotations)
		line += fmt.Sprintf(" plugin: phase=%q ready=%t url=%q reason=%q;", ws.Annotations[mount.PhaseAnnotationKey], status.Ready, status.URL, status.Reason)
	}
	if !inTreeDone {
		condition := "none"
		if c := conditions.Get(ws, tenancyv1alpha1.MountConditionReady); c != nil {
			condition = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
		}
		line += fmt.Sprintf(" in-tree: spec.URL=%q %s=%s;", ws.Spec.URL, tenancyv1alpha1.MountConditionReady, condition)
	}
	return line
}

// watchWorkspaces runs one informer on Workspaces across all logical clusters
// of one shard that feeds t, until ctx is done, and waits until it has
// listed once. cfg is the shard-base config: wildcard requests need the
// shard admin. identity is the tenancy.kcp.io APIExport's, in root
// (clients.TenancyIdentity of the root shard).
func watchWorkspaces(ctx context.Context, cfg *rest.Config, identity string, t *tracker) error {
	client, err := kcpclientset.NewForConfig(clients.WithWildcardIdentities(cfg, map[string]string{tenancyv1alpha1.SchemeGroupVersion.Group: identity}))
	if err != nil {
		return err
	}
	factory := kcpinformers.NewSharedInformerFactoryWithOptions(client, 0, kcpinformers.WithTransform(stripManagedFields))
	informer := factory.Tenancy().V1alpha1().Workspaces().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj interface{}) { t.observe(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, benchsetup.ReadyTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		return fmt.Errorf("the Workspace informer did not sync within %s", benchsetup.ReadyTimeout)
	}
	return nil
}

// stripManagedFields drops what the benchmark never reads, to keep its cache small.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
