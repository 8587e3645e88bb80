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

package restmapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
)

func objectMeta(cluster, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, UID: types.UID(uid), Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}
}

func crd(cluster string, established bool, scope apiextensionsv1.ResourceScope, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: objectMeta(cluster, "kubeclusters.contrib.kcp.io", cluster+"-crd"),
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "contrib.kcp.io", Scope: scope, Versions: versions,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", Plural: "kubeclusters"},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: status},
		}},
	}
}

// boundCRD is the CRD kcp keeps in system:bound-crds for the bound
// APIResourceSchema uid: named by the UID, not established-checked.
func boundCRD(uid string, scope apiextensionsv1.ResourceScope, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	c := crd(BoundCRDsCluster.String(), false, scope, versions...)
	c.Name, c.UID = uid, types.UID(uid+"-crd")
	return c
}

func binding(cluster string, phase apisv1alpha1.APIBindingPhaseType, schemaUID string) *apisv1alpha1.APIBinding {
	return &apisv1alpha1.APIBinding{
		ObjectMeta: objectMeta(cluster, "kubeclusters", cluster+"-binding"),
		Status: apisv1alpha1.APIBindingStatus{Phase: phase, BoundResources: []apisv1alpha1.BoundAPIResource{{
			Group: "contrib.kcp.io", Resource: "kubeclusters",
			Schema: apisv1alpha1.BoundAPIResourceSchema{Name: "v1.kubeclusters.contrib.kcp.io", UID: schemaUID, IdentityHash: "hash"},
		}}},
	}
}

func apiResourceSchema(uid string, scope apiextensionsv1.ResourceScope) *apisv1alpha1.APIResourceSchema {
	return &apisv1alpha1.APIResourceSchema{
		ObjectMeta: objectMeta("provider", "v1.kubeclusters.contrib.kcp.io", uid),
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "contrib.kcp.io", Scope: scope,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", Plural: "kubeclusters"},
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1alpha1", Served: true, Schema: runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}}},
		},
	}
}

func indexer(t *testing.T, index string, indexFunc cache.IndexFunc, objs ...interface{}) cache.Indexer {
	t.Helper()
	i := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{index: indexFunc})
	for _, obj := range objs {
		require.NoError(t, i.Add(obj))
	}
	return i
}

func TestResolve(t *testing.T) {
	t.Parallel()
	gvk := schema.GroupVersionKind{Group: "contrib.kcp.io", Version: "v1alpha1", Kind: "KubeCluster"}
	served := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: true}
	gvr := gvk.GroupVersion().WithResource("kubeclusters")

	crds := []interface{}{
		crd("crd-cluster", true, apiextensionsv1.ClusterScoped, served),
		crd("namespaced-crd", true, apiextensionsv1.NamespaceScoped, served),
		crd("not-established", false, apiextensionsv1.ClusterScoped, served),
		crd("other-version", true, apiextensionsv1.ClusterScoped, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}),
		crd("not-served", true, apiextensionsv1.ClusterScoped, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: false}),
		boundCRD("remote-uid", apiextensionsv1.NamespaceScoped, served),
		boundCRD("remote-other-version-uid", apiextensionsv1.ClusterScoped, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}),
	}
	bindings := []interface{}{
		binding("bound", apisv1alpha1.APIBindingPhaseBound, "schema-uid"),
		binding("binding", apisv1alpha1.APIBindingPhaseBinding, "schema-uid"),
		binding("schema-not-cached", apisv1alpha1.APIBindingPhaseBound, "unknown-uid"),
		// Bound from an export on another shard: the schema is not cached,
		// its bound CRD is.
		binding("bound-across-shards", apisv1alpha1.APIBindingPhaseBound, "remote-uid"),
		binding("bound-across-shards-other-version", apisv1alpha1.APIBindingPhaseBound, "remote-other-version-uid"),
	}
	r := NewResolver(
		indexer(t, CRDsByClusterGroupKind, indexCRDByClusterGroupKind, crds...),
		indexer(t, APIBindingsByCluster, kcpcache.ClusterIndexFunc, bindings...),
		indexer(t, APIResourceSchemasByUID, indexByUID, apiResourceSchema("schema-uid", apiextensionsv1.ClusterScoped)),
	)

	for _, tc := range []struct {
		cluster string
		want    Resource
		wantErr bool
	}{
		{cluster: "crd-cluster", want: Resource{GroupVersionResource: gvr, Kind: "KubeCluster"}},
		{cluster: "namespaced-crd", want: Resource{GroupVersionResource: gvr, Kind: "KubeCluster", Namespaced: true}},
		{cluster: "bound", want: Resource{GroupVersionResource: gvr, Kind: "KubeCluster", Identity: "hash"}},
		{cluster: "not-established", wantErr: true},
		{cluster: "other-version", wantErr: true},
		{cluster: "not-served", wantErr: true},
		{cluster: "binding", wantErr: true},
		{cluster: "schema-not-cached", wantErr: true},
		{cluster: "bound-across-shards", want: Resource{GroupVersionResource: gvr, Kind: "KubeCluster", Identity: "hash", Namespaced: true}},
		{cluster: "bound-across-shards-other-version", wantErr: true},
		{cluster: "nothing-here", wantErr: true},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			t.Parallel()
			got, err := r.Resolve(logicalcluster.Name(tc.cluster), gvk)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrKindNotServed)
				require.Contains(t, err.Error(), tc.cluster)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestResourceKeys(t *testing.T) {
	t.Parallel()
	r := Resource{GroupVersionResource: schema.GroupVersionResource{Group: "contrib.kcp.io", Version: "v1alpha1", Resource: "kubeclusters"}}
	require.Equal(t, "kubeclusters.v1alpha1.contrib.kcp.io", r.Key())
	require.Equal(t, "kubeclusters", r.WildcardResource().Resource)
	r.Identity = "abc"
	require.Equal(t, "kubeclusters.v1alpha1.contrib.kcp.io:abc", r.Key())
	require.Equal(t, "kubeclusters:abc", r.WildcardResource().Resource)
}

func TestTrimForResolver(t *testing.T) {
	t.Parallel()
	s := apiResourceSchema("u", apiextensionsv1.ClusterScoped)
	_, err := TrimForResolver(s)
	require.NoError(t, err)
	require.Nil(t, s.Spec.Versions[0].Schema.Raw)
	require.Equal(t, "KubeCluster", s.Spec.Names.Kind, "what the resolver reads stays")
}

// TestTrimForResolverCRD: a CRD keeps what the resolver reads, and nothing it does
// not: no schema, no last-applied copy of itself, no conversion webhook.
func TestTrimForResolverCRD(t *testing.T) {
	t.Parallel()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kubeclusters.contrib.kcp.io", UID: "uid", ResourceVersion: "5",
			Annotations: map[string]string{
				"kcp.io/cluster": "c1", "kubectl.kubernetes.io/last-applied-configuration": `{"spec":{"versions":[{"schema":{}}]}}`,
			},
			Labels:        map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "contrib.kcp.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", ListKind: "KubeClusterList", Plural: "kubeclusters", Singular: "kubecluster"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{
					Name: "v1alpha1", Served: true, Storage: true,
					Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
					Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Phase", Type: "string", JSONPath: ".status.phase"}},
				},
				{Name: "v1alpha0", Served: false},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte("a large CA bundle")}, ConversionReviewVersions: []string{"v1"},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Message: "no conflicts found"},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
			},
			AcceptedNames:  apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", Plural: "kubeclusters"},
			StoredVersions: []string{"v1alpha1"},
		},
	}
	obj, err := TrimForResolver(crd)
	require.NoError(t, err)
	require.Equal(t, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeclusters.contrib.kcp.io", UID: "uid", ResourceVersion: "5", Annotations: map[string]string{"kcp.io/cluster": "c1"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "contrib.kcp.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", ListKind: "KubeClusterList", Plural: "kubeclusters", Singular: "kubecluster"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: true},
				{Name: "v1alpha0", Served: false},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}},
	}, obj)
}
