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
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// informerHandler is an event handler the controller adds to a shared informer while it runs.
type informerHandler struct {
	informer cache.SharedIndexInformer
	funcs    cache.ResourceEventHandler
}

// handlerForAll calls f with the object of every add, update and delete, unwrapping delete tombstones.
func handlerForAll(f func(obj interface{})) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: f,
		UpdateFunc: func(oldObj, obj interface{}) {
			if !sameResourceVersion(oldObj, obj) {
				f(obj)
			}
		},
		DeleteFunc: func(obj interface{}) { f(unwrapTombstone(obj)) },
	}
}

// sameResourceVersion tells whether an update is the same version of the object: what a relist reports for every object
// that did not change.
func sameResourceVersion(oldObj, newObj interface{}) bool {
	oldMeta, err := meta.Accessor(oldObj)
	if err != nil {
		return false
	}
	newMeta, err := meta.Accessor(newObj)
	if err != nil {
		return false
	}
	return oldMeta.GetResourceVersion() != "" && oldMeta.GetResourceVersion() == newMeta.GetResourceVersion()
}

func unwrapTombstone(obj interface{}) interface{} {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// handleWorkspace enqueues a Workspace whose mount may need writing, and the kinds it referenced before and after the
// change, whose set of users changed. oldObj is nil on add, newObj on delete.
func (c *Controller) handleWorkspace(oldObj, newObj interface{}) {
	oldWS, _ := unwrapTombstone(oldObj).(*tenancyv1alpha1.Workspace)
	newWS, _ := newObj.(*tenancyv1alpha1.Workspace)
	c.mountObjects.Update(oldWS, newWS) // before the Workspace is enqueued: see [MountObjectIndex]

	for _, ws := range []*tenancyv1alpha1.Workspace{oldWS, newWS} {
		if ws == nil {
			continue
		}
		if keys, _ := indexByMountKind(c.rule, ws); len(keys) > 0 && (oldWS == nil || newWS == nil || c.rule.MountChanged(oldWS, newWS)) {
			c.mountsQueue.Add(keys[0])
		}
	}
	if newWS == nil {
		if oldWS != nil {
			c.forgetWorkspace(oldWS)
		}
		return
	}
	if oldWS == nil && c.handled(newWS) ||
		oldWS != nil && (c.rule.MountChanged(oldWS, newWS) || statusChanged(oldWS, newWS) || c.routingChanged(oldWS, newWS)) {
		c.enqueueWorkspace(newWS)
	}
}

// handled tells whether the controller has anything to do with a Workspace.
func (c *Controller) handled(ws *tenancyv1alpha1.Workspace) bool {
	return c.rule.IsMounted(ws) || carriesStatus(ws) || ownCondition(ws) != nil
}

// forgetWorkspace forgets what the controller remembers of a deleted Workspace, at once: nothing enqueues a Workspace
// that no longer exists for its own sake.
func (c *Controller) forgetWorkspace(ws *tenancyv1alpha1.Workspace) {
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.forget(key)
	if c.handled(ws) {
		c.workspacesQueue.Add(key)
	}
}

// forget drops every entry the controller keeps per Workspace key.
func (c *Controller) forget(key string) {
	c.observed.forget(key)
	c.conflicted.forget(key)
	c.written.forget(key)
	c.workspaces.reads.forget(key)
	c.workspaces.refusals.forget(key)
	c.unavailable.forget(key)
	if c.events != nil {
		c.events.forget(key)
	}
}

// statusChanged tells whether someone, most often this controller, changed the annotations it owns: a reconcile then
// confirms or repairs them.
func statusChanged(oldWS, newWS *tenancyv1alpha1.Workspace) bool {
	return oldWS.Annotations[mount.PhaseAnnotationKey] != newWS.Annotations[mount.PhaseAnnotationKey] ||
		oldWS.Annotations[mount.StatusAnnotationKey] != newWS.Annotations[mount.StatusAnnotationKey]
}

// routingChanged tells whether something changed that the controller's routing depends on, on a mounted Workspace or
// one that carries its condition.
func (c *Controller) routingChanged(oldWS, newWS *tenancyv1alpha1.Workspace) bool {
	oldCondition, newCondition := ownCondition(oldWS), ownCondition(newWS)
	if oldCondition == nil && newCondition == nil && !c.rule.IsMounted(newWS) {
		return false
	}
	return oldWS.Spec.URL != newWS.Spec.URL || oldWS.Status.Phase != newWS.Status.Phase ||
		(oldCondition == nil) != (newCondition == nil) || oldCondition != nil && *oldCondition != *newCondition
}

func carriesStatus(ws *tenancyv1alpha1.Workspace) bool {
	_, phase := ws.Annotations[mount.PhaseAnnotationKey]
	_, status := ws.Annotations[mount.StatusAnnotationKey]
	return phase || status
}

// handleServedKinds re-resolves the kinds in use that a CRD, an APIBinding or an APIResourceSchema serves.
func (c *Controller) handleServedKinds(obj interface{}) {
	switch obj := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		c.enqueueKindInUse(obj.Spec.Group, obj.Spec.Names.Kind)
	case *apisv1alpha1.APIResourceSchema:
		c.enqueueKindInUse(obj.Spec.Group, obj.Spec.Names.Kind)
	case *apisv1alpha1.APIBinding:
		groups := map[string]bool{}
		for _, bound := range obj.Status.BoundResources {
			groups[bound.Group] = true
		}
		c.enqueueKindsInUse(func(gvkGroup, _ string) bool { return groups[gvkGroup] })
	}
}

// enqueueKindInUse re-resolves group/kind if Workspaces reference it.
func (c *Controller) enqueueKindInUse(group, kind string) {
	c.enqueueKindsInUse(func(gvkGroup, gvkKind string) bool { return gvkGroup == group && gvkKind == kind })
}

func (c *Controller) enqueueKindsInUse(match func(group, kind string) bool) {
	for _, key := range c.workspaceIndexer.ListIndexFuncValues(WorkspacesByMountKind) {
		if gvk, ok := parseKindKey(key); ok && match(gvk.Group, gvk.Kind) {
			c.mountsQueue.Add(key)
		}
	}
}

// enqueueMountObjectEvent is enqueueMountObject for the informers across all clusters.
func (c *Controller) enqueueMountObjectEvent(resource restmapping.Resource, obj interface{}) {
	if resource.Identity == "" {
		if m, err := meta.Accessor(unwrapTombstone(obj)); err == nil && c.caches.hasSynced(logicalcluster.From(m), resource) {
			return
		}
	}
	c.enqueueMountObject(resource, obj)
}

// enqueueMountObject sends the Workspaces that reference a mount object to workspacemounts-workspaces.
func (c *Controller) enqueueMountObject(resource restmapping.Resource, obj interface{}) {
	m, err := meta.Accessor(unwrapTombstone(obj))
	if err != nil {
		return
	}
	workspaces := c.mountObjects.Workspaces(c.cachedWorkspace, logicalcluster.From(m), resource.Group, resource.Kind, m.GetNamespace(), m.GetName())
	now := time.Now()
	for _, ws := range workspaces {
		c.enqueueWorkspaceObserved(ws, now)
	}
}

// cachedWorkspace is the Workspace the cache holds, nil if none.
func (c *Controller) cachedWorkspace(cluster logicalcluster.Name, name string) *tenancyv1alpha1.Workspace {
	obj, found, err := c.workspaceIndexer.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", name))
	if err != nil || !found {
		return nil
	}
	ws, _ := obj.(*tenancyv1alpha1.Workspace)
	return ws
}

// putObserved keeps the earliest unwritten observation of a Workspace's mount.
func (c *Controller) putObserved(key string, at time.Time) {
	c.observed.putUnless(key, at, func(earlier time.Time) bool { return !at.Before(earlier) })
}

func (c *Controller) enqueueWorkspace(ws *tenancyv1alpha1.Workspace) {
	c.enqueueWorkspaceObserved(ws, time.Time{})
}

// enqueueWorkspaceObserved enqueues a Workspace, whose mount object changed at observedAt unless that is zero.
func (c *Controller) enqueueWorkspaceObserved(ws *tenancyv1alpha1.Workspace, observedAt time.Time) {
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if !observedAt.IsZero() {
		c.putObserved(key, observedAt)
	}
	c.workspacesQueue.Add(key)
}
