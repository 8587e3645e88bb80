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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/pagedlist"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// DefaultMaxClusterMountInformers is the default of --max-cluster-mount-informers: how many full-object informers of a
// CRD resource in one cluster the controller runs.
const DefaultMaxClusterMountInformers = 500

// mountCaches are the caches of full mount objects workspacemounts-workspaces reads instead of a GET.
type mountCaches struct {
	byKey keyed[mountCache] // by mountCacheKey
}

// mountCache is one full-object informer's cache.
type mountCache struct {
	store  cache.Store
	synced func() bool
}

// mountCacheKey names the cache of resource in cluster: "" for the cache across all clusters of a bound resource.
func mountCacheKey(cluster logicalcluster.Name, resource restmapping.Resource) string {
	return cluster.String() + "|" + resource.Key()
}

// cacheOf returns the synced cache holding resource's objects in cluster, if any, and whether it is the cache across
// all clusters, keyed with the cluster; a pair's own is keyed namespace/name.
func (c *mountCaches) cacheOf(cluster logicalcluster.Name, resource restmapping.Resource) (mc mountCache, acrossClusters, found bool) {
	mc, found = c.byKey.get(mountCacheKey(cluster, resource))
	if !found && resource.Identity != "" {
		mc, found = c.byKey.get(mountCacheKey("", resource))
		acrossClusters = true
	}
	if !found || !mc.synced() {
		return mountCache{}, false, false
	}
	return mc, acrossClusters, true
}

// hasSynced tells whether a synced cache holds resource's objects in cluster: its own informer reports their changes.
func (c *mountCaches) hasSynced(cluster logicalcluster.Name, resource restmapping.Resource) bool {
	_, _, found := c.cacheOf(cluster, resource)
	return found
}

// get reads a mount object from the caches, only ever in cluster, the Workspace's own (the key is the cluster kcp
// stored the object in). cached is false when no synced cache holds the resource in cluster.
func (c *mountCaches) get(cluster logicalcluster.Name, resource restmapping.Resource, namespace, name string) (obj *unstructured.Unstructured, found, cached bool) {
	mc, acrossClusters, cached := c.cacheOf(cluster, resource)
	if !cached {
		return nil, false, false
	}
	key := cache.NewObjectName(namespace, name).String()
	if acrossClusters {
		key = kcpcache.ToClusterAwareKey(cluster.String(), namespace, name)
	}
	item, found, err := mc.store.GetByKey(key)
	if err != nil {
		return nil, false, false
	}
	if !found {
		return nil, false, true
	}
	t, ok := item.(*trimmedMountObject)
	if !ok {
		return nil, false, false
	}
	return t.unstructured(), true, true
}

// startFullInformer runs a full-object informer of resource, at * (cluster "") for a bound resource under its identity,
// else in one cluster, until the returned function is called.
func startFullInformer(ctx context.Context, client kcpdynamic.ClusterInterface, caches *mountCaches, cluster logicalcluster.Name,
	resource restmapping.Resource, onEvent func(restmapping.Resource, interface{}), onSynced func(), bound listBound) (func(), error) {
	var resourceClient interface {
		List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	}
	if cluster == "" {
		resourceClient = client.Resource(resource.WildcardResource())
	} else {
		resourceClient = client.Cluster(cluster.Path()).Resource(resource.GroupVersionResource)
	}
	lw := listOnly{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			if bound.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, bound.timeout)
				defer cancel()
			}
			list, err := resourceClient.List(ctx, options)
			if bound.listed != nil && ctx.Err() != context.Canceled {
				bound.listed(err)
			}
			return list, err
		},
		WatchFuncWithContext: resourceClient.Watch,
	}}
	var mc mountCache
	var informer mountInformer
	if cluster == "" {
		shared, err := newMountInformer(lw, &unstructured.Unstructured{}, trimFullMountObject, resource, onEvent)
		if err != nil {
			return nil, err
		}
		informer, mc = shared, mountCache{store: shared.GetIndexer(), synced: shared.HasSynced}
	} else {
		store, controller := newClusterMountInformer(lw, cluster, resource, onEvent)
		informer, mc = controller, mountCache{store: store, synced: controller.HasSynced}
	}
	key := mountCacheKey(cluster, resource)
	caches.byKey.put(key, mc)
	stop := runMountInformer(ctx, informer, onSynced)
	return func() {
		caches.byKey.forget(key)
		stop()
	}, nil
}

// listBound bounds each list of a full-object informer (a page of it) to timeout, 0 for none, and reports each list's
// outcome to listed, if not nil.
type listBound struct {
	timeout time.Duration
	listed  func(err error)
}

// listOnly makes a reflector list, page by page, rather than stream an initial list, so that [listBound] bounds and
// reports every initial list and relist.
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// newClusterMountInformer is an informer of the mount objects of resource in one cluster, listed through
// [pagedlist.Trimmed] and kept as [trimFullMountObject] trims them, reporting every add, update and delete to onEvent.
func newClusterMountInformer(lw cache.ListerWatcher, cluster logicalcluster.Name, resource restmapping.Resource,
	onEvent func(restmapping.Resource, interface{})) (cache.Store, cache.Controller) {
	transform := func(obj interface{}) (interface{}, error) {
		trimmed, err := trimFullMountObject(obj)
		if t, ok := trimmed.(*trimmedMountObject); ok {
			t.cluster = cluster // listed in that cluster: its cluster, whatever the object says
		}
		return trimmed, err
	}
	return cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: pagedlist.Trimmed(lw, transform),
		ObjectType:    &unstructured.Unstructured{},
		Handler:       handlerForAll(func(obj interface{}) { onEvent(resource, obj) }),
		Transform:     transform,
	})
}

// mountInformer is what [runMountInformer] runs: a shared informer or a plain one.
type mountInformer interface {
	RunWithContext(ctx context.Context)
	HasSyncedChecker() cache.DoneChecker
}

// newMountInformer is an informer of mount objects of resource listed (through [pagedlist.Trimmed]) and watched by lw,
// objects of type objType kept as transform trims them, reporting every add, update and delete to onEvent.
func newMountInformer(lw cache.ListerWatcher, objType runtime.Object, transform cache.TransformFunc,
	resource restmapping.Resource, onEvent func(restmapping.Resource, interface{})) (cache.SharedIndexInformer, error) {
	informer := kcpinformers.NewSharedIndexInformer(pagedlist.Trimmed(lw, transform), objType, 0, cache.Indexers{})
	if err := informer.SetTransform(transform); err != nil {
		return nil, err
	}
	if _, err := informer.AddEventHandler(handlerForAll(func(obj interface{}) { onEvent(resource, obj) })); err != nil {
		return nil, err
	}
	return informer, nil
}

// runMountInformer runs a mount object informer until the returned function is called, and calls onSynced once its
// cache has synced (never if it is stopped first).
func runMountInformer(ctx context.Context, informer mountInformer, onSynced func()) context.CancelFunc {
	informerCtx, cancel := context.WithCancel(ctx)
	go informer.RunWithContext(informerCtx)
	go func() {
		select {
		case <-informer.HasSyncedChecker().Done():
			if informerCtx.Err() == nil {
				onSynced()
			}
		case <-informerCtx.Done():
		}
	}()
	return cancel
}
