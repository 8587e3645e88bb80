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
	"errors"
	"maps"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// mountsReconciler is the logic of workspacemounts-mounts.
type mountsReconciler struct {
	workspacesOfKind func(key string) ([]*tenancyv1alpha1.Workspace, error)
	resolve          func(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error)
	enqueueWorkspace func(ws *tenancyv1alpha1.Workspace)
	enqueueKind      func(key string)
	syncInformers    func(ctx context.Context, wanted []restmapping.Resource) (denied map[string]bool)
	// syncClusterInformers makes the running full-object informers of CRD resources in one cluster those of the pairs
	// given, as far as its limit allows, and returns the pairs left without one; nil runs none.
	syncClusterInformers func(ctx context.Context, wanted []clusterResource) (uncovered []clusterResource)
	runInformers         func(ctx context.Context, needed map[string]bool)

	lock  sync.Mutex
	kinds map[string]kindResolution
	// served are the keys of kinds whose resolution has a resource: the only ones informers are for.
	served map[string]bool
}

// kindResolution is what a kind resolved to at its last reconcile.
type kindResolution struct {
	// byCluster is the resource key per cluster, "" where the kind is not served.
	byCluster map[logicalcluster.Name]string
	// workspaces is how many Workspaces mount the kind per cluster.
	workspaces map[logicalcluster.Name]int
	resources  map[string]restmapping.Resource
	// denied are the keys of its resources left without an informer.
	denied map[string]bool
}

func (r *mountsReconciler) reconcile(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	gvk, ok := parseKindKey(key)
	if !ok {
		logger.Error(nil, "dropping malformed kind key")
		return nil
	}
	workspaces, err := r.workspacesOfKind(key)
	if err != nil {
		return err
	}

	current := kindResolution{byCluster: map[logicalcluster.Name]string{}, workspaces: map[logicalcluster.Name]int{}, resources: map[string]restmapping.Resource{}}
	for _, ws := range workspaces {
		cluster := logicalcluster.From(ws)
		current.workspaces[cluster]++
		if _, done := current.byCluster[cluster]; done {
			continue
		}
		resource, err := r.resolve(cluster, gvk)
		switch {
		case errors.Is(err, restmapping.ErrKindNotServed):
			current.byCluster[cluster] = ""
		case err != nil:
			return err
		default:
			current.byCluster[cluster] = resource.Key()
			current.resources[resource.Key()] = resource
		}
	}

	r.lock.Lock()
	if r.served == nil {
		r.served = map[string]bool{}
	}
	previous, known := r.kinds[key]
	delete(r.kinds, key)
	delete(r.served, key)
	if len(workspaces) > 0 {
		r.kinds[key] = current
		if len(current.resources) > 0 {
			r.served[key] = true
		}
	}
	wanted := r.wantedResourcesLocked()
	r.lock.Unlock()

	// Informers first, so that a Workspace sent to workspacemounts-workspaces below is already covered by the informer
	// that will report its mount object's changes: the resources watched, the informers of their pairs, then the
	// informers across all clusters.
	denied := r.syncInformers(ctx, wanted)

	current.denied = deniedOf(current.resources, denied)
	var others []string
	r.lock.Lock()
	if len(workspaces) > 0 {
		r.kinds[key] = current
	}
	for other := range r.served {
		if resolution := r.kinds[other]; other != key && !maps.Equal(resolution.denied, deniedOf(resolution.resources, denied)) {
			others = append(others, other)
		}
	}
	pairs := r.wantedClusterResourcesLocked(denied)
	r.lock.Unlock()
	uncovered := pairs
	if r.syncClusterInformers != nil {
		uncovered = r.syncClusterInformers(ctx, pairs)
	}
	r.runInformers(ctx, informersAcrossClusters(wanted, denied, uncovered))
	for _, other := range others {
		r.enqueueKind(other)
	}

	for _, ws := range workspaces {
		resourceKey := current.byCluster[logicalcluster.From(ws)]
		if !known || previous.byCluster[logicalcluster.From(ws)] != resourceKey || previous.denied[resourceKey] != current.denied[resourceKey] {
			r.enqueueWorkspace(ws)
		}
	}
	logger.V(4).Info("resolved mount kind", "workspaces", len(workspaces), "clusters", len(current.byCluster), "resources", len(current.resources), "denied", len(current.denied))
	return nil
}

// deniedOf is the part of denied among resources.
func deniedOf(resources map[string]restmapping.Resource, denied map[string]bool) map[string]bool {
	out := map[string]bool{}
	for key := range resources {
		if denied[key] {
			out[key] = true
		}
	}
	return out
}

// enqueueWorkspacesUsing sends to workspacemounts-workspaces every Workspace whose kind resolved to the resource
// resourceKey at its last reconcile, in cluster, or in every cluster for "".
func (r *mountsReconciler) enqueueWorkspacesUsing(resourceKey string, cluster logicalcluster.Name) {
	r.lock.Lock()
	clustersOfKind := map[string]map[logicalcluster.Name]bool{}
	for served := range r.served {
		for c, key := range r.kinds[served].byCluster {
			if key != resourceKey || cluster != "" && c != cluster {
				continue
			}
			if clustersOfKind[served] == nil {
				clustersOfKind[served] = map[logicalcluster.Name]bool{}
			}
			clustersOfKind[served][c] = true
		}
	}
	r.lock.Unlock()
	for kind, clusters := range clustersOfKind {
		workspaces, err := r.workspacesOfKind(kind)
		if err != nil {
			utilruntime.HandleError(err)
			continue
		}
		for _, ws := range workspaces {
			if clusters[logicalcluster.From(ws)] {
				r.enqueueWorkspace(ws)
			}
		}
	}
}

// wantedClusterResourcesLocked is every (CRD resource, cluster) pair in use whose resource is watched (not denied),
// with how many Workspaces mount it there.
func (r *mountsReconciler) wantedClusterResourcesLocked(denied map[string]bool) []clusterResource {
	var pairs []clusterResource
	for served := range r.served {
		kind := r.kinds[served]
		for cluster, resourceKey := range kind.byCluster {
			resource, found := kind.resources[resourceKey]
			if resourceKey == "" || !found || resource.Identity != "" || denied[resourceKey] {
				continue
			}
			pairs = append(pairs, clusterResource{cluster: cluster, resource: resource, workspaces: kind.workspaces[cluster]})
		}
	}
	return pairs
}

// wantedResourcesLocked is the union of the resources all kinds need, those referenced from the most clusters first,
// then by key.
func (r *mountsReconciler) wantedResourcesLocked() []restmapping.Resource {
	clusters := map[string]int{}
	resources := map[string]restmapping.Resource{}
	for served := range r.served {
		kind := r.kinds[served]
		for _, resourceKey := range kind.byCluster {
			if resourceKey != "" {
				clusters[resourceKey]++
			}
		}
		for key, resource := range kind.resources {
			resources[key] = resource
		}
	}
	wanted := make([]restmapping.Resource, 0, len(resources))
	for _, resource := range resources {
		wanted = append(wanted, resource)
	}
	sort.Slice(wanted, func(i, j int) bool {
		ki, kj := wanted[i].Key(), wanted[j].Key()
		if clusters[ki] != clusters[kj] {
			return clusters[ki] > clusters[kj]
		}
		return ki < kj
	})
	return wanted
}
