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
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/share"
)

// fullWorkspace is a mounted Workspace as kcp serves it, with what the cache drops.
func fullWorkspace() *tenancyv1alpha1.Workspace {
	mountRef := &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "v1", Kind: "K", Name: "n"}}
	return &tenancyv1alpha1.Workspace{
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
}

func TestTrimForCache(t *testing.T) {
	t.Parallel()
	ws := fullWorkspace()
	mountRef := ws.Spec.Mount
	obj, err := TrimForCache(mount.Rule{LegacyAnnotation: true})(ws)
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

	// Without --legacy-mount-annotation nothing reads the legacy annotation: not kept.
	legacy := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"kcp.io/cluster": "c1", mount.LegacyAnnotationKey: strings.Repeat("x", 1<<16), mount.PhaseAnnotationKey: "NotFound",
	}}}
	obj, err = TrimForCache(mount.Rule{})(legacy)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"kcp.io/cluster": "c1", mount.PhaseAnnotationKey: "NotFound"}, obj.(*tenancyv1alpha1.Workspace).Annotations)

	unmounted := &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "c3", URL: "https://shard.example/clusters/c3"}}
	obj, err = TrimForCache(mount.Rule{})(unmounted)
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
	obj, err := TrimForCache(mount.Rule{})(lc)
	require.NoError(t, err)
	require.Equal(t, &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{
		Name: corev1alpha1.LogicalClusterName, ResourceVersion: "3",
		Annotations: map[string]string{"kcp.io/cluster": "c1", "kcp.io/path": "root:org"},
	}}, obj)

	root := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{"kcp.io/cluster": "root"}}}
	obj, err = TrimForCache(mount.Rule{})(root)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"kcp.io/cluster": "root"}, obj.(*corev1alpha1.LogicalCluster).Annotations, "no path: none made up")
}

// TestTrimForCacheShares: Workspaces alike share their label map and the
// strings that come in few values; what differs does not, and a label set
// of its own stays one.
func TestTrimForCacheShares(t *testing.T) {
	t.Parallel()
	decoded := func(name, cluster string, labels map[string]string) *tenancyv1alpha1.Workspace {
		// Strings of their own, as a decoder makes them.
		own := func(s string) string { return string([]byte(s)) }
		copied := map[string]string{}
		for k, v := range labels {
			copied[own(k)] = own(v)
		}
		return &tenancyv1alpha1.Workspace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: copied, Annotations: map[string]string{
				own("kcp.io/cluster"): own(cluster), own(mount.PhaseAnnotationKey): own("Ready"),
			}},
			Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
				APIVersion: own("contrib.kcp.io/v1alpha1"), Kind: own("KubeCluster"), Name: own(name),
			}}},
			Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseType(own("Ready"))},
		}
	}
	trim := func(ws *tenancyv1alpha1.Workspace) *tenancyv1alpha1.Workspace {
		obj, err := TrimForCache(mount.Rule{})(ws)
		require.NoError(t, err)
		return obj.(*tenancyv1alpha1.Workspace)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	phase := map[string]string{"tenancy.kcp.io/phase": "Ready"}
	a := trim(decoded("a", "c1", phase))
	b := trim(decoded("b", "c1", phase))
	require.Equal(t, phase, a.Labels)
	require.Equal(t, reflect.ValueOf(a.Labels).Pointer(), reflect.ValueOf(b.Labels).Pointer(), "one label map")
	require.True(t, same(a.Annotations["kcp.io/cluster"], b.Annotations["kcp.io/cluster"]), "one cluster name")
	require.True(t, same(a.Annotations[mount.PhaseAnnotationKey], b.Annotations[mount.PhaseAnnotationKey]))
	require.True(t, same(string(a.Status.Phase), string(b.Status.Phase)))
	require.True(t, same(a.Spec.Mount.Reference.Kind, b.Spec.Mount.Reference.Kind))
	require.True(t, same(a.Spec.Mount.Reference.APIVersion, b.Spec.Mount.Reference.APIVersion))
	require.False(t, same(a.Spec.Mount.Reference.Name, b.Spec.Mount.Reference.Name), "names are not shared")

	other := trim(decoded("c", "c2", map[string]string{"tenancy.kcp.io/phase": "Ready", "team": "x"}))
	require.Equal(t, map[string]string{"tenancy.kcp.io/phase": "Ready", "team": "x"}, other.Labels)
	require.NotEqual(t, reflect.ValueOf(a.Labels).Pointer(), reflect.ValueOf(other.Labels).Pointer())
	require.Equal(t, "c2", other.Annotations["kcp.io/cluster"])

	many := map[string]string{}
	for i := range share.MaxMapLen + 1 {
		many[fmt.Sprint("l", i)] = "v"
	}
	first, second := trim(decoded("d", "c1", many)), trim(decoded("e", "c1", many))
	require.Equal(t, many, first.Labels)
	require.NotEqual(t, reflect.ValueOf(first.Labels).Pointer(), reflect.ValueOf(second.Labels).Pointer(), "large label sets are not looked up")
}

// TestSharingLongValues: a phase annotation written in a loop with 100 KB
// values is the Workspace's own, not kept.
func TestSharingLongValues(t *testing.T) {
	t.Parallel()
	s := share.New()
	long := strings.Repeat("x", 100<<10)
	for i := range 10 {
		ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mount.PhaseAnnotationKey: fmt.Sprint(i, long)}}}
		shareAlike(s, ws)
		require.Equal(t, fmt.Sprint(i, long), ws.Annotations[mount.PhaseAnnotationKey])
	}
	require.Less(t, s.Bytes(), 1<<10, "the table keeps the short values only")
}

// TestTrimForCacheBoundsLabels: the informers keep of a Workspace's labels
// what mount.BoundedLabels keeps, and count the others.
func TestTrimForCacheBoundsLabels(t *testing.T) {
	t.Parallel()
	labels := map[string]string{}
	for i := range 1500 {
		labels[fmt.Sprintf("k%04d", i)] = "v"
	}
	obj, err := TrimForCache(mount.Rule{})(&tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "many", Labels: labels}})
	require.NoError(t, err)
	ws := obj.(*tenancyv1alpha1.Workspace)
	require.Len(t, ws.Labels, mount.MaxLabels)
	require.Equal(t, "v", ws.Labels["k0063"])
	require.Equal(t, "1436", ws.Annotations[mount.LabelsCutAnnotationKey])
}
