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

package main

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

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// stage is the state every mounted Workspace is to reach, as each of the two
// controllers shows it.
type stage struct {
	name  string
	phase mount.Phase
	ready bool
	url   func(i int) string
}

var (
	// initialStage is the state right after set-up: every mount object is Connecting.
	initialStage = stage{name: "initial state", phase: mount.PhaseConnecting, url: beforeURL}
	// flippedStage is the state after the flip: every mount object is Ready at a new URL.
	flippedStage = stage{name: "flip", phase: mount.PhaseReady, ready: true, url: afterURL}
	// flippedBackStage is the state of the one mount object the virtual
	// workspace phase sets back to Connecting, keeping its URL.
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

// tracker records, for the current stage, when each controller was first seen
// to show it on each mounted Workspace.
type tracker struct {
	layout layout
	// withInTree tells whether kcp's in-tree controller runs and is waited for.
	withInTree bool

	lock   sync.Mutex
	stage  stage
	latest map[int]*tenancyv1alpha1.Workspace
	plugin map[int]time.Time
	inTree map[int]time.Time
}

func newTracker(l layout, s stage, withInTree bool) *tracker {
	return &tracker{layout: l, withInTree: withInTree, stage: s, latest: map[int]*tenancyv1alpha1.Workspace{}, plugin: map[int]time.Time{}, inTree: map[int]time.Time{}}
}

// begin starts tracking stage s, forgetting the times of the previous one.
// Workspaces that show s already count as showing it now.
func (t *tracker) begin(s stage) {
	t.lock.Lock()
	defer t.lock.Unlock()
	t.stage = s
	t.plugin, t.inTree = map[int]time.Time{}, map[int]time.Time{}
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
	t.latest[i] = ws
	t.record(i, ws, now)
}

// record notes the first time each controller shows the stage on ws.
func (t *tracker) record(i int, ws *tenancyv1alpha1.Workspace, now time.Time) {
	if _, seen := t.plugin[i]; !seen && t.stage.pluginShows(ws, i) {
		t.plugin[i] = now
	}
	if _, seen := t.inTree[i]; !seen && t.withInTree && t.stage.inTreeShows(ws, i) {
		t.inTree[i] = now
	}
}

// progress returns how many Workspaces show the stage for each controller.
func (t *tracker) progress() (plugin, inTree int) {
	t.lock.Lock()
	defer t.lock.Unlock()
	return len(t.plugin), len(t.inTree)
}

// done tells whether every Workspace shows the stage for both controllers,
// or for the plugin alone without the in-tree controller.
func (t *tracker) done() bool {
	plugin, inTree := t.progress()
	return plugin == t.layout.mounts && (!t.withInTree || inTree == t.layout.mounts)
}

// pluginDone tells whether every Workspace shows the stage for the plugin.
func (t *tracker) pluginDone() bool {
	plugin, _ := t.progress()
	return plugin == t.layout.mounts
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
	return &convergence{total: t.layout.mounts, plugin: sortedSince(t.plugin, since), inTree: sortedSince(t.inTree, since)}
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
		inTree = inTree || !t.withInTree
		if plugin && inTree {
			continue
		}
		if len(lines) == limit {
			lines = append(lines, "...")
			break
		}
		lines = append(lines, describe(t.layout.cluster(i), i, t.latest[i], plugin, inTree))
	}
	return lines
}

// describe says what a Workspace shows, for the controllers that are not done with it.
func describe(cluster logicalcluster.Name, i int, ws *tenancyv1alpha1.Workspace, pluginDone, inTreeDone bool) string {
	line := fmt.Sprintf("%s|%s:", cluster, mountName(i))
	if ws == nil {
		return line + " never seen"
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
// that feeds t, until ctx is done, and waits until it has listed once. cfg is
// the shard-base config: wildcard requests need the shard admin.
func watchWorkspaces(ctx context.Context, cfg *rest.Config, t *tracker) error {
	identity, err := clients.TenancyIdentity(ctx, cfg)
	if err != nil {
		return err
	}
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
	syncCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		return fmt.Errorf("the Workspace informer did not sync within %s", readyTimeout)
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
