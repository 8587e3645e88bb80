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

// Package restmapping maps a kind, as a Workspace's mount reference names it,
// to the resource that serves it in one logical cluster, from informer caches
// of CustomResourceDefinitions, APIBindings and APIResourceSchemas across all
// clusters: no discovery call per lookup, and a kind that becomes served later
// is found as soon as the caches see the CRD or the binding.
//
// A kind provided by an APIBinding is also tagged with its APIExport's identity
// hash, which kcp requires to list that resource across clusters. Its kind,
// scope and versions come from the bound APIResourceSchema, which lives in
// the export's cluster: on a sharded kcp that may be on another shard (kcp's
// shards read it from the cache server), so the resolver falls back to the
// CRD kcp keeps for it on the binding's shard (BoundCRDsCluster).
package restmapping

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
)

// Index names the resolver needs on its informers; AddIndexers installs them.
const (
	// CRDsByClusterGroupKind indexes CRDs by cluster|group|kind.
	CRDsByClusterGroupKind = "restmapping-crds-by-cluster-group-kind"
	// APIBindingsByCluster indexes APIBindings by their logical cluster.
	APIBindingsByCluster = "restmapping-apibindings-by-cluster"
	// APIResourceSchemasByUID indexes APIResourceSchemas by UID, the link a
	// binding's status.boundResources[].schema.UID gives.
	APIResourceSchemasByUID = "restmapping-apiresourceschemas-by-uid"
)

// ErrKindNotServed is returned (wrapped) when no CRD or binding serves a kind in a cluster.
var ErrKindNotServed = errors.New("kind not served")

// BoundCRDsCluster is the logical cluster in which kcp keeps, on every
// shard, a CRD for each APIResourceSchema bound there, named by the schema's
// UID (kcp's apibinding controller, boundCRDName). It is on the binding's
// shard even when the schema is not.
const BoundCRDsCluster = logicalcluster.Name("system:bound-crds")

// Resource is where a kind is served in one cluster.
type Resource struct {
	schema.GroupVersionResource
	// Kind is the kind the resource serves.
	Kind string
	// Identity is the APIExport identity hash for a kind bound from an
	// APIExport, empty for a CRD.
	Identity string
	// Namespaced tells whether objects of the kind live in namespaces.
	Namespaced bool
}

// WildcardResource is the GroupVersionResource to list and watch across all
// clusters: kcp serves a bound resource there only under resource:identity.
func (r Resource) WildcardResource() schema.GroupVersionResource {
	gvr := r.GroupVersionResource
	if r.Identity != "" {
		gvr.Resource += ":" + r.Identity
	}
	return gvr
}

// Key identifies the resource across clusters: resource.version.group, with
// :identity for a bound one. Two clusters share a key when the same informer
// serves both.
func (r Resource) Key() string {
	key := r.Resource + "." + r.Version + "." + r.Group
	if r.Identity != "" {
		key += ":" + r.Identity
	}
	return key
}

// Resolver answers from three informers' indexers.
type Resolver struct {
	crds       cache.Indexer
	bindings   cache.Indexer
	apiSchemas cache.Indexer
}

// NewResolver returns a resolver over indexers that carry the indexes AddIndexers installs.
func NewResolver(crds, bindings, apiSchemas cache.Indexer) *Resolver {
	return &Resolver{crds: crds, bindings: bindings, apiSchemas: apiSchemas}
}

// Resolve returns the resource that serves gvk in cluster, or an error
// wrapping ErrKindNotServed. A CRD wins over a binding; kcp lets only one of
// them serve a group and resource in a cluster anyway.
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
		if !ok || !isEstablished(crd) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == gvk.Version && v.Served {
				return Resource{
					GroupVersionResource: gvk.GroupVersion().WithResource(crd.Spec.Names.Plural),
					Kind:                 gvk.Kind,
					Namespaced:           crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
				}, true, nil
			}
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
			if err != nil || !found {
				// The schema (or its bound CRD) may reach our cache after
				// the binding does: its arrival re-resolves.
				continue
			}
			if kind != gvk.Kind || !served {
				continue
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

// boundSchema returns the kind and scope of the bound schema uid and
// whether it serves version: from the APIResourceSchema when it is cached
// (on the binding's shard), else from its bound CRD in BoundCRDsCluster.
func (r *Resolver) boundSchema(uid, version string) (kind string, scope apiextensionsv1.ResourceScope, served, found bool, err error) {
	apiSchema, err := r.schemaByUID(uid)
	if err != nil {
		return "", "", false, false, err
	}
	if apiSchema != nil {
		return apiSchema.Spec.Names.Kind, apiSchema.Spec.Scope, servesVersion(apiSchema, version), true, nil
	}
	obj, exists, err := r.crds.GetByKey(kcpcache.ToClusterAwareKey(BoundCRDsCluster.String(), "", uid))
	if err != nil || !exists {
		return "", "", false, false, err
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return "", "", false, false, nil
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			served = true
		}
	}
	return crd.Spec.Names.Kind, crd.Spec.Scope, served, true, nil
}

func (r *Resolver) schemaByUID(uid string) (*apisv1alpha1.APIResourceSchema, error) {
	objs, err := r.apiSchemas.ByIndex(APIResourceSchemasByUID, uid)
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	apiSchema, _ := objs[0].(*apisv1alpha1.APIResourceSchema)
	return apiSchema, nil
}

func servesVersion(apiSchema *apisv1alpha1.APIResourceSchema, version string) bool {
	for _, v := range apiSchema.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func clusterGroupKindKey(cluster logicalcluster.Name, group, kind string) string {
	return cluster.String() + "|" + group + "|" + kind
}

// AddIndexers installs the resolver's indexes on the three informers; call it
// before they start.
func AddIndexers(crds, bindings, apiSchemas cache.SharedIndexInformer) error {
	if err := crds.AddIndexers(cache.Indexers{CRDsByClusterGroupKind: indexCRDByClusterGroupKind}); err != nil {
		return err
	}
	if err := bindings.AddIndexers(cache.Indexers{APIBindingsByCluster: kcpcache.ClusterIndexFunc}); err != nil {
		return err
	}
	return apiSchemas.AddIndexers(cache.Indexers{APIResourceSchemasByUID: indexByUID})
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

// TrimForResolver is an informer transform that keeps of CRDs and
// APIResourceSchemas what the resolver reads: a CRD's cluster, group,
// names, scope, each version's name and whether it is served, and whether it
// is Established (trimCRD); an APIResourceSchema without its versions'
// OpenAPI schemas. The rest can be large: schemas, a conversion webhook's CA
// bundle, and, for a CRD applied with kubectl, the whole CRD again in an
// annotation. Anything else is returned as it is.
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

// trimCRD keeps of a CRD what the resolver reads (TrimForResolver).
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
