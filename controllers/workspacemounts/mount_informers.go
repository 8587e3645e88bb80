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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// mountInformers runs one informer across all clusters per mount resource in
// use, and at most limit of them: for a bound resource a full-object one
// (kcp serves full objects at * under resource:identity), which the
// workspaces queue reads instead of a GET; for a CRD resource a
// metadata-only one (kcp serves CRD resources across clusters only as
// partial object metadata): the resourceVersion changes on every status
// update, so an event says when to read the object again, from the pair's
// own informer (clusterMountInformers) or with a GET.
//
// The limit is what keeps a tenant from making the plugin watch a thousand
// resources shard-wide by creating a thousand CRDs and mounting each: a
// resource beyond it is denied, and its Workspaces say so
// (mount.ReasonMountInformerLimitReached). A running informer keeps its slot
// while the resource is in use; a slot frees when no Workspace uses its
// resource any more, and goes to the first denied resource in the order sync
// is given.
type mountInformers struct {
	limit int
	// shard names the controller's shard in the metrics ("" with one).
	shard string
	// start starts an informer for a resource; stop it with the returned function.
	start func(ctx context.Context, resource restmapping.Resource) (stop func(), err error)

	lock    sync.Mutex
	running map[string]func() // by restmapping.Resource.Key, the stop function
	denied  map[string]bool
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
				return startFullInformer(ctx, dynamicClient, caches, "", resource, onEvent, synced)
			}
			return startMetadataInformer(ctx, metadataClient, resource, onEvent, synced)
		},
		running: map[string]func(){},
		denied:  map[string]bool{},
	}
}

// sync makes the running informers the wanted ones as far as the limit
// allows: it stops those no longer wanted, keeps the others running, and
// starts wanted ones in the order given while fewer than limit run. It returns
// the keys (restmapping.Resource.Key) of the wanted resources left without an
// informer; the caller must not modify it.
func (m *mountInformers) sync(ctx context.Context, wanted []restmapping.Resource) map[string]bool {
	logger := klog.FromContext(ctx)
	m.lock.Lock()
	defer m.lock.Unlock()

	wantedKeys := make(map[string]bool, len(wanted))
	for _, resource := range wanted {
		wantedKeys[resource.Key()] = true
	}
	for key, stop := range m.running {
		if !wantedKeys[key] {
			logger.V(2).Info("stopping mount object informer, no Workspace references its kind any more", "resource", key)
			stop()
			delete(m.running, key)
		}
	}
	denied := map[string]bool{}
	for _, resource := range wanted {
		key := resource.Key()
		if _, found := m.running[key]; found || denied[key] {
			continue
		}
		if len(m.running) >= m.limit {
			if !m.denied[key] {
				logger.Info("not watching a mount resource: --max-mount-informers reached; its Workspaces get reason "+mount.ReasonMountInformerLimitReached,
					"resource", key, "limit", m.limit)
			}
			denied[key] = true
			continue
		}
		logger.V(2).Info("starting mount object informer", "resource", key)
		stop, err := m.start(ctx, resource)
		if err != nil {
			logger.Error(err, "cannot watch mount objects", "resource", key)
			continue
		}
		m.running[key] = stop
	}
	m.denied = denied
	metrics.SetMountInformers(m.shard, len(m.running), len(denied))
	return denied
}

// isDenied tells whether the resource was left without an informer by the last sync.
func (m *mountInformers) isDenied(resource restmapping.Resource) bool {
	m.lock.Lock()
	defer m.lock.Unlock()
	return m.denied[resource.Key()]
}

// startMetadataInformer runs a metadata informer for the resource until the
// returned function is called, reporting every add, update and delete to
// onEvent, and calling onSynced once it has synced (runMountInformer).
func startMetadataInformer(ctx context.Context, client kcpmetadata.ClusterInterface, resource restmapping.Resource,
	onEvent func(restmapping.Resource, interface{}), onSynced func()) (func(), error) {
	informer := newMetadataInformer(client, resource)
	_ = informer.SetTransform(TrimMountObject)
	if _, err := informer.AddEventHandler(mountEventHandler(resource, onEvent)); err != nil {
		return nil, err
	}
	return runMountInformer(ctx, informer, onSynced), nil
}

// newMetadataInformer lists and watches the resource across all clusters as
// PartialObjectMetadata. (client-go's metadatainformer declares Unstructured
// as its object type, and its reflector then drops every watch event.)
func newMetadataInformer(client kcpmetadata.ClusterInterface, resource restmapping.Resource) cache.SharedIndexInformer {
	resourceClient := client.Resource(resource.WildcardResource())
	return kcpinformers.NewSharedIndexInformer(
		&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
				return resourceClient.List(ctx, options)
			},
			WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
				return resourceClient.Watch(ctx, options)
			},
		},
		&metav1.PartialObjectMetadata{},
		0,
		cache.Indexers{},
	)
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
