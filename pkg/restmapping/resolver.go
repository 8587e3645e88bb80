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

// Package restmapping maps the kind a mount reference names to the resource that serves it in a
// logical cluster, from informer caches (docs/design/pkg-restmapping.md).
package restmapping

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
)

// The indexes [AddIndexers] installs.
const (
	CRDsByClusterGroupKind  = "restmapping-crds-by-cluster-group-kind"
	APIBindingsByCluster    = "restmapping-apibindings-by-cluster"
	APIResourceSchemasByUID = "restmapping-apiresourceschemas-by-uid"
)

// ErrKindNotServed is wrapped when no CRD or binding serves a kind in a cluster.
var ErrKindNotServed = errors.New("kind not served")

// BoundCRDsCluster holds, on every shard, a CRD per APIResourceSchema bound there.
const BoundCRDsCluster = logicalcluster.Name("system:bound-crds")

// Resource is where a kind is served in one cluster; Identity is a bound kind's APIExport identity.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Identity   string
	Namespaced bool
}

// WildcardResource is the resource to list and watch across all clusters.
func (r Resource) WildcardResource() schema.GroupVersionResource {
	gvr := r.GroupVersionResource
	if r.Identity != "" {
		gvr.Resource += ":" + r.Identity
	}
	return gvr
}

// Key identifies the resource across clusters, as one informer serves it.
func (r Resource) Key() string {
	key := r.Resource + "." + r.Version + "." + r.Group
	if r.Identity != "" {
		key += ":" + r.Identity
	}
	return key
}

type Resolver struct {
	crds       cache.Indexer
	bindings   cache.Indexer
	apiSchemas cache.Indexer
}

func NewResolver(crds, bindings, apiSchemas cache.Indexer) *Resolver {
	return &Resolver{crds: crds, bindings: bindings, apiSchemas: apiSchemas}
}

// Resolve returns the resource that serves gvk in cluster, or an error wrapping [ErrKindNotServed].
func (r *Resolver) Resolve(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (Resource, error) {
	if res, found, err := r.fromCRDs(cluster, gvk); err != nil || found {
		return res, err
	}
	if res, found, err := r.fromBindings(cluster, gvk); err != nil || found {
		return res, err
	}
	return Resource{}, fmt.Errorf("%w: no established CRD or bound APIBinding serves %s in %s in cluster %s",
		ErrKindNotServed, gvk.Kind, gvk.GroupVersion(), cluster)
}

func (r *Resolver) fromCRDs(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (Resource, bool, error) {
	objs, err := r.crds.ByIndex(CRDsByClusterGroupKind, clusterGroupKindKey(cluster, gvk.Group, gvk.Kind))
	if err != nil {
		return Resource{}, false, err
	}
	for _, obj := range objs {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if ok && apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) && apihelpers.HasServedCRDVersion(crd, gvk.Version) {
			return Resource{
				GroupVersionResource: gvk.GroupVersion().WithResource(crd.Spec.Names.Plural),
				Kind:                 gvk.Kind,
				Namespaced:           crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			}, true, nil
		}
	}
	return Resource{}, false, nil
}

func (r *Resolver) fromBindings(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (Resource, bool, error) {
	objs, err := r.bindings.ByIndex(APIBindingsByCluster, cluster.String())
	if err != nil {
		return Resource{}, false, err
	}
	for _, obj := range objs {
		binding, ok := obj.(*apisv1alpha1.APIBinding)
		if !ok || binding.Status.Phase != apisv1alpha1.APIBindingPhaseBound {
			continue
		}
		for _, bound := range binding.Status.BoundResources {
			if bound.Group != gvk.Group {
				continue
			}
			kind, scope, served, found, err := r.boundSchema(bound.Schema.UID, gvk.Version)
			if err != nil || !found || kind != gvk.Kind || !served {
				continue // a schema cached after its binding re-resolves when it arrives
			}
			return Resource{
				GroupVersionResource: gvk.GroupVersion().WithResource(bound.Resource),
				Kind:                 gvk.Kind,
				Identity:             bound.Schema.IdentityHash,
				Namespaced:           scope == apiextensionsv1.NamespaceScoped,
			}, true, nil
		}
	}
	return Resource{}, false, nil
}

// boundSchema reads the bound schema uid from the APIResourceSchema, else from its bound CRD.
func (r *Resolver) boundSchema(uid, version string) (kind string, scope apiextensionsv1.ResourceScope, served, found bool, err error) {
	apiSchema, err := r.schemaByUID(uid)
	if err != nil {
		return "", "", false, false, err
	}
	if apiSchema != nil {
		served = slices.ContainsFunc(apiSchema.Spec.Versions, func(v apisv1alpha1.APIResourceVersion) bool { return v.Name == version && v.Served })
		return apiSchema.Spec.Names.Kind, apiSchema.Spec.Scope, served, true, nil
	}
	obj, exists, err := r.crds.GetByKey(kcpcache.ToClusterAwareKey(BoundCRDsCluster.String(), "", uid))
	if err != nil || !exists {
		return "", "", false, false, err
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return "", "", false, false, nil
	}
	return crd.Spec.Names.Kind, crd.Spec.Scope, apihelpers.HasServedCRDVersion(crd, version), true, nil
}

func (r *Resolver) schemaByUID(uid string) (*apisv1alpha1.APIResourceSchema, error) {
	objs, err := r.apiSchemas.ByIndex(APIResourceSchemasByUID, uid)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	apiSchema, _ := objs[0].(*apisv1alpha1.APIResourceSchema)
	return apiSchema, nil
}

func clusterGroupKindKey(cluster logicalcluster.Name, group, kind string) string {
	return cluster.String() + "|" + group + "|" + kind
}

// AddIndexers installs the resolver's indexes before the informers start.
func AddIndexers(crds, bindings, apiSchemas cache.SharedIndexInformer) error {
	return errors.Join(crds.AddIndexers(cache.Indexers{CRDsByClusterGroupKind: indexCRDByClusterGroupKind}),
		bindings.AddIndexers(cache.Indexers{APIBindingsByCluster: kcpcache.ClusterIndexFunc}),
		apiSchemas.AddIndexers(cache.Indexers{APIResourceSchemasByUID: indexByUID}))
}

func indexCRDByClusterGroupKind(obj interface{}) ([]string, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, nil
	}
	return []string{clusterGroupKindKey(logicalcluster.From(crd), crd.Spec.Group, crd.Spec.Names.Kind)}, nil
}

func indexByUID(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil //nolint:nilerr // an object without metadata is simply not indexed
	}
	return []string{string(m.GetUID())}, nil
}

// TrimForResolver is an informer transform that keeps only what the resolver reads.
func TrimForResolver(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		trimCRD(o)
	case *apisv1alpha1.APIResourceSchema:
		for i := range o.Spec.Versions {
			o.Spec.Versions[i].Schema.Raw = nil
			o.Spec.Versions[i].Schema.Object = nil
		}
	}
	return obj, nil
}

func trimCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	annotations := map[string]string{}
	if cluster, found := crd.Annotations[logicalcluster.AnnotationKey]; found {
		annotations[logicalcluster.AnnotationKey] = cluster
	}
	crd.Annotations = annotations
	crd.Labels, crd.OwnerReferences, crd.Finalizers, crd.ManagedFields = nil, nil, nil, nil
	versions := make([]apiextensionsv1.CustomResourceDefinitionVersion, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage})
	}
	crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{Group: crd.Spec.Group, Names: crd.Spec.Names, Scope: crd.Spec.Scope, Versions: versions}
	var conditions []apiextensionsv1.CustomResourceDefinitionCondition
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			conditions = append(conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c.Type, Status: c.Status})
		}
	}
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{Conditions: conditions}
}
