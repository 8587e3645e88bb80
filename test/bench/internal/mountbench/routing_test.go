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
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
)

// routedWorkspace is the Workspace of mount object i in testLayout with
// the given spec.URL, phase, resourceVersion and conditions.
func routedWorkspace(i int, url string, phase corev1alpha1.LogicalClusterPhaseType, rv string, conds ...conditionsv1alpha1.Condition) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name: mountName(i), ResourceVersion: rv,
			Annotations: map[string]string{logicalcluster.AnnotationKey: testLayout.cluster(i).String()},
		},
		Spec:   tenancyv1alpha1.WorkspaceSpec{URL: url},
		Status: tenancyv1alpha1.WorkspaceStatus{Phase: phase, Conditions: conds},
	}
}

func condition(t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus) conditionsv1alpha1.Condition {
	return conditionsv1alpha1.Condition{Type: t, Status: status}
}

func TestRoutingShows(t *testing.T) {
	t.Parallel()
	pluginOwn, inTreeOwn := ownWritesShow(mountAvailableCondition), ownWritesShow(tenancyv1alpha1.MountConditionReady)
	const (
		scheduling  = corev1alpha1.LogicalClusterPhaseScheduling
		ready       = corev1alpha1.LogicalClusterPhaseReady
		unavailable = corev1alpha1.LogicalClusterPhaseUnavailable
	)
	pluginFalse, pluginTrue := condition(mountAvailableCondition, corev1.ConditionFalse), condition(mountAvailableCondition, corev1.ConditionTrue)
	inTreeFalse := condition(tenancyv1alpha1.MountConditionReady, corev1.ConditionFalse)
	for _, tc := range []struct {
		name                      string
		stage                     stage
		ws                        *tenancyv1alpha1.Workspace
		routed, pluginOwn, inTree bool
	}{
		{"initial, nothing written yet", routingInitialStage, routedWorkspace(1, "", scheduling, "1"), false, false, false},
		{"initial, URL without the condition", routingInitialStage, routedWorkspace(1, beforeURL(1), scheduling, "1"), false, false, false},
		{"initial, the plugin's condition, still Scheduling", routingInitialStage, routedWorkspace(1, beforeURL(1), scheduling, "1", pluginFalse), false, true, false},
		{"initial, the in-tree condition, Unavailable", routingInitialStage, routedWorkspace(1, beforeURL(1), unavailable, "1", inTreeFalse), true, false, true},
		{"initial, but Ready", routingInitialStage, routedWorkspace(1, beforeURL(1), ready, "1", pluginFalse, inTreeFalse), false, true, true},
		{"initial, another Workspace's URL", routingInitialStage, routedWorkspace(1, beforeURL(2), unavailable, "1", pluginFalse, inTreeFalse), false, false, false},
		{"flipped, old URL", routingFlippedStage, routedWorkspace(1, beforeURL(1), ready, "1", pluginTrue), false, false, false},
		{"flipped, new URL and condition, not Ready yet", routingFlippedStage, routedWorkspace(1, afterURL(1), unavailable, "1", pluginTrue), false, true, false},
		{"flipped, Ready whatever the conditions", routingFlippedStage, routedWorkspace(1, afterURL(1), ready, "1", pluginFalse), true, false, false},
		{"flipped back, still Ready", routingFlippedBackStage, routedWorkspace(1, afterURL(1), ready, "1", pluginFalse), false, true, false},
		{"flipped back", routingFlippedBackStage, routedWorkspace(1, afterURL(1), unavailable, "1", inTreeFalse), true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.routed, routingShows(tc.stage, tc.ws, 1), "routed")
			require.Equal(t, tc.pluginOwn, pluginOwn(tc.stage, tc.ws, 1), "the plugin's own writes")
			require.Equal(t, tc.inTree, inTreeOwn(tc.stage, tc.ws, 1), "the in-tree controller's own writes")
		})
	}
}

func TestTrackerCountsWrites(t *testing.T) {
	t.Parallel()
	tr := newTrackerOf(testLayout, routingFlippedStage, routingShows, nil)
	tr.ownShows = ownWritesShow(mountAvailableCondition)
	tr.observe(routedWorkspace(0, beforeURL(0), corev1alpha1.LogicalClusterPhaseUnavailable, "1"))
	tr.observe(routedWorkspace(1, beforeURL(1), corev1alpha1.LogicalClusterPhaseUnavailable, "1"))
	tr.begin(routingFlippedStage)
	writes, phaseChanges := tr.writesSeen()
	require.Zero(t, writes, "the first sight of a Workspace is no write")
	require.Zero(t, phaseChanges)

	tr.observe(routedWorkspace(0, afterURL(0), corev1alpha1.LogicalClusterPhaseUnavailable, "2"))
	tr.observe(routedWorkspace(0, afterURL(0), corev1alpha1.LogicalClusterPhaseUnavailable, "2")) // a relist: no write
	tr.observe(routedWorkspace(0, afterURL(0), corev1alpha1.LogicalClusterPhaseReady, "3"))
	tr.observe(routedWorkspace(2, afterURL(2), corev1alpha1.LogicalClusterPhaseReady, "1"))
	writes, phaseChanges = tr.writesSeen()
	require.Equal(t, 2, writes)
	require.Equal(t, 1, phaseChanges)
	plugin, inTree := tr.progress()
	require.Equal(t, 2, plugin)
	require.Zero(t, inTree)
	require.False(t, tr.done(), "mount 1 is not flipped")
	plugin, _ = tr.showingNow()
	require.Equal(t, 2, plugin)

	tr.observe(routedWorkspace(1, afterURL(1), corev1alpha1.LogicalClusterPhaseReady, "2"))
	require.True(t, tr.done(), "the in-tree controller is not measured")
	tr.observe(routedWorkspace(1, afterURL(1), corev1alpha1.LogicalClusterPhaseUnavailable, "3"))
	plugin, _ = tr.showingNow()
	require.Equal(t, 2, plugin, "mount 1 went back to Unavailable")
	require.Empty(t, tr.convergence(time.Now()).own, "no condition was written")
	tr.observe(routedWorkspace(1, afterURL(1), corev1alpha1.LogicalClusterPhaseUnavailable, "4", condition(mountAvailableCondition, corev1.ConditionTrue)))
	require.Len(t, tr.convergence(time.Now()).own, 1)

	tr.begin(routingFlippedBackStage)
	writes, _ = tr.writesSeen()
	require.Zero(t, writes)
	plugin, _ = tr.progress()
	require.Equal(t, 1, plugin, "mount 1 shows the next stage already")
	require.Equal(t, []string{`c0|mount-0: spec.URL="https://after.example/0" phase="Ready" WorkspaceMountReady=none WorkspaceMountAvailable=none`, `c0|mount-2: spec.URL="https://after.example/2" phase="Ready" WorkspaceMountReady=none WorkspaceMountAvailable=none`}, tr.missing(10))
}

func TestParseFlagsMode(t *testing.T) {
	t.Setenv("WORKSPACEMOUNTS_BINARY", "/some/workspacemounts")
	opts, err := parseFlags(Controller, nil)
	require.NoError(t, err)
	require.Equal(t, modeAnnotations, opts.mode)
	require.Equal(t, "/some/workspacemounts", opts.plugin)

	opts, err = parseFlags(Controller, []string{"--mode=routing", "--settle=1s", "--in-tree=false"})
	require.NoError(t, err)
	require.Equal(t, modeRouting, opts.mode)
	require.Equal(t, time.Second, opts.settle)

	for _, args := range [][]string{
		{"--mode=other"},
		{"--watchers=3"},
		{"--list-iterations=3"},
		{"--settle=1s"},
		{"--mode=routing", "--plugin-args=--workspace-url"},
		{"--mode=routing", "--plugin-args=--workspace-condition=false"},
		{"--mode=routing", "--settle=0s"},
	} {
		_, err := parseFlags(Controller, args)
		require.Error(t, err, "%q", args)
	}
}

func TestRoutingResultPrint(t *testing.T) {
	t.Parallel()
	step := func(name string, inTree bool) *routingStep {
		s := &routingStep{name: name, condition: corev1.ConditionTrue, total: 2, written: time.Second, times: []time.Duration{2 * time.Second, 3 * time.Second}, writes: 4, phaseChanges: 2, showing: 2}
		if !inTree {
			s.patches = map[string]map[string]float64{
				annotationPatchesMetric: {"applied": 2, "conflict": 1},
				statusPatchesMetric:     {"applied": 2},
			}
		}
		return s
	}
	r := &routingResult{workspaces: 2, clusters: 1, settle: 10 * time.Second, sides: []*routingSide{
		{name: "in-tree", inTree: true, setUp: setUpTimes{all: time.Minute, mounts: 30 * time.Second}, steps: []*routingStep{step("flip to Ready", true), step("flip back to Connecting", true)}},
		{name: "plugin", setUp: setUpTimes{all: time.Minute, mounts: 30 * time.Second}, steps: []*routingStep{step("flip to Ready", false)}, failed: "flip back to Connecting", missing: []string{"c0|mount-1: ..."}},
	}}
	var out bytes.Buffer
	r.print(&out)
	lines := strings.Split(out.String(), "\n")
	require.Equal(t, strings.Fields("in-tree 2 1 1m0s 2s 3s 3s 4 0 2s 3s 3s 4 0 - -"), strings.Fields(lines[1]))
	require.Equal(t, strings.Fields("plugin 2 1 1m0s 2s 3s 3s 4 1 - - - - - - -"), strings.Fields(lines[2]))
	require.Contains(t, out.String(), "patches (applied/conflict/error): Workspace 2/1/0, status 2/0/0")
	require.Contains(t, out.String(), "plugin, not converged in the flip back to Connecting (- above):\n  c0|mount-1: ...")
}
