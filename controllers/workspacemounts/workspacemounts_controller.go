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
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/indexers"
	"github.com/kcp-dev/kcp/pkg/logging"
	"github.com/kcp-dev/kcp/pkg/reconciler/committer"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

const (
	// ControllerName names the controller in logs.
	ControllerName = "workspacemounts"
	// MountsQueueName names the queue keyed by mount kind (QueueName).
	MountsQueueName = "workspacemounts-mounts"
	// WorkspacesQueueName names the queue keyed by Workspace (QueueName).
	WorkspacesQueueName = "workspacemounts-workspaces"
)

// QueueName is the one name of a queue of the controller of a shard: the
// workqueue's (its workqueue_* series), the queue of its log lines and the
// queue label of workspacemounts_reconcile_*. It is the queue's name, with
// "/<shard>" for one of the controllers of a sharded kcp, so that each
// shard's queues have their own series (the gauges of two queues of one
// name would overwrite each other).
func QueueName(queue, shard string) string {
	if shard == "" {
		return queue
	}
	return queue + "/" + shard
}

// queue is a work queue and its name (QueueName).
type queue struct {
	workqueue.TypedRateLimitingInterface[string]
	name string
}

// newQueue is a work queue named name, retrying with retryRateLimiter.
func newQueue(name string) queue {
	return queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(retryRateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		name: name,
	}
}

// maxRetryDelay caps how long a key that keeps failing waits before its next
// try. client-go's default goes to 1000s: after kcp comes back from an
// outage, the Workspace cache catches up late (a reflector backs off up to
// 30s, twice that with jitter), every patch made from it meanwhile conflicts,
// and each conflict doubled the key's wait, so a change could take many
// minutes to be written. The overall limit (10/s, burst 100) is client-go's.
const maxRetryDelay = 10 * time.Second

// reconcileTimeout bounds one reconcile of workspacemounts-workspaces, all its
// requests to kcp included (a read of the mount object and at most two
// patches, or a read of the Workspace): it ends with an error and is
// retried.
const reconcileTimeout = time.Minute

// retryRateLimiter is client-go's default controller rate limiter with the
// per-key backoff capped at maxRetryDelay.
func retryRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Informers are the shared informers the controller reads, all across all
// logical clusters. The caller starts them and waits for their sync.
type Informers struct {
	Workspaces         cache.SharedIndexInformer
	CRDs               cache.SharedIndexInformer
	APIBindings        cache.SharedIndexInformer
	APIResourceSchemas cache.SharedIndexInformer
}

// Clients are the clients the controller uses: KCP to patch Workspaces,
// Dynamic to read and watch full mount objects (in one cluster, or a bound
// resource across all clusters), Metadata to watch CRD mount objects across
// all clusters.
type Clients struct {
	KCP      kcpclientset.ClusterInterface
	Dynamic  kcpdynamic.ClusterInterface
	Metadata kcpmetadata.ClusterInterface
}

// Options are the controller's settings.
type Options struct {
	// MaxMountInformers bounds the mount resources watched
	// (--max-mount-informers): a bound one by its informer across all
	// clusters, a CRD one by its full-object informers per cluster and, while
	// a cluster mounting it has none, its metadata informer across all
	// clusters. Resources beyond it are not watched, and their Workspaces get
	// reason mount.ReasonMountInformerLimitReached until a slot frees. At
	// least 1.
	MaxMountInformers int
	// Routing is what the controller keeps beside the annotations.
	Routing RoutingOptions
	// Shard names the shard the controller writes, with a sharded kcp (one
	// controller per shard): the mount informer gauges sum them.
	Shard string
	// MountRule says which Workspaces are mounted (--legacy-mount-annotation):
	// the rule InstallIndexers was given for the same informers.
	MountRule mount.Rule
	// MaxClusterMountInformers bounds the full-object informers of CRD
	// resources in one cluster each (--max-cluster-mount-informers), one
	// per (resource, cluster) pair in use: workspacemounts-workspaces reads a
	// pair's mount objects from it instead of a GET. Pairs beyond it are
	// read with a GET per change, on their resource's metadata events. 0
	// runs none.
	MaxClusterMountInformers int
}

// Controller writes the mount status of every mounted Workspace as annotations.
// See README.md for the design.
type Controller struct {
	// shard is Options.Shard, "" with one shard.
	shard string
	// rule is Options.MountRule: which Workspaces are mounted.
	rule            mount.Rule
	mountsQueue     queue
	workspacesQueue queue

	workspaceIndexer cache.Indexer
	workspaceLister  tenancyv1alpha1listers.WorkspaceClusterLister
	mounts           *mountsReconciler
	workspaces       *workspacesReconciler
	// caches are the full-object informers' caches of mount objects.
	caches *mountCaches
	// patchWorkspace applies a merge patch to a Workspace (to its status
	// with subresource "status") and returns the Workspace kcp answered.
	patchWorkspace func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error)

	// observed holds, per Workspace key, when a change of its mount object
	// was first seen and not yet written: the start of status_latency_seconds.
	// It and conflicted, like the reconciler's reads, hold an entry only
	// for a Workspace that exists: forget drops all three when it is
	// deleted.
	observed keyed[time.Time]

	// getWorkspace reads a Workspace from kcp, bypassing the cache: for a
	// key whose last patch conflicted (conflicted), the cache may be behind
	// kcp, e.g. while its watch catches up after kcp came back, and each
	// retry from it would conflict again.
	getWorkspace func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error)
	// conflicted are the keys whose last patch conflicted (getWorkspace).
	conflicted keyed[bool]

	// handlers are added to the shared informers by Start and removed when
	// it returns: the informers outlive the controller (the virtual
	// workspace reads them too), a controller runs once.
	handlers []informerHandler
	started  atomic.Bool
}

// keyed is a map by key guarded by a lock: what the controller remembers
// of a Workspace between reconciles (workers reconcile different
// Workspaces at once), its mount object caches.
type keyed[V any] struct {
	lock  sync.Mutex
	byKey map[string]V
}

func (k *keyed[V]) get(key string) (V, bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	v, found := k.byKey[key]
	return v, found
}

func (k *keyed[V]) put(key string, v V) { k.putUnless(key, v, nil) }

// putUnless sets key's value to v, unless keep (if not nil) says the
// current one stays.
func (k *keyed[V]) putUnless(key string, v V, keep func(current V) bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	if current, found := k.byKey[key]; found && keep != nil && keep(current) {
		return
	}
	if k.byKey == nil {
		k.byKey = map[string]V{}
	}
	k.byKey[key] = v
}

// take returns key's value, and forgets it.
func (k *keyed[V]) take(key string) (V, bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	v, found := k.byKey[key]
	delete(k.byKey, key)
	return v, found
}

func (k *keyed[V]) forget(key string) { k.take(key) }

// InstallIndexers adds the indexes the controller needs, of the Workspaces
// rule says are mounted (the controller's Options.MountRule must be the
// same); call it before the informers start.
func InstallIndexers(informers Informers, rule mount.Rule) error {
	if err := informers.Workspaces.AddIndexers(mountIndexers(rule)); err != nil {
		return err
	}
	return restmapping.AddIndexers(informers.CRDs, informers.APIBindings, informers.APIResourceSchemas)
}

// NewController wires the two queues to the informers. InstallIndexers must
// have been called on them.
func NewController(clients Clients, informers Informers, options Options) (*Controller, error) {
	if options.MaxMountInformers < 1 {
		return nil, fmt.Errorf("the mount informer limit must be at least 1, not %d", options.MaxMountInformers)
	}
	if options.MaxClusterMountInformers < 0 {
		return nil, fmt.Errorf("the cluster mount informer limit must not be negative, not %d", options.MaxClusterMountInformers)
	}
	if options.Routing.WorkspaceURL && options.Routing.InTreeMountsController {
		return nil, errors.New("spec.URL cannot be kept beside kcp's in-tree mounts controller, which writes it too (RoutingOptions.WorkspaceURL with InTreeMountsController)")
	}
	metrics.SetMountInformerLimit(options.MaxMountInformers)
	c := &Controller{
		shard:            options.Shard,
		rule:             options.MountRule,
		mountsQueue:      newQueue(QueueName(MountsQueueName, options.Shard)),
		workspacesQueue:  newQueue(QueueName(WorkspacesQueueName, options.Shard)),
		workspaceIndexer: informers.Workspaces.GetIndexer(),
		workspaceLister:  tenancyv1alpha1listers.NewWorkspaceClusterLister(informers.Workspaces.GetIndexer()),
		patchWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
			return clients.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, subresources...)
		},
		getWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return clients.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		},
	}
	resolver := restmapping.NewResolver(informers.CRDs.GetIndexer(), informers.APIBindings.GetIndexer(), informers.APIResourceSchemas.GetIndexer())

	c.caches = &mountCaches{}
	// An informer that synced has the Workspaces it covers read again (runMountInformer).
	watched := newMountInformers(clients.Metadata, clients.Dynamic, c.caches, options.MaxMountInformers, options.Shard, c.enqueueMountObjectEvent,
		func(resource restmapping.Resource) { c.mounts.enqueueWorkspacesUsing(resource.Key(), "") })
	var syncClusterInformers func(context.Context, []clusterResource) []clusterResource
	if options.MaxClusterMountInformers > 0 {
		syncClusterInformers = newClusterMountInformers(clients.Dynamic, c.caches, options.MaxClusterMountInformers, options.Shard, c.enqueueMountObject,
			func(cluster logicalcluster.Name, resource restmapping.Resource) {
				c.mounts.enqueueWorkspacesUsing(resource.Key(), cluster)
			}).sync
	}
	c.mounts = &mountsReconciler{
		workspacesOfKind: func(key string) ([]*tenancyv1alpha1.Workspace, error) {
			return indexers.ByIndex[*tenancyv1alpha1.Workspace](c.workspaceIndexer, WorkspacesByMountKind, key)
		},
		resolve:              resolver.Resolve,
		enqueueWorkspace:     c.enqueueWorkspace,
		enqueueKind:          c.mountsQueue.Add,
		syncInformers:        watched.sync,
		syncClusterInformers: syncClusterInformers,
		runInformers:         watched.run,
		kinds:                map[string]kindResolution{},
	}
	c.workspaces = &workspacesReconciler{
		rule:    options.MountRule,
		resolve: resolver.Resolve,
		getMountObject: func(ctx context.Context, cluster logicalcluster.Name, resource restmapping.Resource, namespace, name string) (*unstructured.Unstructured, error) {
			return clients.Dynamic.Cluster(cluster.Path()).Resource(resource.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		cachedMountObject: c.caches.get,
		informerDenied:    watched.isDenied,
		maxMountInformers: options.MaxMountInformers,
		routing:           options.Routing,
		now:               time.Now,
	}

	c.handlers = []informerHandler{
		{informers.Workspaces, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.handleWorkspace(nil, obj) },
			UpdateFunc: c.handleWorkspace,
			DeleteFunc: func(obj interface{}) { c.handleWorkspace(obj, nil) },
		}},
		{informers.CRDs, handlerForAll(c.handleServedKinds)},
		{informers.APIBindings, handlerForAll(c.handleServedKinds)},
		{informers.APIResourceSchemas, handlerForAll(c.handleServedKinds)},
	}
	return c, nil
}

// informerHandler is an event handler the controller adds to a shared
// informer while it runs.
type informerHandler struct {
	informer cache.SharedIndexInformer
	funcs    cache.ResourceEventHandler
}

// handlerForAll calls f with the object of every add, update and delete,
// unwrapping delete tombstones. An update that changes nothing (a relist
// after kcp's watch cache expired) calls nothing.
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

// sameResourceVersion tells whether an update is the same version of the
// object: what a relist reports for every object that did not change.
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

// handleWorkspace enqueues a Workspace whose mount may need (re)writing, and
// the kinds it referenced before and after the change, whose set of users
// changed. oldObj is nil on add, newObj on delete.
func (c *Controller) handleWorkspace(oldObj, newObj interface{}) {
	oldWS, _ := unwrapTombstone(oldObj).(*tenancyv1alpha1.Workspace)
	newWS, _ := newObj.(*tenancyv1alpha1.Workspace)

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

// handled tells whether the controller has anything to do with a
// Workspace: it is mounted (by the rule of this process), or carries
// something the controller writes, which a Workspace that is not mounted
// (any more, or by this rule) has removed.
func (c *Controller) handled(ws *tenancyv1alpha1.Workspace) bool {
	return c.rule.IsMounted(ws) || carriesStatus(ws) || ownCondition(ws) != nil
}

// forgetWorkspace forgets what the controller remembers of a deleted
// Workspace (forget), at once: nothing enqueues a Workspace that no longer
// exists for its own sake. A Workspace the controller dealt with is also
// sent to workspacemounts-workspaces, whose reconcile finds it gone and
// forgets again what a reconcile running meanwhile remembered: so once its
// delete is handled and the queue drained, nothing of it is left.
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

// forget drops every entry the controller keeps per Workspace key: the
// pending observation of its mount (observed), a conflict to retry from
// kcp (conflicted), its last read of its mount object (the reconciler's
// reads). The mount object informers and caches are per resource and
// cluster, and go with the last Workspace mounting them
// (workspacemounts-mounts, which the delete of a mounted Workspace
// enqueues).
func (c *Controller) forget(key string) {
	c.observed.forget(key)
	c.conflicted.forget(key)
	c.workspaces.reads.forget(key)
}

// statusChanged tells whether someone, most often this controller, changed the
// annotations it owns: a reconcile then confirms or repairs them.
func statusChanged(oldWS, newWS *tenancyv1alpha1.Workspace) bool {
	return oldWS.Annotations[mount.PhaseAnnotationKey] != newWS.Annotations[mount.PhaseAnnotationKey] ||
		oldWS.Annotations[mount.StatusAnnotationKey] != newWS.Annotations[mount.StatusAnnotationKey]
}

// routingChanged tells whether something changed that the controller's
// routing (RoutingOptions) depends on, on a mounted Workspace or one that
// carries its condition: the condition, spec.URL, the phase (kcp finishing
// a legacy-mounted Workspace's initialization lets the condition in).
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

// handleServedKinds re-resolves the kinds in use that a CRD, an APIBinding
// or an APIResourceSchema serves: the kind of a CRD or a schema (a binding
// may reach the cache before the schema it points to), and every kind of a
// group a binding binds (it names resources, not kinds).
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

// enqueueMountObjectEvent is enqueueMountObject for the informers across
// all clusters. A metadata event of an object whose cluster has a synced
// full-object informer of its own is dropped: that informer reports the
// same change, and a reconcile before it would read the cache's older
// version for nothing.
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
	key := objectKey(logicalcluster.From(m), resource.Group, resource.Kind, m.GetNamespace(), m.GetName())
	workspaces, err := indexers.ByIndex[*tenancyv1alpha1.Workspace](c.workspaceIndexer, WorkspacesByMountObject, key)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	now := time.Now()
	for _, ws := range workspaces {
		c.enqueueWorkspaceObserved(ws, now)
	}
}

// putObserved keeps the earliest unwritten observation of a Workspace's mount.
func (c *Controller) putObserved(key string, at time.Time) {
	c.observed.putUnless(key, at, func(earlier time.Time) bool { return !at.Before(earlier) })
}

func (c *Controller) enqueueWorkspace(ws *tenancyv1alpha1.Workspace) {
	c.enqueueWorkspaceObserved(ws, time.Time{})
}

// enqueueWorkspaceObserved enqueues a Workspace, whose mount object changed
// at observedAt unless that is zero.
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

// Start runs the controller until ctx is done: it adds its event handlers
// to the informers, which replay every object they hold, so that everything
// is reconciled once; then one worker for workspacemounts-mounts, whose work is cheap cache
// reads, and workers for workspacemounts-workspaces. The informers must have synced. When ctx
// is done, the handlers are removed, the mount object informers stop, and
// Start returns once every worker has finished its item: nothing is written
// after that. A Controller runs once; build a new one to run again (as a
// replica does each time it becomes the leader).
func (c *Controller) Start(ctx context.Context, workspaceWorkers int) error {
	if c.started.Swap(true) {
		return errors.New("a controller runs once; build a new one with NewController")
	}
	defer utilruntime.HandleCrash()

	logger := logging.WithReconciler(klog.FromContext(ctx), ControllerName)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("starting controller", "workspaceWorkers", workspaceWorkers)
	defer logger.Info("shutting down controller")

	defer c.mountsQueue.ShutDown()
	defer c.workspacesQueue.ShutDown()
	// The informers stop with ctx: a replica that no longer leads counts none.
	defer metrics.SetClusterMountInformers(c.shard, 0, 0)
	defer metrics.SetMountInformers(c.shard, 0, 0)
	removeHandlers, err := c.addHandlers()
	defer removeHandlers(logger)
	if err != nil {
		return err
	}

	var workers sync.WaitGroup
	run := func(q queue, process func(context.Context, string) error) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for processNextWorkItem(ctx, q, process) {
				}
			}, time.Second)
		}()
	}
	run(c.mountsQueue, c.mounts.reconcile)
	for range workspaceWorkers {
		run(c.workspacesQueue, c.processWorkspace)
	}
	<-ctx.Done()
	// Shutting the queues down ends the workers' Get; each finishes its item first.
	c.mountsQueue.ShutDown()
	c.workspacesQueue.ShutDown()
	workers.Wait()
	return nil
}

// addHandlers adds the controller's event handlers to the informers; the
// function returned removes those added.
func (c *Controller) addHandlers() (func(klog.Logger), error) {
	var added []func() error
	remove := func(logger klog.Logger) {
		for _, remove := range added {
			if err := remove(); err != nil {
				logger.Error(err, "removing an event handler")
			}
		}
	}
	for _, handler := range c.handlers {
		registration, err := handler.informer.AddEventHandler(handler.funcs)
		if err != nil {
			return remove, err
		}
		added = append(added, func() error { return handler.informer.RemoveEventHandler(registration) })
	}
	return remove, nil
}

func processNextWorkItem(ctx context.Context, q queue, process func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)

	logger := logging.WithQueueKey(klog.FromContext(ctx), key).WithValues("queue", q.name)
	ctx = klog.NewContext(ctx, logger)
	logger.V(4).Info("processing key")

	began := time.Now()
	if err := process(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			// Someone else (kcp itself, often) wrote the Workspace since our
			// cache saw it: expected, and retried against the newer version.
			logger.V(2).Info("conflict, requeuing", "err", err)
			metrics.ObserveReconcile(q.name, metrics.ResultRequeue, began)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "failed to sync, requeuing", "queue", q.name, "key", key)
			metrics.ObserveReconcile(q.name, metrics.ResultError, began)
		}
		q.AddRateLimited(key)
		return true
	}
	metrics.ObserveReconcile(q.name, metrics.ResultSuccess, began)
	q.Forget(key)
	return true
}

// processWorkspace reconciles one Workspace and patches its annotations when
// they changed. A steady state costs no write.
func (c *Controller) processWorkspace(ctx context.Context, key string) error {
	cluster, _, name, err := kcpcache.SplitMetaClusterNamespaceKey(key)
	if err != nil {
		klog.FromContext(ctx).Error(err, "dropping malformed workspace key")
		return nil
	}
	// No request to kcp may hold a key forever: one that kcp accepted and
	// never answers (while it starts, say) would keep the key in progress,
	// and every later change of its Workspace waiting. (Not in
	// workspacemounts-mounts: the mount object informers it starts live on its context.)
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	conflicted, _ := c.conflicted.take(key)
	ws, err := c.workspaceLister.Cluster(cluster).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil // deleted: nothing to write, nothing to remember
	}
	if err != nil {
		return err
	}
	if conflicted {
		// The last patch conflicted: retry from kcp's version, not the cache's.
		// Any error is retried, NotFound too: right after kcp starts it
		// answers 404 for resources it does not serve yet, and a Workspace
		// that is really gone is found missing in the cache next time.
		ws, err = c.getWorkspace(ctx, cluster, name)
		if err != nil {
			c.conflicted.put(key, true)
			return err
		}
	}
	if !ws.DeletionTimestamp.IsZero() {
		return nil // on its way out: a write would only race the deletion
	}
	ctx = klog.NewContext(ctx, logging.WithObject(klog.FromContext(ctx), ws))

	observedAt, observed := c.observed.take(key)
	state, err := c.workspaces.mountState(ctx, ws)
	if err != nil {
		if observed {
			c.putObserved(key, observedAt)
		}
		return err
	}
	written, err := c.commitMetadataAndSpec(ctx, key, ws, state)
	if err == nil {
		err = c.commitStatus(ctx, key, ws, written, conflicted, state)
	}
	switch {
	case !observed:
	case written != nil: // the annotations are written, whatever became of the status
		metrics.StatusLatency.Observe(time.Since(observedAt).Seconds())
	case err != nil:
		c.putObserved(key, observedAt)
	}
	return err
}

// commitMetadataAndSpec writes the annotations (and with --workspace-url
// spec.URL) when they changed, in one merge patch carrying ws's
// resourceVersion, and returns the Workspace kcp answered with, or nil when
// nothing changed.
func (c *Controller) commitMetadataAndSpec(ctx context.Context, key string, ws *tenancyv1alpha1.Workspace, state mountState) (*tenancyv1alpha1.Workspace, error) {
	updated := ws.DeepCopy()
	c.workspaces.applyMetadataAndSpec(updated, state)
	oldPhase, newPhase := ws.Annotations[mount.PhaseAnnotationKey], updated.Annotations[mount.PhaseAnnotationKey]
	if oldPhase == newPhase && ws.Annotations[mount.StatusAnnotationKey] == updated.Annotations[mount.StatusAnnotationKey] && ws.Spec.URL == updated.Spec.URL {
		return nil, nil // nothing to write
	}
	written, err := c.commit(ctx, key,
		&workspaceResource{ObjectMeta: ws.ObjectMeta, Spec: ws.Spec, Status: ws.Status},
		&workspaceResource{ObjectMeta: updated.ObjectMeta, Spec: updated.Spec, Status: ws.Status},
		metrics.AnnotationPatches)
	if err != nil {
		return nil, err
	}
	if oldPhase != newPhase {
		// oldPhase is whatever was written there, by anyone who may annotate
		// the Workspace: ObservePhaseTransition maps it into a fixed set.
		metrics.ObservePhaseTransition(oldPhase, newPhase)
	}
	return written, nil
}

// commitStatus writes the condition (and with --workspace-url the phase)
// when they changed, in one merge patch of the status subresource. The
// cache holds only the controller's own condition of a Workspace, and a
// merge patch replaces the whole list, so the patch is made from the
// Workspace kcp answered the first patch with, else from a fresh read (ws
// itself when it was read from kcp, fromKCP): it carries that
// resourceVersion and every condition kcp keeps, and never conflicts with
// the first patch.
func (c *Controller) commitStatus(ctx context.Context, key string, ws, written *tenancyv1alpha1.Workspace, fromKCP bool, state mountState) error {
	updated := ws.DeepCopy()
	c.workspaces.applyStatus(updated, state)
	if written == nil && equality.Semantic.DeepEqual(ws.Status, updated.Status) {
		return nil // nothing to write
	}
	current := written
	if current == nil && fromKCP {
		current = ws
	}
	if current == nil {
		var err error
		cluster, _, name, _ := kcpcache.SplitMetaClusterNamespaceKey(key)
		if current, err = c.getWorkspace(ctx, cluster, name); err != nil {
			c.conflicted.put(key, true)
			return err
		}
	}
	updated = current.DeepCopy()
	c.workspaces.applyStatus(updated, state)
	if equality.Semantic.DeepEqual(current.Status, updated.Status) {
		return nil // kcp has it already
	}
	_, err := c.commit(ctx, key,
		&workspaceResource{ObjectMeta: current.ObjectMeta, Spec: current.Spec, Status: current.Status},
		&workspaceResource{ObjectMeta: current.ObjectMeta, Spec: current.Spec, Status: updated.Status},
		metrics.WorkspaceStatusPatches)
	return err
}

type workspaceResource = committer.Resource[tenancyv1alpha1.WorkspaceSpec, tenancyv1alpha1.WorkspaceStatus]

// commit writes the difference between oldResource and newResource, either
// metadata and spec or status, through kcp's committer (a merge patch with
// the resourceVersion of oldResource, so a stale write conflicts), counts it
// in patches, and returns the Workspace kcp answered with. A conflict marks
// key: its next try reads the Workspace from kcp.
func (c *Controller) commit(ctx context.Context, key string, oldResource, newResource *workspaceResource, patches *k8smetrics.CounterVec) (*tenancyv1alpha1.Workspace, error) {
	patcher := &workspacePatcher{patch: c.patchWorkspace, cluster: logicalcluster.From(oldResource)}
	err := committer.NewCommitterScoped[*tenancyv1alpha1.Workspace, *workspacePatcher,
		tenancyv1alpha1.WorkspaceSpec, tenancyv1alpha1.WorkspaceStatus](patcher)(ctx, oldResource, newResource)
	switch {
	case err == nil:
		patches.WithLabelValues(metrics.PatchApplied).Inc()
		return patcher.written, nil
	case apierrors.IsConflict(err):
		patches.WithLabelValues(metrics.PatchConflict).Inc()
		c.conflicted.put(key, true)
	default:
		patches.WithLabelValues(metrics.PatchError).Inc()
	}
	return nil, err
}

// workspacePatcher is the committer's Patcher for one Workspace: it keeps
// the Workspace kcp answered with.
type workspacePatcher struct {
	patch   func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error)
	cluster logicalcluster.Name
	written *tenancyv1alpha1.Workspace
}

func (p *workspacePatcher) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
	if pt != types.MergePatchType {
		return nil, fmt.Errorf("unexpected patch type %s", pt)
	}
	ws, err := p.patch(ctx, p.cluster, name, data, subresources...)
	if err == nil {
		p.written = ws
	}
	return ws, err
}
