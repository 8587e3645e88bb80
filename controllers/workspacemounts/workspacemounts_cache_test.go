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
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// maxTrimmedJSON bounds the JSON of a trimmed Workspace whose name,
// cluster annotation and timestamps kcp validated: whatever else a
// tenant writes.
const maxTrimmedJSON = 48 << 10

// manyLabels are n labels of 70 bytes.
func manyLabels(n int) map[string]string {
	labels := make(map[string]string, n)
	for i := range n {
		labels[fmt.Sprintf("team.tenant.example.io/label-%04d", i)] = fmt.Sprintf("value-%04d-abcdefghijklmnopqrstuvwxyz", i)
	}
	return labels
}

// checkTrimmed fails unless trimmed is what TrimWorkspace may keep of ws:
// within every bound, labels a subset of ws' kept in key order and
// counted, its own and kcp's mount conditions kept, the same phase by kcp's
// rule, unchanged by a second trim.
func checkTrimmed(t *testing.T, ws, trimmed *tenancyv1alpha1.Workspace, rule mount.Rule) {
	t.Helper()
	size := 0
	for k, v := range trimmed.Labels {
		if ws.Labels[k] != v {
			t.Fatalf("label %q=%q kept, not the Workspace's %q", k, v, ws.Labels[k])
		}
		size += len(k) + len(v)
	}
	if len(trimmed.Labels) > mount.MaxLabels || size > mount.MaxLabelBytes {
		t.Fatalf("%d labels of %d bytes kept", len(trimmed.Labels), size)
	}
	for k, v := range ws.Labels {
		if _, kept := trimmed.Labels[k]; kept {
			continue
		}
		before, beforeSize := 0, 0
		for kk, vv := range trimmed.Labels {
			if kk < k {
				before++
				beforeSize += len(kk) + len(vv)
			}
		}
		if before < mount.MaxLabels && beforeSize+len(k)+len(v) <= mount.MaxLabelBytes {
			t.Fatalf("label %q not kept, though it fits after the %d kept before it in key order", k, before)
		}
	}
	if cut := len(ws.Labels) - len(trimmed.Labels); cut > 0 && trimmed.Annotations[mount.LabelsCutAnnotationKey] != strconv.Itoa(cut) {
		t.Fatalf("%d labels cut, annotation %q", cut, trimmed.Annotations[mount.LabelsCutAnnotationKey])
	}
	data, err := json.Marshal(trimmed)
	require.NoError(t, err)
	if len(data) > maxTrimmedJSON {
		t.Fatalf("a trimmed Workspace of %d bytes", len(data))
	}
	others := 0
	for _, c := range trimmed.Status.Conditions {
		switch {
		case c.Type == mount.ConditionType || c.Type == tenancyv1alpha1.MountConditionReady:
		case makesUnavailable(c):
			others++
			if len(c.Type) > maxUnavailableType {
				t.Fatalf("a condition type of %d bytes", len(c.Type))
			}
		default:
			t.Fatalf("condition %q kept", c.Type)
		}
	}
	if others > maxUnavailableConditions || len(trimmed.Status.Conditions) > maxUnavailableConditions+2 {
		t.Fatalf("%d conditions kept", len(trimmed.Status.Conditions))
	}
	for _, typ := range []conditionsv1alpha1.ConditionType{mount.ConditionType, tenancyv1alpha1.MountConditionReady} {
		want, got := firstCondition(ws, typ), firstCondition(trimmed, typ)
		if (want == nil) != (got == nil) || want != nil && (want.Status != got.Status || want.LastTransitionTime != got.LastTransitionTime ||
			len(want.Message) <= mount.MaxMessage && want.Message != got.Message || len(want.Reason) <= mount.MaxReason && want.Reason != got.Reason) {
			t.Fatalf("condition %s: %v kept as %v", typ, want, got)
		}
	}
	for _, phase := range []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseReady, corev1alpha1.LogicalClusterPhaseUnavailable} {
		a, b := ws.DeepCopy(), trimmed.DeepCopy()
		a.Status.Phase, b.Status.Phase = phase, phase
		kcpPhaseRule(a)
		kcpPhaseRule(b)
		if a.Status.Phase != b.Status.Phase {
			t.Fatalf("kcp's rule: %s on the Workspace, %s on the trimmed one", a.Status.Phase, b.Status.Phase)
		}
	}
	again := trimmed.DeepCopy()
	TrimWorkspace(again, rule)
	if !equality.Semantic.DeepEqual(again, trimmed) {
		t.Fatalf("a second trim changes the Workspace")
	}
}

func firstCondition(ws *tenancyv1alpha1.Workspace, typ conditionsv1alpha1.ConditionType) *conditionsv1alpha1.Condition {
	for i := range ws.Status.Conditions {
		if ws.Status.Conditions[i].Type == typ {
			return &ws.Status.Conditions[i]
		}
	}
	return nil
}

// TestTrimWorkspaceBoundsWhatATenantWrites: a Workspace with thousands of
// labels, long annotations and reference, and a hundred long False
// Workspace* conditions is kept within bounds, with the labels first in key
// order, the count of the others, its own condition and kcp's rule's answer.
func TestTrimWorkspaceBoundsWhatATenantWrites(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	ws := mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: long})
	ws.Labels = manyLabels(1500)
	ws.Annotations[mount.PhaseAnnotationKey] = long
	ws.Annotations[mount.StatusAnnotationKey] = long
	ws.Annotations[mount.LegacyAnnotationKey] = long
	ws.Annotations["tenant.example.io/other"] = long
	ws.Spec.URL = "https://" + long
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
	ws.Status.Conditions = conditionsv1alpha1.Conditions{
		{Type: mount.ConditionType, Status: corev1.ConditionTrue, Reason: mount.ReasonMountReady, Message: "ready"},
		{Type: mount.ConditionType, Status: corev1.ConditionFalse, Reason: long, Message: long},
		{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue, Reason: long, Message: long, Severity: conditionsv1alpha1.ConditionSeverity(long)},
	}
	for i := range 100 {
		ws.Status.Conditions = append(ws.Status.Conditions, conditionsv1alpha1.Condition{
			Type: conditionsv1alpha1.ConditionType(fmt.Sprintf("WorkspaceTenant%03d%s", i, long[:1000])), Status: corev1.ConditionFalse, Message: long})
	}
	for _, rule := range []mount.Rule{{}, {LegacyAnnotation: true}} {
		trimmed := ws.DeepCopy()
		TrimWorkspace(trimmed, rule)
		checkTrimmed(t, ws, trimmed, rule)
		require.Len(t, trimmed.Labels, 58, "58 labels of 70 bytes fit in 4 KiB")
		require.Contains(t, trimmed.Labels, "team.tenant.example.io/label-0000")
		require.Contains(t, trimmed.Labels, "team.tenant.example.io/label-0057")
		require.Equal(t, "1442", trimmed.Annotations[mount.LabelsCutAnnotationKey])
		require.NotContains(t, trimmed.Annotations, "tenant.example.io/other")
		_, legacy := trimmed.Annotations[mount.LegacyAnnotationKey]
		require.Equal(t, rule.LegacyAnnotation, legacy)
		_, found := mount.StatusOf(trimmed.Annotations)
		require.False(t, found, "a status annotation cut is still none")
		require.Error(t, mount.Reference(trimmed.Spec.Mount.Reference).Validate(), "a reference cut is still invalid")
		require.Len(t, trimmed.Status.Conditions, 2+maxUnavailableConditions)
		require.Equal(t, "ready", trimmed.Status.Conditions[0].Message, "the first of its own conditions, whole")
		require.Equal(t, conditionsv1alpha1.Condition{Type: mount.ConditionType, Status: corev1.ConditionFalse}, trimmed.Status.Conditions[1],
			"a second one counts for kcp's rule")
	}

	few := mountedWorkspace(kubeClusterRef)
	few.Labels = manyLabels(3)
	trimmed := few.DeepCopy()
	TrimWorkspace(trimmed, mount.Rule{})
	require.Equal(t, few.Labels, trimmed.Labels)
	require.NotContains(t, trimmed.Annotations, mount.LabelsCutAnnotationKey)
}

// TestProcessWorkspaceWithLabelsCut: the controller writes a Workspace
// whose labels the cache cut as any other: its patches never name a label
// or the count of those cut, a steady state writes nothing, and a tenant's
// False Workspace* condition still makes it Unavailable by kcp's rule.
func TestProcessWorkspaceWithLabelsCut(t *testing.T) {
	t.Parallel()
	ws := mountedWorkspace(kubeClusterRef)
	ws.Labels = manyLabels(1500)
	ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, Conditions: append(kcpConditions.DeepCopy(),
		conditionsv1alpha1.Condition{Type: conditionsv1alpha1.ConditionType("WorkspaceTenant" + strings.Repeat("x", 1000)), Status: corev1.ConditionFalse})}
	k := newFakeKCP(ws)
	getMountObject := func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://shard.example/clusters/target"}), nil
	}
	c, indexer := testController(k, RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}, getMountObject)
	ctx := context.Background()
	key := syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 2)
	for _, p := range k.patches {
		metadata, _ := p.patch["metadata"].(map[string]interface{})
		require.NotContains(t, metadata, "labels")
		annotations, _ := metadata["annotations"].(map[string]interface{})
		require.NotContains(t, annotations, mount.LabelsCutAnnotationKey)
	}
	written := k.workspaces["mounted"]
	require.True(t, reflect.DeepEqual(manyLabels(1500), written.Labels), "kcp keeps every label")
	require.NotContains(t, written.Annotations, mount.LabelsCutAnnotationKey)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, written.Status.Phase, "the tenant's False condition, by kcp's rule")

	key = syncCache(t, k, indexer, "mounted")
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 2, "a steady state writes nothing")
}

// FuzzTrimWorkspace: whatever labels and conditions a Workspace has, the
// trimmed one is within bounds, deterministic and idempotent, its labels a
// subset of the Workspace's kept in key order, its own conditions kept and
// kcp's rule answering alike (checkTrimmed).
func FuzzTrimWorkspace(f *testing.F) {
	f.Add([]byte(`{"a":"1","b":"2"}`), uint16(0), uint8(0), "WorkspaceX", "False", "message")
	f.Add([]byte(`{}`), uint16(1500), uint8(100), "WorkspaceMountAvailable", "False", strings.Repeat("m", 3000))
	f.Add([]byte(`{"zz":"`+strings.Repeat("v", 5000)+`"}`), uint16(70), uint8(3), "WorkspaceMountReady", "True", "")
	f.Add([]byte(`{"tenancy.kcp.io/phase":"Ready"}`), uint16(63), uint8(9), "Workspace\xff\xfe"+strings.Repeat("é", 100), "False", "")
	f.Fuzz(func(t *testing.T, labelsJSON []byte, moreLabels uint16, conditions uint8, conditionType, conditionStatus, message string) {
		labels := map[string]string{}
		if err := json.Unmarshal(labelsJSON, &labels); err != nil {
			labels = map[string]string{}
		}
		for i := range int(moreLabels) % 3000 {
			labels[fmt.Sprintf("%s/%d", conditionType, i)] = message[:min(len(message), i%70)]
		}
		ws := mountedWorkspace(kubeClusterRef)
		ws.Labels = labels
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
		for i := range int(conditions) {
			typ := conditionType
			if i%3 == 1 {
				typ += strconv.Itoa(i)
			}
			status := corev1.ConditionStatus(conditionStatus)
			if i%2 == 1 {
				status = corev1.ConditionFalse
			}
			ws.Status.Conditions = append(ws.Status.Conditions, conditionsv1alpha1.Condition{
				Type: conditionsv1alpha1.ConditionType(typ), Status: status, Reason: message, Message: message})
		}
		a, b := ws.DeepCopy(), ws.DeepCopy()
		TrimWorkspace(a, mount.Rule{})
		TrimWorkspace(b, mount.Rule{})
		if !equality.Semantic.DeepEqual(a, b) {
			t.Fatalf("two trims of one Workspace differ")
		}
		checkTrimmed(t, ws, a, mount.Rule{})
	})
}
