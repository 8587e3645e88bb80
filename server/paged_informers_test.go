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
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/pagedlist"
)

// TestPagedListTrimsAsAWatch: an object listed through [pagedlist.Trimmed]
// and trimmed again by the informer is the object a watch event gives the
// cache, trimmed once: a first list, a relist and a watch keep the same fields.
func TestPagedListTrimsAsAWatch(t *testing.T) {
	t.Parallel()
	annotated := metav1.ObjectMeta{
		Name: "x", ResourceVersion: "3", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"},
		Annotations:   map[string]string{"kcp.io/cluster": "c1", "kcp.io/path": "root:org", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
	schema := runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object"}}}`)}
	for name, list := range map[string]runtime.Object{
		"workspaces": &tenancyv1alpha1.WorkspaceList{Items: []tenancyv1alpha1.Workspace{*fullWorkspace(), *fullWorkspace()}},
		"logical clusters": &corev1alpha1.LogicalClusterList{Items: []corev1alpha1.LogicalCluster{{
			ObjectMeta: annotated, Spec: corev1alpha1.LogicalClusterSpec{Owner: &corev1alpha1.LogicalClusterOwner{Name: "org"}},
		}}},
		"CRDs": &apiextensionsv1.CustomResourceDefinitionList{Items: []apiextensionsv1.CustomResourceDefinition{{
			ObjectMeta: annotated,
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "g", Scope: apiextensionsv1.ClusterScoped, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
			}},
		}}},
		"schemas": &apisv1alpha1.APIResourceSchemaList{Items: []apisv1alpha1.APIResourceSchema{{
			ObjectMeta: annotated, Spec: apisv1alpha1.APIResourceSchemaSpec{Group: "g", Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1", Schema: schema}}},
		}}},
		"bindings": &apisv1alpha1.APIBindingList{Items: []apisv1alpha1.APIBinding{{ObjectMeta: annotated}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rule := mount.Rule{LegacyAnnotation: true}
			watched, err := meta.ExtractList(list.DeepCopyObject())
			require.NoError(t, err)
			lw := &cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil }}
			listed, err := pagedlist.Trimmed(lw, TrimForCache(rule)).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
			require.NoError(t, err)
			items, err := meta.ExtractList(listed)
			require.NoError(t, err)
			require.Len(t, items, len(watched))
			for i := range items {
				cached, err := TrimForCache(rule)(items[i])
				require.NoError(t, err)
				once, err := TrimForCache(rule)(watched[i])
				require.NoError(t, err)
				require.Equal(t, once, cached)
				require.NotEqual(t, watched[i], list, "the list was trimmed") // sanity: the source keeps its full objects
			}
		})
	}
}
