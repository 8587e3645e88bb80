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
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// admissionWindow is how long the writes of a Workspace whose write kcp
// refuses are counted.
const admissionWindow = 60 * time.Second

// TestMountURLEmulatedAdmission emulates kcp v0.33's admission of
// spec.URL in the e2e kcp (v0.28.1, which has none), with a
// ValidatingAdmissionPolicy on the Workspaces of one workspace, and shows
// (a) that the plugin at level 3 never attempts a write it refuses, with
// mount URLs of every form kcp refuses: kcp denies none of its writes;
// (b) that a write it refuses all the same (the policy also refuses
// policyRefusedHost, a public host the plugin accepts) is reported on the
// Workspace (MountURLInvalid with kcp's message, the previous spec.URL
// kept, out of traffic) and not retried hot: at most refusalBound(window)
// tries in the window, while the other Workspaces keep converging; and
// that the Workspace converges once its mount's URL is one kcp accepts
// again.
func TestMountURLEmulatedAdmission(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := sharedURLEnv(t)
	org, cluster := e.newOrg(t, "urladmission")
	goodURL := func(name string) string { return "https://mounts.example.com/clusters/" + name }

	forms := make([]string, len(refusedMountURLs))
	for i := range refusedMountURLs {
		forms[i] = fmt.Sprintf("form-%c", 'a'+i)
	}
	names := append([]string{"refused", "other"}, forms...)
	t.Logf("%d Workspaces in %s, each mounting a KubeCluster Ready at an https URL: routed there", len(names), org)
	for _, name := range names {
		e.mounted(t, org, name, goodURL(name))
	}
	for _, name := range names {
		e.waitWorkspace(t, org, name, routedWant(goodURL(name)))
	}

	policy := framework.UniqueName("kcp-v0-33-mount-url")
	t.Logf("the ValidatingAdmissionPolicy %s in %s (logical cluster %s): a change of spec.URL must be to an https URL with a host, "+
		"no user information, query or fragment, and not at %s", policy, org, cluster, policyRefusedHost)
	e.installMountURLPolicy(t, org, cluster, policy)
	e.waitPolicyEnforced(t, org, "other")

	t.Log("(a) each form-* mount turns Ready at a URL of a form kcp refuses: the plugin writes no spec.URL, kcp denies nothing")
	before := e.refusedWrites(t, policy)
	for i, refused := range refusedMountURLs {
		t.Logf("%s: Ready at %q", forms[i], refused.url)
		e.c.setMountStatus(t, org, kubeClusters, forms[i], map[string]interface{}{"phase": "Ready", "URL": refused.url})
	}
	pending := e.pollMounts(org, forms, func(i int) mountState { return urlMountState(refusedMountURLs[i].url, refusedMountURLs[i].reason) })
	refused := e.refusedWrites(t, policy).minus(before)
	t.Logf("(a) the plugin's writes refused by kcp's admission: %s", refused)
	require.Zero(t, refused.denied, "the plugin attempted writes kcp's newer admission refuses (by kcp's count)")
	require.Zero(t, refused.unprocessable, "the plugin's patches answered 422")
	require.Empty(t, pending, "the status annotations of the form-* Workspaces")
	for i, name := range forms {
		e.waitWorkspace(t, org, name, condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable,
			status: corev1.ConditionFalse, reason: refusedMountURLs[i].reason, severity: conditionsv1alpha1.ConditionSeverityError,
			inTree: corev1.ConditionFalse, inTreeReason: kcpReasonInvalidURL, url: ptrTo(goodURL(name))})
	}

	refusedURL := "https://" + policyRefusedHost + "/clusters/refused"
	t.Logf("(b) refused turns Ready at %s, which the plugin routes and the policy refuses: counting the plugin's tries for %s", refusedURL, admissionWindow)
	before = e.refusedWrites(t, policy)
	windowBegan := time.Now()
	e.c.setMountStatus(t, org, kubeClusters, "refused", map[string]interface{}{"phase": "Ready", "URL": refusedURL})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		n := e.refusedWrites(t, policy).minus(before).denied
		return n > 0, fmt.Sprintf("%d denials", n)
	}, convergeTimeout, 200*time.Millisecond, "kcp denies the plugin's write of %s", refusedURL)
	refusedWant := condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable,
		status: corev1.ConditionFalse, reason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
		inTree: corev1.ConditionTrue, url: ptrTo(goodURL("refused"))}
	reported := e.waitWorkspace(t, org, "refused", refusedWant)
	t.Logf("(b) refused reports kcp's refusal %s after its mount changed", time.Since(windowBegan).Round(100*time.Millisecond))
	e.requireRefusalOnWorkspace(t, reported, refusedURL)
	e.requireOthersConverge(t, org, "other", goodURL)
	time.Sleep(time.Until(windowBegan.Add(admissionWindow)))
	refused = e.refusedWrites(t, policy).minus(before)
	window := time.Since(windowBegan)
	bound := refusalBound(window)
	t.Logf("(b) the plugin's writes of refused in %s: %s; its recheck of a refused spec.URL (%s) allows at most %d",
		window.Round(100*time.Millisecond), refused, workspacemounts.URLRefusalRecheck, bound)
	require.LessOrEqual(t, refused.denied, bound, "the plugin tries a refused spec.URL again before its recheck")
	require.Equal(t, refused.denied, refused.unprocessable, "the plugin's 422s are kcp's denials")
	require.Equal(t, refused.denied, refused.failed, "the plugin counts each refused write as a failed patch")
	require.Equal(t, goodURL("refused"), e.specURL(t, org, "refused"), "spec.URL of refused")
	e.requireRefusalReported(t, org, cluster, "refused", policy)
	e.requireRefusalOnWorkspace(t, e.waitWorkspace(t, org, "refused", refusedWant), refusedURL)

	t.Log("refused's mount turns Ready at an https URL the policy accepts: it converges, and kcp denies nothing more")
	e.c.setMountStatus(t, org, kubeClusters, "refused", map[string]interface{}{"phase": "Ready", "URL": goodURL("refused-2")})
	e.waitWorkspace(t, org, "refused", routedWant(goodURL("refused-2")))
	e.c.waitForMount(t, org, "refused", urlMountState(goodURL("refused-2"), mount.ReasonMountReady))
	settled := e.refusedWrites(t, policy)
	time.Sleep(condSteadyFor)
	require.Equal(t, settled.denied, e.refusedWrites(t, policy).denied, "kcp denied writes after refused converged")
	require.NoError(t, e.plugin.CheckRunning())
	t.Logf("TestMountURLEmulatedAdmission took %s (the shared kcp's start included if this test started it)", time.Since(began).Round(time.Second))
}

// requireOthersConverge requires that Workspace name of cluster follows
// its mount while another Workspace's write is being refused: to another
// https URL, Connecting, and Ready again.
func (e *urlEnv) requireOthersConverge(t *testing.T, cluster logicalcluster.Path, name string, goodURL func(string) string) {
	t.Helper()
	began := time.Now()
	moved := goodURL(name + "-2")
	e.c.setMountStatus(t, cluster, kubeClusters, name, map[string]interface{}{"phase": "Ready", "URL": moved})
	e.waitWorkspace(t, cluster, name, routedWant(moved))
	e.c.setMountStatus(t, cluster, kubeClusters, name, map[string]interface{}{"phase": "Connecting", "URL": moved})
	e.waitWorkspace(t, cluster, name, condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable,
		status: corev1.ConditionFalse, reason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
		inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason, url: &moved})
	e.c.setMountStatus(t, cluster, kubeClusters, name, map[string]interface{}{"phase": "Ready", "URL": moved})
	e.waitWorkspace(t, cluster, name, routedWant(moved))
	t.Logf("%s converged three times in %s meanwhile", cluster.Join(name), time.Since(began).Round(100*time.Millisecond))
}

// requireRefusalReported requires that the plugin's log names the refused
// write of Workspace name, with kcp's reason, and logs what the Workspace
// shows of it.
func (e *urlEnv) requireRefusalReported(t *testing.T, cluster logicalcluster.Path, clusterName logicalcluster.Name, name, policy string) {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(condLogLines(t, e.plugin, policy), "\n") {
		if strings.Contains(line, clusterName.String()+"|"+name) {
			lines = append(lines, line)
		}
	}
	require.NotEmpty(t, lines, "the plugin's log names the refused write of %s with the policy %s", cluster.Join(name), policy)
	t.Logf("the plugin's log has %d lines of it, the first: %s", len(lines), lines[0])
	ws, err := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	status, _ := mount.StatusOf(ws.Annotations)
	t.Logf("what %s shows meanwhile: phase %s, spec.URL %q, status annotation %s/%s url %q, %s", cluster.Join(name), ws.Status.Phase,
		ws.Spec.URL, status.Phase, status.Reason, status.URL, conditionsSummary(ws))
}

// requireRefusalOnWorkspace requires that the status annotation of ws
// reports kcp's refusal of spec.URL refusedURL, with the emulated
// admission's message.
func (e *urlEnv) requireRefusalOnWorkspace(t *testing.T, ws *tenancyv1alpha1.Workspace, refusedURL string) {
	t.Helper()
	status, found := mount.StatusOf(ws.Annotations)
	require.True(t, found, "the status annotation of %s", ws.Name)
	require.Equal(t, mountState{phase: mount.PhaseReady, reason: mount.ReasonMountURLInvalid, url: refusedURL},
		mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL})
	require.Contains(t, status.Message, fmt.Sprintf("kcp refused spec.URL %q: ", refusedURL))
	require.Contains(t, status.Message, "is refused by the emulated admission of kcp v0.33", "kcp's message")
	require.Equal(t, status.Message, condition(ws, condType).Message, "the condition's message")
	t.Logf("%s: %s", ws.Name, status.Message)
}

// pollMounts waits up to convergeTimeout until the status annotation of
// each Workspace names[i] of cluster is want(i), and returns what still
// differs, "" when none does.
func (e *urlEnv) pollMounts(cluster logicalcluster.Path, names []string, want func(i int) mountState) string {
	deadline := time.Now().Add(convergeTimeout)
	for {
		var pending []string
		for i, name := range names {
			ws, err := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				pending = append(pending, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			status, _ := mount.StatusOf(ws.Annotations)
			if got := (mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}); got != want(i) {
				pending = append(pending, fmt.Sprintf("%s: got %s, want %s", name, got, want(i)))
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) {
			return strings.Join(pending, "; ")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// conditionsSummary lists the conditions of ws as type=status (reason).
func conditionsSummary(ws *tenancyv1alpha1.Workspace) string {
	parts := make([]string, 0, len(ws.Status.Conditions))
	for _, c := range ws.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, ", ")
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
