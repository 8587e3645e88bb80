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

package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func TestTrimForCache(t *testing.T) {
	t.Parallel()
	mountRef := &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "v1", Kind: "K", Name: "n"}}
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ws", UID: "uid", ResourceVersion: "7", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{
				"kcp.io/cluster": "c1", mount.LegacyAnnotationKey: "{}", mount.PhaseAnnotationKey: "Ready", mount.StatusAnnotationKey: "{}",
				"tenancy.kcp.io/owner": `{"username":"someone","groups":["a","b"]}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Finalizers:    []string{"core.kcp.io/logicalcluster"},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Mount: mountRef, Cluster: "c2", URL: "https://x",
			Type: &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"},
		},
		Status: tenancyv1alpha1.WorkspaceStatus{
			Phase: "Ready",
			Conditions: conditionsv1alpha1.Conditions{
				{Type: "WorkspaceScheduled", Status: "True", Message: "a long message"},
				{Type: mount.ConditionType, Status: "False", Reason: mount.ReasonMountNotReady, Message: "the mount is Connecting"},
				{Type: "WorkspaceInitialized", Status: "False", Reason: "InitializerExists", Message: "a long message"},
				{Type: "Ready", Status: "False", Reason: "NotReady"},
			},
		},
	}
	obj, err := TrimForCache(ws)
	require.NoError(t, err)
	trimmed, ok := obj.(*tenancyv1alpha1.Workspace)
	require.True(t, ok)
	require.Equal(t, &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ws", UID: "uid", ResourceVersion: "7", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{
				"kcp.io/cluster": "c1", mount.LegacyAnnotationKey: "{}", mount.PhaseAnnotationKey: "Ready", mount.StatusAnnotationKey: "{}",
			},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: mountRef, Cluster: "c2", URL: "https://x"},
		Status: tenancyv1alpha1.WorkspaceStatus{
			Phase: "Ready",
			Conditions: conditionsv1alpha1.Conditions{
				{Type: mount.ConditionType, Status: "False", Reason: mount.ReasonMountNotReady, Message: "the mount is Connecting"},
				{Type: "WorkspaceInitialized", Status: "False"}, // what kcp's phase rule reads
			},
		},
	}, trimmed, "what the controller, the virtual workspace and the metrics read, nothing else")

	unmounted := &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "c3", URL: "https://shard.example/clusters/c3"}}
	obj, err = TrimForCache(unmounted)
	require.NoError(t, err)
	require.Equal(t, tenancyv1alpha1.WorkspaceSpec{Cluster: "c3"}, obj.(*tenancyv1alpha1.Workspace).Spec, "the URL of a Workspace without spec.mount is kcp's alone")
}

// TestTrimLogicalCluster: a LogicalCluster keeps only what the virtual
// workspace reads: that it exists, and its path.
func TestTrimLogicalCluster(t *testing.T) {
	t.Parallel()
	lc := &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: corev1alpha1.LogicalClusterName, ResourceVersion: "3",
			Annotations: map[string]string{"kcp.io/cluster": "c1", "kcp.io/path": "root:org", "tenancy.kcp.io/owner": "{}"},
			Labels:      map[string]string{"a": "b"},
			Finalizers:  []string{"f"},
		},
		Spec:   corev1alpha1.LogicalClusterSpec{Owner: &corev1alpha1.LogicalClusterOwner{Name: "org"}},
		Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseReady},
	}
	obj, err := TrimForCache(lc)
	require.NoError(t, err)
	require.Equal(t, &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{
		Name: corev1alpha1.LogicalClusterName, ResourceVersion: "3",
		Annotations: map[string]string{"kcp.io/cluster": "c1", "kcp.io/path": "root:org"},
	}}, obj)

	root := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{"kcp.io/cluster": "root"}}}
	obj, err = TrimForCache(root)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"kcp.io/cluster": "root"}, obj.(*corev1alpha1.LogicalCluster).Annotations, "no path: none made up")
}
