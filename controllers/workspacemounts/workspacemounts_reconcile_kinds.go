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
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// kindReconciler is queue 1's logic. For a kind that Workspaces reference it
// resolves, in every cluster it is referenced from, the resource serving it,
// keeps one mount object informer per resource in use, and sends a Workspace
// to queue 2 whenever the resolution in its cluster changes (a CRD or binding
// appearing or going away). Its dependencies are function fields.
type kindReconciler struct {
	workspacesOfKind func(key string) ([]*tenancyv1alpha1.Workspace, error)
	resolve          func(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error)
	enqueueWorkspace func(ws *tenancyv1alpha1.Workspace)
	// syncInformers makes the running mount object informers exactly the wanted ones.
	syncInformers func(ctx context.Context, wanted map[string]restmapping.Resource)

	lock  sync.Mutex
	kinds map[string]kindResolution
}

// kindResolution is what a kind resolved to at its last reconcile.
type kindResolution struct {
	// byCluster is the resource key per cluster, "" where the kind is not served.
	byCluster map[logicalcluster.Name]string
	resources map[string]restmapping.Resource
}

func (r *kindReconciler) reconcile(ctx context.Context, key string) error {
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

	current := kindResolution{byCluster: map[logicalcluster.Name]string{}, resources: map[string]restmapping.Resource{}}
	for _, ws := range workspaces {
		cluster := logicalcluster.From(ws)
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
	previous, known := r.kinds[key]
	if len(workspaces) == 0 {
		delete(r.kinds, key)
	} else {
		r.kinds[key] = current
	}
	wanted := r.wantedResourcesLocked()
	r.lock.Unlock()

	// Informers first, so that a Workspace sent to queue 2 below is already
	// covered by the informer that will report its mount object's changes.
	r.syncInformers(ctx, wanted)

	for _, ws := range workspaces {
		cluster := logicalcluster.From(ws)
		if !known || previous.byCluster[cluster] != current.byCluster[cluster] {
			r.enqueueWorkspace(ws)
		}
	}
	logger.V(4).Info("resolved mount kind", "workspaces", len(workspaces), "clusters", len(current.byCluster), "resources", len(current.resources))
	return nil
}

// wantedResourcesLocked is the union of the resources all kinds need.
func (r *kindReconciler) wantedResourcesLocked() map[string]restmapping.Resource {
	wanted := map[string]restmapping.Resource{}
	for _, kind := range r.kinds {
		for key, resource := range kind.resources {
			wanted[key] = resource
		}
	}
	return wanted
}
