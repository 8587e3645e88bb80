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

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// gateDelay is the plugin's --workspace-condition-delay: long enough to see
// the delayed condition, short for the suite.
const gateDelay = 3 * time.Second

// TestWorkspaceConditionGate: with --max-unavailable=1 and
// --workspace-condition-delay, two mounts turning not ready give, once the
// delay is over, one Workspace False (kcp: Unavailable) and one Unknown
// with reason GateHeld (kcp: Ready, the gauge counting it); when the False
// one recovers, the held one takes its slot and turns False, without its
// own mount changing. Level 3 (--workspace-url), so that a mounted
// Workspace is Ready in kcp while its mount is, and kcp's own condition
// WorkspaceMountReady follows the gate. Its own kcp (kcp's in-tree mounts
// controller off, as level 3 needs), as the other tests of the condition:
// the shared kcp's plugin runs at level 1 and removes the condition.
func TestWorkspaceConditionGate(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newCondEnv(t, "")
	cfg := e.kcp.BaseConfigT(t, "base")

	org := framework.UniqueName("wsgate")
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	source := framework.RootPath.Join(org)
	e.installDemoCRD(t, source)
	p := e.startPlugin(t, "gate", "--workspace-condition", "--workspace-url", "--max-unavailable=1",
		"--workspace-condition-delay="+gateDelay.String())

	ready := func(name string) map[string]interface{} {
		return map[string]interface{}{"phase": "Ready", "URL": "https://mounts.example.com/clusters/" + name}
	}
	connecting := func(name string) map[string]interface{} {
		return map[string]interface{}{"phase": "Connecting", "URL": "https://mounts.example.com/clusters/" + name}
	}
	for _, name := range []string{"a", "b"} {
		e.c.createMountObject(t, source, kubeClusters, name, ready(name))
		e.c.createMountedWorkspace(t, source, name, kubeClusters.ref(name))
	}
	readyWant := condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue}
	falseWant := condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse, reason: mount.ReasonMountNotReady,
		severity: conditionsv1alpha1.ConditionSeverityInfo, inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason}
	gatedWant := func(reason string) condWant {
		return condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionUnknown, reason: reason,
			inTree: corev1.ConditionUnknown, inTreeReason: reason}
	}
	e.waitWorkspace(t, source, "a", readyWant)
	e.waitWorkspace(t, source, "b", readyWant)

	t.Logf("a turns Connecting: %s, kcp keeps it Ready, then False once not ready for %s", mount.ReasonGateDelayed, gateDelay)
	e.c.setMountStatus(t, source, kubeClusters, "a", connecting("a"))
	e.waitWorkspace(t, source, "a", gatedWant(mount.ReasonGateDelayed))
	e.waitWorkspace(t, source, "a", falseWant)

	t.Logf("b turns Connecting: after the delay %s (--max-unavailable=1 is taken by a), kcp keeps it Ready", mount.ReasonGateHeld)
	e.c.setMountStatus(t, source, kubeClusters, "b", connecting("b"))
	e.waitWorkspace(t, source, "b", gatedWant(mount.ReasonGateDelayed))
	e.waitWorkspace(t, source, "b", gatedWant(mount.ReasonGateHeld))
	e.waitWorkspace(t, source, "a", falseWant)
	waitGateHeld(t, p, 1)

	t.Log("a is Ready again: b takes its slot and turns False (kcp: Unavailable), its mount unchanged")
	e.c.setMountStatus(t, source, kubeClusters, "a", ready("a"))
	e.waitWorkspace(t, source, "a", readyWant)
	e.waitWorkspace(t, source, "b", falseWant)
	waitGateHeld(t, p, 0)
	t.Logf("TestWorkspaceConditionGate took %s", time.Since(began).Round(time.Millisecond))
}

// waitGateHeld waits until p's workspacemounts_gate_held_workspaces is want.
func waitGateHeld(t *testing.T, p *framework.Plugin, want float64) {
	t.Helper()
	opWaitMetrics(t, p, fmt.Sprintf("workspacemounts_gate_held_workspaces == %v", want), convergeTimeout, func(m framework.Metrics) (bool, string) {
		v, found := m.Sum("workspacemounts_gate_held_workspaces", nil)
		return found && v == want, fmt.Sprintf("workspacemounts_gate_held_workspaces is %v (found %t)", v, found)
	})
}
