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
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// mountInformers decides which mount resources in use are watched, at most
// limit of them, and runs the informer across all clusters of each watched
// resource that needs one (informersAcrossClusters): for a bound resource a
// full-object one (kcp serves full objects at * under resource:identity),
// which workspacemounts-workspaces reads instead of a GET; for a CRD resource
// a metadata-only one (kcp serves CRD resources across clusters only as
// partial object metadata), while some cluster mounting it has no
// full-object informer of its own (clusterMountInformers): the
// resourceVersion changes on every status update, so an event says when to
// read that cluster's object again, with a GET.
//
// The limit is what keeps a tenant from making the plugin watch a thousand
// resources shard-wide by creating a thousand CRDs and mounting each: a
// resource beyond it is denied, and its Workspaces say so
// (mount.ReasonMountInformerLimitReached). A watched resource keeps its slot
// while it is in use; a slot frees when no Workspace uses its resource any
// more, and goes to the first denied resource in the order sync is given.
type mountInformers struct {
	limit int
	// shard names the controller's shard in the metrics ("" with one).
	shard string
	// start starts the informer across all clusters of a resource; stop it
	// with the returned function.
	start func(ctx context.Context, resource restmapping.Resource) (stop func(), err error)

	lock sync.Mutex
	// watched are the resources holding a slot, by restmapping.Resource.Key,
	// with the stop function of their informer across all clusters, nil
	// while none runs.
	watched map[string]*watchedResource
	denied  map[string]bool
}

type watchedResource struct {
	resource restmapping.Resource
	stop     func()
}

// newMountInformers starts, per resource, a full-object informer across all
// clusters for a bound one (its cache in caches), else a metadata informer.
// Both report their events to onEvent, and their resource to onSynced once
// they have synced.
func newMountInformers(metadataClient kcpmetadata.ClusterInterface, dynamicClient kcpdynamic.ClusterInterface, caches *mountCaches,
	limit int, shard string, onEvent func(restmapping.Resource, interface{}), onSynced func(restmapping.Resource)) *mountInformers {
	return &mountInformers{
		limit: limit,
		shard: shard,
		start: func(ctx context.Context, resource restmapping.Resource) (func(), error) {
			synced := func() { onSynced(resource) }
			if resource.Identity != "" {
				return startFullInformer(ctx, dynamicClient, caches, "", resource, onEvent, synced, listBound{})
			}
			return startMetadataInformer(ctx, metadataClient, resource, onEvent, synced)
		},
		watched: map[string]*watchedResource{},
		denied:  map[string]bool{},
	}
}

// sync makes the watched resources the wanted ones as far as the limit
// allows: it stops watching those no longer wanted, keeps the others, and
// watches wanted ones in the order given while fewer than limit are. It
// returns the keys (restmapping.Resource.Key) of the wanted resources left
// unwatched; the caller must not modify it. It starts no informer: run does.
func (m *mountInformers) sync(ctx context.Context, wanted []restmapping.Resource) map[string]bool {
	logger := klog.FromContext(ctx)
	m.lock.Lock()
	defer m.lock.Unlock()

	wantedKeys := make(map[string]bool, len(wanted))
	for _, resource := range wanted {
		wantedKeys[resource.Key()] = true
	}
	for key, w := range m.watched {
		if !wantedKeys[key] {
			if w.stop != nil {
				logger.V(2).Info("stopping mount object informer, no Workspace references its kind any more", "resource", key)
				w.stop()
			}
			delete(m.watched, key)
		}
	}
	denied := map[string]bool{}
	for _, resource := range wanted {
		key := resource.Key()
		if _, found := m.watched[key]; found || denied[key] {
			continue
		}
		if len(m.watched) >= m.limit {
			if !m.denied[key] {
				logger.Info("not watching a mount resource: --max-mount-informers reached; its Workspaces get reason "+mount.ReasonMountInformerLimitReached,
					"resource", key, "limit", m.limit)
			}
			denied[key] = true
			continue
		}
		m.watched[key] = &watchedResource{resource: resource}
	}
	m.denied = denied
	metrics.SetMountInformers(m.shard, len(m.watched), len(denied))
	return denied
}

// run runs the informer across all clusters of every watched resource in
// needed (informersAcrossClusters), and stops those of the others. A
// resource whose informer cannot start gives up its slot until the next
// sync, as if it had not been wanted.
func (m *mountInformers) run(ctx context.Context, needed map[string]bool) {
	logger := klog.FromContext(ctx)
	m.lock.Lock()
	defer m.lock.Unlock()

	for key, w := range m.watched {
		switch {
		case needed[key] && w.stop == nil:
			logger.V(2).Info("starting mount object informer", "resource", key)
			stop, err := m.start(ctx, w.resource)
			if err != nil {
				logger.Error(err, "cannot watch mount objects", "resource", key)
				delete(m.watched, key)
				continue
			}
			w.stop = stop
		case !needed[key] && w.stop != nil:
			logger.V(2).Info("stopping mount object informer, every cluster mounting its resource has an informer of its own", "resource", key)
			w.stop()
			w.stop = nil
		}
	}
	metrics.SetMountInformers(m.shard, len(m.watched), len(m.denied))
}

// isDenied tells whether the resource was left unwatched by the last sync.
func (m *mountInformers) isDenied(resource restmapping.Resource) bool {
	m.lock.Lock()
	defer m.lock.Unlock()
	return m.denied[resource.Key()]
}

// informersAcrossClusters is the rule for the informers across all
// clusters: every watched bound resource (wanted, not denied) has one, its
// full objects read instead of a GET; a CRD resource has its metadata one
// only while some pair of it in use has no full-object informer of its own
// (uncovered): its events say when to read that pair's objects again. A CRD
// resource whose every pair has its own informer needs none (each reports
// its cluster's changes), which spares the metadata of all its objects.
func informersAcrossClusters(wanted []restmapping.Resource, denied map[string]bool, uncovered []clusterResource) map[string]bool {
	needed := map[string]bool{}
	for _, resource := range wanted {
		if resource.Identity != "" && !denied[resource.Key()] {
			needed[resource.Key()] = true
		}
	}
	for _, pair := range uncovered {
		needed[pair.resource.Key()] = true
	}
	return needed
}

// startMetadataInformer runs an informer of the resource's metadata across
// all clusters (newMountInformer, runMountInformer). (client-go's
// metadatainformer declares Unstructured as its object type, and its
// reflector then drops every watch event.)
func startMetadataInformer(ctx context.Context, client kcpmetadata.ClusterInterface, resource restmapping.Resource,
	onEvent func(restmapping.Resource, interface{}), onSynced func()) (func(), error) {
	resourceClient := client.Resource(resource.WildcardResource())
	informer, err := newMountInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return resourceClient.List(ctx, options)
		},
		WatchFuncWithContext: resourceClient.Watch,
	}, &metav1.PartialObjectMetadata{}, TrimMountObject, resource, onEvent)
	if err != nil {
		return nil, err
	}
	return runMountInformer(ctx, informer, onSynced), nil
}

// TrimMountObject is the transform of the metadata informer of a CRD mount
// resource across all clusters: its events only say which object to read
// again, so only its name, namespace and cluster matter. (Exported for
// test/bench/scale, which measures that informer.)
func TrimMountObject(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
		accessor.SetLabels(nil)
		accessor.SetOwnerReferences(nil)
		accessor.SetFinalizers(nil)
		accessor.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(accessor).String()})
	}
	return obj, nil
}
