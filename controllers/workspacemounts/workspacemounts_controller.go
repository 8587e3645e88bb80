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
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpeventsv1 "github.com/kcp-dev/client-go/kubernetes/typed/events/v1"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/indexers"
	"github.com/kcp-dev/kcp/pkg/logging"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

const (
	// ControllerName names the controller in logs.
	ControllerName = "workspacemounts"
	// MountsQueueName names the queue keyed by mount kind.
	MountsQueueName = "workspacemounts-mounts"
	// WorkspacesQueueName names the queue keyed by Workspace.
	WorkspacesQueueName = "workspacemounts-workspaces"
)

// Informers are the shared informers the controller reads, all across all logical clusters.
type Informers struct {
	Workspaces         cache.SharedIndexInformer
	CRDs               cache.SharedIndexInformer
	APIBindings        cache.SharedIndexInformer
	APIResourceSchemas cache.SharedIndexInformer
	// LogicalClusters names each cluster's tenant; without it, every cluster is a tenant of its own.
	LogicalClusters cache.SharedIndexInformer
}

// Clients are the clients the controller uses.
type Clients struct {
	KCP      kcpclientset.ClusterInterface
	Dynamic  kcpdynamic.ClusterInterface
	Metadata kcpmetadata.ClusterInterface
	// Events writes events (events.k8s.io/v1) in a Workspace's logical cluster.
	Events kcpeventsv1.EventsV1ClusterInterface
}

// Controller writes the mount status of every mounted Workspace as annotations.
type Controller struct {
	shard           string
	rule            mount.Rule
	tenantOf        func(logicalcluster.Name) tenant.Name
	mountsQueue     queue
	workspacesQueue queue

	workspaceIndexer cache.Indexer
	workspaceLister  tenancyv1alpha1listers.WorkspaceClusterLister
	mounts           *mountsReconciler
	workspaces       *workspacesReconciler
	caches           *mountCaches
	breaker          *mountBreaker
	// repairs bounds, per tenant, the writes that only undo someone else's change of the annotations.
	repairs        *tenant.Limiters[tenant.Name]
	written        keyed[uint64]
	patchWorkspace func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error)
	writeFence     func() error
	// observed holds, per Workspace key, when a change of its mount object was first seen and not yet written.
	observed keyed[time.Time]
	// getWorkspace reads a Workspace from kcp, bypassing the cache.
	getWorkspace func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error)
	conflicted   keyed[bool]
	// unavailable bounds the Workspaces whose condition is False (--max-unavailable); nil without a limit.
	unavailable *unavailableGate
	// events records events regarding Workspaces, nil with Options.MaxWorkspaceEventsPerHour 0.
	events      *workspaceEvents
	broadcaster *eventRecorder
	// handlers are added to the shared informers by Start and removed when it returns.
	handlers []informerHandler
	// mountObjects is filled by the Workspace handler.
	mountObjects *MountObjectIndex
	started      atomic.Bool
}

// InstallIndexers adds the indexes the controller needs, of the Workspaces rule says are mounted (the controller's
// Options.MountRule must be the same); call it before the informers start.
func InstallIndexers(informers Informers, rule mount.Rule) error {
	if err := informers.Workspaces.AddIndexers(mountIndexers(rule)); err != nil {
		return err
	}
	return restmapping.AddIndexers(informers.CRDs, informers.APIBindings, informers.APIResourceSchemas)
}

// NewController wires the two queues to the informers.
func NewController(clients Clients, informers Informers, options Options) (*Controller, error) {
	if err := options.Validate(); err != nil {
		return nil, err
	}
	if options.MaxWorkspaceEventsPerHour > 0 && clients.Events == nil {
		return nil, errors.New("events regarding Workspaces need an events client (Clients.Events), or Options.MaxWorkspaceEventsPerHour 0")
	}
	options.RequestTimeout = cmp.Or(options.RequestTimeout, DefaultRequestTimeout)
	options.MaxRepairsPerSecond = cmp.Or(options.MaxRepairsPerSecond, DefaultMaxRepairsPerSecond)
	metrics.SetMountInformerLimit(options.MaxMountInformers)
	var pathOf tenant.PathOf
	if informers.LogicalClusters != nil {
		pathOf = tenant.PathsFrom(informers.LogicalClusters.GetIndexer())
	}
	tenantOf := func(cluster logicalcluster.Name) tenant.Name { return tenant.Of(cluster, pathOf) }
	c := &Controller{
		tenantOf:         tenantOf,
		shard:            options.Shard,
		rule:             options.MountRule,
		mountsQueue:      newQueue(QueueName(MountsQueueName, options.Shard)),
		workspacesQueue:  newTenantQueue(QueueName(WorkspacesQueueName, options.Shard), keyTenant(tenantOf)),
		workspaceIndexer: informers.Workspaces.GetIndexer(),
		mountObjects:     NewMountObjectIndex(options.MountRule),
		workspaceLister:  tenancyv1alpha1listers.NewWorkspaceClusterLister(informers.Workspaces.GetIndexer()),
		patchWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
			ctx, cancel := context.WithTimeout(ctx, options.RequestTimeout)
			defer cancel()
			return clients.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, subresources...)
		},
		writeFence: options.WriteFence,
		getWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			ctx, cancel := context.WithTimeout(ctx, options.RequestTimeout)
			defer cancel()
			return clients.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
		},
	}
	if options.MaxWorkspaceEventsPerHour > 0 {
		c.events, c.broadcaster = newEventRecording(options.MaxWorkspaceEventsPerHour, func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface {
			return clients.Events.Cluster(cluster)
		}, countEventDrop)
	}
	resolver := restmapping.NewResolver(informers.CRDs.GetIndexer(), informers.APIBindings.GetIndexer(), informers.APIResourceSchemas.GetIndexer())

	c.caches = &mountCaches{}
	// A pair that answers again has its Workspaces read again at once.
	c.breaker = newMountBreaker(options.RequestTimeout, maxBreakerBackoff, tenantOf, func(pair string) {
		cluster, resourceKey, _ := strings.Cut(pair, "|")
		c.mounts.enqueueWorkspacesUsing(resourceKey, logicalcluster.Name(cluster))
	}, c.workspacesQueue.Add)
	c.repairs = tenant.NewLimiters[tenant.Name](rate.Limit(options.MaxRepairsPerSecond), max(1, int(10*options.MaxRepairsPerSecond)), nil)
	// An informer that synced has the Workspaces it covers read again.
	watched := newMountInformers(clients.Metadata, clients.Dynamic, c.caches, options.MaxMountInformers, options.Shard, c.enqueueMountObjectEvent,
		func(resource restmapping.Resource) { c.mounts.enqueueWorkspacesUsing(resource.Key(), "") })
	var syncClusterInformers func(context.Context, []clusterResource) []clusterResource
	if options.MaxClusterMountInformers > 0 {
		syncClusterInformers = newClusterMountInformers(clients.Dynamic, c.caches, options.MaxClusterMountInformers, options.Shard, c.enqueueMountObject,
			func(cluster logicalcluster.Name, resource restmapping.Resource) {
				c.mounts.enqueueWorkspacesUsing(resource.Key(), cluster)
			}, func(cluster logicalcluster.Name, resource restmapping.Resource) listBound {
				pair := mountCacheKey(cluster, resource)
				return listBound{timeout: options.RequestTimeout, listed: func(err error) {
					switch {
					case err == nil:
						c.breaker.answered(pair)
					case notAnswering(err):
						c.breaker.timedOut(pair)
					}
				}}
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
			ctx, cancel := context.WithTimeout(ctx, options.RequestTimeout)
			defer cancel()
			return clients.Dynamic.Cluster(cluster.Path()).Resource(resource.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		cachedMountObject: c.caches.get,
		breaker:           c.breaker,
		requestTimeout:    options.RequestTimeout,
		informerDenied:    watched.isDenied,
		maxMountInformers: options.MaxMountInformers,
		routing:           options.Routing,
		heartbeatTimeout:  options.MountHeartbeatTimeout,
		now:               time.Now,
	}

	if options.Routing.WorkspaceCondition {
		c.unavailable = newUnavailableGate(options.Routing.MaxUnavailable, options.Shard, c.countMounted, keyTenant(c.tenantOf), c.workspacesQueue.Add)
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

// Start runs the controller until ctx is done: it adds its event handlers to the informers, which replay every object
// they hold, so that everything is reconciled once.
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
	// The gate counts the Workspaces False or held before this leader.
	all, err := c.workspaceLister.List(labels.Everything())
	if err != nil {
		return err
	}
	c.unavailable.seed(all)
	defer c.unavailable.stop()
	if c.broadcaster != nil {
		// Shut down after the workers finished (deferred before them).
		defer c.broadcaster.Shutdown()
		if err := c.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			return err
		}
	}
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

// countMounted counts the mounted Workspaces of the shard.
func (c *Controller) countMounted() int {
	n := 0
	for _, obj := range c.workspaceIndexer.List() {
		if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok && c.rule.IsMounted(ws) {
			n++
		}
	}
	return n
}

// addHandlers adds the controller's event handlers to the informers; the function returned removes those added.
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
