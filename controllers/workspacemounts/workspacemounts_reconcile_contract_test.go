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

package workspacemounts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// TestReconcileKCPContractAtLevel3: at level 3 every row of kcp v0.33's
// TestWorkspaceSpecUpdater and TestWorkspaceStatusUpdater
// (workspacemounts_reconcile_updater_test.go @3f4358ca), whatever form
// --mount-url-contract chose for levels 1 and 2: a refused URL is never
// copied into spec.URL, the previous one stays, kcp's condition is False
// with MountObjectInvalidURL, and a Ready Workspace goes Unavailable.
func TestReconcileKCPContractAtLevel3(t *testing.T) {
	t.Parallel()
	const previous = "https://previous.example.com/clusters/root:dest"
	ready := func(phase corev1alpha1.LogicalClusterPhaseType) *tenancyv1alpha1.Workspace {
		ws := mountedWorkspace(kubeClusterRef)
		ws.Spec.URL = previous
		ws.Status.Phase = phase
		conditions.MarkTrue(ws, tenancyv1alpha1.MountConditionReady)
		return ws
	}
	for _, tc := range []struct {
		name      string
		url       *string // nil: no status.URL
		phase     corev1alpha1.LogicalClusterPhaseType
		wantURL   string
		wantKCP   corev1.ConditionStatus
		wantWhy   string // in kcp's False condition's message, and the plugin's
		reason    string // the status annotation's
		wantPhase corev1alpha1.LogicalClusterPhaseType
	}{
		{"kcp: accepts an https URL", ptrTo("https://new.example.com/clusters/root:dest"), corev1alpha1.LogicalClusterPhaseReady,
			"https://new.example.com/clusters/root:dest", corev1.ConditionTrue, "", mount.ReasonMountReady, corev1alpha1.LogicalClusterPhaseReady},
		{"kcp: rejects http", ptrTo("http://attacker.example.com"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "it is http, not https", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"kcp: rejects user information", ptrTo("https://user:token@attacker.example.com"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "it carries user information", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"kcp: rejects a query", ptrTo("https://attacker.example.com/?x=y"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "it carries a query", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"kcp: rejects a bare host", ptrTo("attacker.example.com"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "not an absolute https URL", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"kcp: rejects the empty URL", ptrTo(""), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "no status.URL", mount.ReasonMountURLMissing, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"no status.URL at all", nil, corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "no status.URL", mount.ReasonMountURLMissing, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"an empty fragment", ptrTo("https://new.example.com/#"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "it carries a fragment", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"an empty query", ptrTo("https://new.example.com?"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionFalse, "it carries a query", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"kcp: http keeps a Scheduling Workspace out of Ready", ptrTo("http://attacker.example.com"), corev1alpha1.LogicalClusterPhaseScheduling,
			previous, corev1.ConditionFalse, "it is http, not https", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		// The plugin's host rules: kcp has none, its condition stays True;
		// the plugin's own takes the Workspace out of traffic.
		{"a loopback host: the plugin's refusal, not kcp's", ptrTo("https://127.0.0.1:6443/clusters/root"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionTrue, "loopback host", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
		{"ip6-localhost: the plugin's refusal, not kcp's", ptrTo("https://ip6-localhost:443/"), corev1alpha1.LogicalClusterPhaseReady,
			previous, corev1.ConditionTrue, "loopback host", mount.ReasonMountURLInvalid, corev1alpha1.LogicalClusterPhaseUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status := map[string]interface{}{"phase": "Ready"}
			if tc.url != nil {
				status["URL"] = *tc.url
			}
			r := &workspacesReconciler{
				rule: mount.Rule{}, resolve: servedEverywhere, getMountObject: returns(mountObject(status), nil),
				informerDenied: neverDenied, maxMountInformers: mount.DefaultMaxMountInformers,
				routing: RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true, URLs: mount.URLRule{Form: mount.URLFormLegacy}},
				now:     time.Now,
			}
			ws := ready(tc.phase)
			require.NoError(t, r.reconcile(context.Background(), ws))
			require.Equal(t, tc.wantURL, ws.Spec.URL, "spec.URL takes the https form alone, and is never cleared")
			require.Equal(t, tc.wantPhase, ws.Status.Phase)
			got, _ := mount.StatusOf(ws.Annotations)
			require.Equal(t, tc.reason, got.Reason)
			require.Contains(t, got.Message, tc.wantWhy)
			kcp := conditions.Get(ws, tenancyv1alpha1.MountConditionReady)
			require.NotNil(t, kcp)
			require.Equal(t, tc.wantKCP, kcp.Status)
			if tc.wantKCP == corev1.ConditionTrue {
				return
			}
			require.Equal(t, kcpMountObjectInvalidURLReason, kcp.Reason)
			require.Equal(t, conditionsv1alpha1.ConditionSeverityError, kcp.Severity)
			require.Contains(t, kcp.Message, tc.wantWhy)
			require.Contains(t, kcp.Message, `KubeCluster "proxy"`)
		})
	}
}

// TestReconcileURLFormAtLevels1And2: without --workspace-url the form
// --mount-url-contract chose decides: an http URL is routable in the
// legacy form (kcp v0.27 to v0.32 route it), MountURLInvalid in the https
// one; kcp's condition is not the plugin's to keep.
func TestReconcileURLFormAtLevels1And2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		form       mount.URLForm
		url        string
		reason     string
		wantStatus corev1.ConditionStatus
		wantWhy    string
	}{
		{mount.URLFormLegacy, "http://proxy.example.com/clusters/a", mount.ReasonMountReady, corev1.ConditionTrue, "is ready at"},
		{mount.URLFormLegacy, "https://proxy.example.com/?x=y", mount.ReasonMountReady, corev1.ConditionTrue, "is ready at"},
		{mount.URLFormLegacy, "https://u:p@proxy.example.com/", mount.ReasonMountURLInvalid, corev1.ConditionFalse, "it carries user information"},
		{mount.URLFormHTTPS, "http://proxy.example.com/clusters/a", mount.ReasonMountURLInvalid, corev1.ConditionFalse, `"http://proxy.example.com/clusters/a" is not routable: it is http, not https`},
		{mount.URLFormHTTPS, "https://proxy.example.com/#x", mount.ReasonMountURLInvalid, corev1.ConditionFalse, "it carries a fragment"},
		{mount.URLFormHTTPS, "https://127.0.0.1/", mount.ReasonMountReady, corev1.ConditionTrue, "is ready at"},
		{"", "http://proxy.example.com/", mount.ReasonMountURLInvalid, corev1.ConditionFalse, "it is http, not https"},
	} {
		t.Run(string(tc.form)+" "+tc.url, func(t *testing.T) {
			t.Parallel()
			r := &workspacesReconciler{
				rule: mount.Rule{}, resolve: servedEverywhere,
				getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready", "URL": tc.url}), nil),
				informerDenied: neverDenied, maxMountInformers: mount.DefaultMaxMountInformers,
				routing: RoutingOptions{WorkspaceCondition: true, URLs: mount.URLRule{Form: tc.form}},
				now:     time.Now,
			}
			ws := mountedWorkspace(kubeClusterRef)
			ws.Spec.URL = "https://kept.example.com/"
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
			require.NoError(t, r.reconcile(context.Background(), ws))
			got, _ := mount.StatusOf(ws.Annotations)
			require.Equal(t, tc.reason, got.Reason)
			require.Contains(t, got.Message, tc.wantWhy)
			require.Equal(t, tc.wantStatus, ownCondition(ws).Status)
			require.Equal(t, "https://kept.example.com/", ws.Spec.URL, "levels 1 and 2 never write spec.URL")
			require.Nil(t, conditions.Get(ws, tenancyv1alpha1.MountConditionReady))
		})
	}
}
