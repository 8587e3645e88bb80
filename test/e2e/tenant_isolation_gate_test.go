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
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestTenantIsolationGate: one tenant cannot hold the shard's
// --max-unavailable budget. With --max-unavailable=2, org A holds 4
// Workspaces naming mount objects that do not exist (never ready: False
// without a slot) and 2 whose mounts served and turn not ready (they take
// both slots, org A being alone); then org B's mount turns not ready: org A
// gives back the slot it took last (that Workspace is held, Unknown
// GateHeld), and org B's Workspace is taken out of traffic: False, kcp
// phase Unavailable, 503 through kcp's proxy. Level 3 on a kcp of the
// test's own, as TestWorkspaceConditionGate.
func TestTenantIsolationGate(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newCondEnv(t, "")
	cfg := e.kcp.BaseConfigT(t, "base")

	orgA, orgB := framework.UniqueName("hostile"), framework.UniqueName("honest")
	framework.CreateWorkspace(t, cfg, framework.RootPath, orgA)
	framework.CreateWorkspace(t, cfg, framework.RootPath, orgB)
	pathA, pathB := framework.RootPath.Join(orgA), framework.RootPath.Join(orgB)
	e.installDemoCRD(t, pathA)
	e.installDemoCRD(t, pathB)
	e.startPlugin(t, "tenant-gate", "--workspace-condition", "--workspace-url", "--max-unavailable=2")

	ready := func(name string) map[string]interface{} {
		return map[string]interface{}{"phase": "Ready", "URL": "https://mounts.example.com/clusters/" + name}
	}
	connecting := func(name string) map[string]interface{} {
		return map[string]interface{}{"phase": "Connecting", "URL": "https://mounts.example.com/clusters/" + name}
	}
	readyWant := condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue}
	falseWant := condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse, reason: mount.ReasonMountNotReady,
		severity: conditionsv1alpha1.ConditionSeverityInfo, inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason}
	heldWant := condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionUnknown, reason: mount.ReasonGateHeld,
		inTree: corev1.ConditionUnknown, inTreeReason: mount.ReasonGateHeld}

	t.Log("org A: 4 Workspaces naming mount objects that do not exist, and 2 serving ones; org B: 1 serving one")
	throwaway := make([]string, 0, 4)
	for i := range 4 {
		name := fmt.Sprintf("throwaway-%d", i)
		throwaway = append(throwaway, name)
		e.c.createMountedWorkspace(t, pathA, name, kubeClusters.ref("missing-"+name))
	}
	for _, name := range []string{"a-1", "a-2"} {
		e.c.createMountObject(t, pathA, kubeClusters, name, ready(name))
		e.c.createMountedWorkspace(t, pathA, name, kubeClusters.ref(name))
	}
	e.c.createMountObject(t, pathB, kubeClusters, "b", ready("b"))
	e.c.createMountedWorkspace(t, pathB, "b", kubeClusters.ref("b"))
	for _, name := range throwaway {
		e.waitSettled(t, pathA, name)
	}
	e.waitWorkspace(t, pathA, "a-1", readyWant)
	e.waitWorkspace(t, pathA, "a-2", readyWant)
	e.waitWorkspace(t, pathB, "b", readyWant)

	t.Log("org A's serving mounts turn not ready, one after the other")
	e.c.setMountStatus(t, pathA, kubeClusters, "a-1", connecting("a-1"))
	e.waitSettled(t, pathA, "a-1")
	e.c.setMountStatus(t, pathA, kubeClusters, "a-2", connecting("a-2"))
	e.waitSettled(t, pathA, "a-2")

	t.Log("org B's mount turns not ready: it is taken out of traffic")
	e.c.setMountStatus(t, pathB, kubeClusters, "b", connecting("b"))
	e.waitWorkspace(t, pathB, "b", falseWant)
	e.waitGet(t, pathB.Join("b"), condWorkspacesPath, http.StatusServiceUnavailable, "")

	t.Log("org A keeps the slot it took first; the one it took last is held (kcp still routes it)")
	e.waitWorkspace(t, pathA, "a-1", falseWant)
	e.waitWorkspace(t, pathA, "a-2", heldWant)
	for _, name := range throwaway {
		ws := e.waitSettled(t, pathA, name)
		c := condition(ws, condType)
		if c.Status != corev1.ConditionFalse || c.Reason != mount.ReasonMountObjectNotFound {
			t.Errorf("workspace %s: %s=%s (%s), want False (%s): a Workspace that never served is out of traffic, without a slot",
				pathA.Join(name), condType, c.Status, c.Reason, mount.ReasonMountObjectNotFound)
		}
	}
	t.Logf("TestTenantIsolationGate took %s", time.Since(began).Round(time.Millisecond))
}

// waitSettled waits until the condition of Workspace name in cluster is
// settled where the gate puts a mount that is not ready: False, or Unknown
// with reason GateHeld; and returns it.
func (e *condEnv) waitSettled(t *testing.T, cluster logicalcluster.Path, name string) *tenancyv1alpha1.Workspace {
	t.Helper()
	var ws *tenancyv1alpha1.Workspace
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		var err error
		ws, err = e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := condition(ws, condType)
		if c == nil {
			return false, "no " + string(condType)
		}
		settled := c.Status == corev1.ConditionFalse || (c.Status == corev1.ConditionUnknown && c.Reason == mount.ReasonGateHeld)
		return settled, fmt.Sprintf("%s=%s (%s: %s)", condType, c.Status, c.Reason, strings.TrimSpace(c.Message))
	}, convergeTimeout, 100*time.Millisecond, "workspace %s settles False or GateHeld", cluster.Join(name))
	c := condition(ws, condType)
	t.Logf("workspace %s: phase %s, %s=%s (%s)", cluster.Join(name), ws.Status.Phase, condType, c.Status, c.Reason)
	return ws
}
