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
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// DefaultMaxClusterMountInformers is the default of
// --max-cluster-mount-informers: how many full-object informers of a CRD
// resource in one cluster the controller runs.
const DefaultMaxClusterMountInformers = 500

// mountCaches are the caches of full mount objects workspacemounts-workspaces
// reads instead of a GET: one per bound resource across all clusters
// (kcp serves full objects at * for resource:identity), one per
// (CRD resource, cluster) pair that has an informer of its own. Their
// objects are trimmed to what the contract reads (trimFullMountObject).
type mountCaches struct {
	byKey keyed[mountCache] // by mountCacheKey
}

// mountCache is one full-object informer's cache.
type mountCache struct {
	store  cache.Store
	synced func() bool
}

// mountCacheKey names the cache of resource in cluster: "" for the cache
// across all clusters of a bound resource.
func mountCacheKey(cluster logicalcluster.Name, resource restmapping.Resource) string {
	return cluster.String() + "|" + resource.Key()
}

// cacheOf returns the synced cache holding resource's objects in cluster, if
// any, and whether it is the cache across all clusters, keyed with the
// cluster (kcpcache.ToClusterAwareKey); a pair's own is keyed
// namespace/name (newClusterMountInformer).
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

// hasSynced tells whether a synced cache holds resource's objects in
// cluster: its own informer reports their changes.
func (c *mountCaches) hasSynced(cluster logicalcluster.Name, resource restmapping.Resource) bool {
	_, _, found := c.cacheOf(cluster, resource)
	return found
}

// get reads a mount object from the caches, only ever in cluster, the
// Workspace's own (the key is the cluster kcp stored the object in). cached
// is false when no synced cache holds the resource in cluster: the caller
// reads the object from kcp. found is false for an object the synced cache
// does not hold.
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

// startFullInformer runs a full-object informer of resource, at * (cluster
// "") for a bound resource under its identity, else in one cluster, until
// the returned function is called. Its cache is in caches under
// mountCacheKey(cluster, resource) while it runs; every add, update and
// delete goes to onEvent, and onSynced is called once it has synced
// (runMountInformer). Each of its lists is bounded as bound says.
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
	lw := &cache.ListWatch{
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
	}
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

// listBound bounds each list of a full-object informer (a page of it) to
// timeout, 0 for none, and reports each list's outcome to listed, if not
// nil: a pair's informer that cannot list is what opens its breaker
// (mountBreaker), as a GET that times out does. Its watch is not bounded:
// it lives long, and kcp ends it.
type listBound struct {
	timeout time.Duration
	listed  func(err error)
}

// newClusterMountInformer is an informer of the mount objects of resource
// in one cluster, kept as trimFullMountObject trims them, reporting every
// add, update and delete to onEvent (handlerForAll). It is client-go's
// plain informer, not a shared one: there can be hundreds (one per
// (CRD resource, cluster) pair in use), each with one handler, and a shared
// informer's distribution (two goroutines and a 1,024-event buffer per
// handler, a processor goroutine) costs about 21 KB of heap and three
// goroutines each (BenchmarkClusterMountInformer). The handler runs on the
// informer's own loop, after the store has the change, as with a shared
// informer. Its store is keyed namespace/name.
func newClusterMountInformer(lw *cache.ListWatch, cluster logicalcluster.Name, resource restmapping.Resource,
	onEvent func(restmapping.Resource, interface{})) (cache.Store, cache.Controller) {
	return cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &unstructured.Unstructured{},
		Handler:       handlerForAll(func(obj interface{}) { onEvent(resource, obj) }),
		Transform: func(obj interface{}) (interface{}, error) {
			trimmed, err := trimFullMountObject(obj)
			if t, ok := trimmed.(*trimmedMountObject); ok {
				t.cluster = cluster // listed in that cluster: its cluster, whatever the object says
			}
			return trimmed, err
		},
	})
}

// mountInformer is what runMountInformer runs: a shared informer or a
// plain one.
type mountInformer interface {
	RunWithContext(ctx context.Context)
	HasSyncedChecker() cache.DoneChecker
}

// newMountInformer is an informer of mount objects of resource listed and
// watched by lw, objects of type objType kept as transform trims them,
// reporting every add, update and delete to onEvent (handlerForAll: not an
// update that changes nothing, as a relist reports every object again).
func newMountInformer(lw *cache.ListWatch, objType runtime.Object, transform cache.TransformFunc,
	resource restmapping.Resource, onEvent func(restmapping.Resource, interface{})) (cache.SharedIndexInformer, error) {
	informer := kcpinformers.NewSharedIndexInformer(lw, objType, 0, cache.Indexers{})
	if err := informer.SetTransform(transform); err != nil {
		return nil, err
	}
	if _, err := informer.AddEventHandler(handlerForAll(func(obj interface{}) { onEvent(resource, obj) })); err != nil {
		return nil, err
	}
	return informer, nil
}

// runMountInformer runs a mount object informer until the returned
// function is called, and calls onSynced once its cache has synced (never
// if it is stopped first). The Workspaces it covers must then be read again:
// a read made before the informer listed may have seen an object that was
// gone by its list, and no event ever reports that. (The metadata
// informer's delete is dropped once a cluster's full-object cache has
// synced; that cache never held the object.)
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

// trimFullMountObject is the full-object informers' transform: it keeps of
// a mount object only what the contract reads (statusOfMountObject) and
// what the cache needs, in a trimmedMountObject: name, namespace, uid,
// resourceVersion, the cluster, whether it is marked as a mount object (of
// its annotations, mount.IsMountAnnotationKey alone, as a bool), and
// status.phase, status.URL and, of a marked one, status.conditions, already
// bounded as the contract bounds them, and, of every one, what the heartbeat
// rule reads (heartbeatOf: the newest heartbeat, its field, the first field
// that is not a time; 16 bytes, for an object that has any). A tenant's megabytes of spec or
// status stay out of memory, and no map is kept per object.
func trimFullMountObject(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // a tombstone, or trimmed already
	}
	t := &trimmedMountObject{cluster: logicalcluster.From(u), marked: mount.IsMarked(u.GetAnnotations())}
	t.Name, t.Namespace, t.UID, t.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	switch status := u.Object["status"].(type) {
	case nil:
	case map[string]interface{}:
		t.status = fieldPresent
		if phase, present := status["phase"]; present {
			t.phase = fieldNotString // null too
			if phase, ok := phase.(string); ok {
				// Compared with the four phases, quoted at most 64 bytes long.
				t.phase, t.phaseValue = fieldPresent, mount.Truncate(phase, 2*maxQuotedPhase)
			}
		}
		if rawURL, ok := status["URL"].(string); ok {
			t.url = mount.Truncate(mount.Sanitize(rawURL), mount.MaxURL)
		}
		if t.marked {
			t.conditions = conditionsOf(u) // an unmarked object's are never published
		}
		if h := heartbeatOf(status); h != (heartbeat{}) {
			t.heartbeat = &h
		}
	default:
		t.status = fieldNotObject
	}
	return t, nil
}

// maxQuotedPhase is how much of an unknown phase a message quotes (mount.Quote).
const maxQuotedPhase = 64

// fieldState is whether a field of a mount object's status is there, and of
// the type the contract reads.
type fieldState uint8

const (
	fieldAbsent fieldState = iota
	fieldPresent
	// fieldNotString is a phase that is not a string.
	fieldNotString
	// fieldNotObject is a status that is not an object.
	fieldNotObject
)

// trimmedMountObject is what a full-object informer keeps of a mount
// object: ObjectMeta holds only name, namespace, uid and resourceVersion,
// cluster the cluster kcp stored it in (its annotation, for the cache key).
type trimmedMountObject struct {
	metav1.ObjectMeta
	cluster    logicalcluster.Name
	marked     bool
	status     fieldState
	phase      fieldState
	phaseValue string
	// url is status.URL, "" if absent or not a string: the contract reads
	// all three alike.
	url        string
	conditions []mount.Condition
	// heartbeat is nil for an object without any (heartbeatOf): most
	// objects pay 8 bytes for it, and the object stays in its size class.
	heartbeat *heartbeat
}

// GetAnnotations is the cluster annotation, the one the cache keys and
// event handlers read, and the mark of a mount object if it carries it.
func (t *trimmedMountObject) GetAnnotations() map[string]string {
	annotations := map[string]string{logicalcluster.AnnotationKey: t.cluster.String()}
	if t.marked {
		annotations[mount.IsMountAnnotationKey] = mount.IsMountAnnotationValue
	}
	return annotations
}

// GetObjectKind and DeepCopyObject make it a runtime.Object.
func (t *trimmedMountObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (t *trimmedMountObject) DeepCopyObject() runtime.Object {
	out := *t
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.conditions = append([]mount.Condition(nil), t.conditions...)
	if t.heartbeat != nil {
		h := *t.heartbeat
		out.heartbeat = &h
	}
	return &out
}

// unstructured rebuilds the mount object as statusOfMountObject reads it:
// the contract answers the same for it as for the object kcp served.
func (t *trimmedMountObject) unstructured() *unstructured.Unstructured {
	annotations := map[string]interface{}{}
	for key, value := range t.GetAnnotations() {
		annotations[key] = value
	}
	metadata := map[string]interface{}{"name": t.Name, "annotations": annotations}
	setNonEmpty(metadata, "namespace", t.Namespace)
	setNonEmpty(metadata, "uid", string(t.UID))
	setNonEmpty(metadata, "resourceVersion", t.ResourceVersion)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": metadata}}
	switch t.status {
	case fieldNotObject:
		obj.Object["status"] = false
	case fieldPresent:
		status := map[string]interface{}{}
		switch t.phase {
		case fieldPresent:
			status["phase"] = t.phaseValue
		case fieldNotString:
			status["phase"] = false
		}
		if t.url != "" {
			status["URL"] = t.url
		}
		if len(t.conditions) > 0 {
			items := make([]interface{}, 0, len(t.conditions))
			for _, c := range t.conditions {
				item := map[string]interface{}{"type": c.Type}
				setNonEmpty(item, "status", c.Status)
				setNonEmpty(item, "reason", c.Reason)
				setNonEmpty(item, "message", c.Message)
				items = append(items, item)
			}
			status["conditions"] = items
		}
		if t.heartbeat != nil {
			t.heartbeat.restore(status)
		}
		obj.Object["status"] = status
	}
	return obj
}

func setNonEmpty(m map[string]interface{}, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// clusterMountInformers runs the full-object informers of CRD resources,
// one per (resource, cluster) pair in use, and at most limit of them: kcp
// serves a CRD resource across clusters only as metadata, so a full object
// is only to be had in its cluster. A pair beyond the limit has its
// resource's metadata informer run (informersAcrossClusters) and a GET per
// change: correct, only costlier. A running informer keeps its slot while
// its pair is in use, as in mountInformers.
type clusterMountInformers struct {
	limit int
	// shard names the controller's shard in the metrics ("" with one).
	shard string
	start func(ctx context.Context, pair clusterResource) (stop func(), err error)

	lock    sync.Mutex
	running map[string]func() // by mountCacheKey
	// overLimit is how many wanted pairs the last sync left without an informer.
	overLimit int
}

// clusterResource is a CRD resource in one cluster, with how many Workspaces there mount it.
type clusterResource struct {
	cluster    logicalcluster.Name
	resource   restmapping.Resource
	workspaces int
}

// newClusterMountInformers reports every informer's events to onEvent, and
// its pair to onSynced once it has synced; bound, if not nil, bounds each
// pair's lists.
func newClusterMountInformers(client kcpdynamic.ClusterInterface, caches *mountCaches, limit int, shard string,
	onEvent func(restmapping.Resource, interface{}), onSynced func(cluster logicalcluster.Name, resource restmapping.Resource),
	bound func(cluster logicalcluster.Name, resource restmapping.Resource) listBound) *clusterMountInformers {
	return &clusterMountInformers{
		limit: limit,
		shard: shard,
		start: func(ctx context.Context, pair clusterResource) (func(), error) {
			var lists listBound
			if bound != nil {
				lists = bound(pair.cluster, pair.resource)
			}
			return startFullInformer(ctx, client, caches, pair.cluster, pair.resource, onEvent, func() { onSynced(pair.cluster, pair.resource) }, lists)
		},
		running: map[string]func(){},
	}
}

// sync makes the running informers the wanted pairs' as far as the limit
// allows: it stops those of pairs no longer wanted, keeps the others, and
// starts wanted ones, those mounted by the most Workspaces first, while
// fewer than limit run. It returns the wanted pairs left without an
// informer: beyond the limit, or whose informer cannot start.
func (m *clusterMountInformers) sync(ctx context.Context, wanted []clusterResource) (uncovered []clusterResource) {
	logger := klog.FromContext(ctx)
	m.lock.Lock()
	defer m.lock.Unlock()

	// Each pair's key once: the sort compares them, and the loops below look them up.
	type keyedPair struct {
		clusterResource
		key string
	}
	pairs := make([]keyedPair, 0, len(wanted))
	wantedKeys := make(map[string]bool, len(wanted))
	for _, pair := range wanted {
		key := mountCacheKey(pair.cluster, pair.resource)
		pairs = append(pairs, keyedPair{clusterResource: pair, key: key})
		wantedKeys[key] = true
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].workspaces != pairs[j].workspaces {
			return pairs[i].workspaces > pairs[j].workspaces
		}
		return pairs[i].key < pairs[j].key
	})
	for key, stop := range m.running {
		if !wantedKeys[key] {
			logger.V(2).Info("stopping mount object informer of a cluster, no Workspace there mounts its resource any more", "resource", key)
			stop()
			delete(m.running, key)
		}
	}
	overLimit := 0
	for _, pair := range pairs {
		key := pair.key
		if _, found := m.running[key]; found {
			continue
		}
		if len(m.running) >= m.limit {
			overLimit++
			uncovered = append(uncovered, pair.clusterResource)
			continue
		}
		logger.V(2).Info("starting mount object informer of a cluster", "resource", key)
		stop, err := m.start(ctx, pair.clusterResource)
		if err != nil {
			logger.Error(err, "cannot watch mount objects in a cluster", "resource", key)
			uncovered = append(uncovered, pair.clusterResource)
			continue
		}
		m.running[key] = stop
	}
	if overLimit > 0 && m.overLimit == 0 {
		logger.Info("--max-cluster-mount-informers reached: the mount objects of the pairs beyond it are read with a GET per change, "+
			"on their resource's metadata events",
			"limit", m.limit, "overLimit", overLimit)
	}
	m.overLimit = overLimit
	metrics.SetClusterMountInformers(m.shard, len(m.running), overLimit)
	return uncovered
}
