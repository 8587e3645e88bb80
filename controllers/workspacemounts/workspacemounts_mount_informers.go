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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
	"github.com/workspacemounts/workspacemounts/pkg/share"
)

// mountInformers holds at most limit slots for the mount resources in use, and runs the informer across all clusters of
// each watched resource that needs one ([informersAcrossClusters]).
type mountInformers struct {
	pool  *boundedPool[restmapping.Resource]
	shard string
	// denied are the keys the last sync left without a slot; under pool.lock.
	denied map[string]bool
}

// newMountInformers starts, per resource, a full-object informer across all clusters for a bound one (its cache in
// caches), else a metadata informer.
func newMountInformers(metadataClient kcpmetadata.ClusterInterface, dynamicClient kcpdynamic.ClusterInterface, caches *mountCaches,
	limit int, shard string, onEvent func(restmapping.Resource, interface{}), onSynced func(restmapping.Resource)) *mountInformers {
	return &mountInformers{
		shard:  shard,
		denied: map[string]bool{},
		pool: newBoundedPool(limit, restmapping.Resource.Key, func(ctx context.Context, resource restmapping.Resource) (func(), error) {
			synced := func() { onSynced(resource) }
			if resource.Identity != "" {
				return startFullInformer(ctx, dynamicClient, caches, "", resource, onEvent, synced, listBound{})
			}
			return startMetadataInformer(ctx, metadataClient, resource, onEvent, synced)
		}),
	}
}

// sync gives the wanted resources slots, in order, and returns the keys of those denied one; the caller must not modify
// it.
func (m *mountInformers) sync(ctx context.Context, wanted []restmapping.Resource) map[string]bool {
	m.pool.lock.Lock()
	defer m.pool.lock.Unlock()
	deniedResources, _ := m.pool.allot(ctx, wanted, false)
	denied := make(map[string]bool, len(deniedResources))
	for _, resource := range deniedResources {
		key := resource.Key()
		if !m.denied[key] {
			klog.FromContext(ctx).Info("not watching a mount resource: --max-mount-informers reached; its Workspaces get reason "+mount.ReasonMountInformerLimitReached,
				"resource", key, "limit", m.pool.limit)
		}
		denied[key] = true
	}
	m.denied = denied
	metrics.SetMountInformers(m.shard, len(m.pool.slots), len(denied))
	return denied
}

// run runs the informer across all clusters of every watched resource in needed and stops the others'.
func (m *mountInformers) run(ctx context.Context, needed map[string]bool) {
	m.pool.lock.Lock()
	defer m.pool.lock.Unlock()
	for key, slot := range m.pool.slots {
		switch {
		case needed[key] && slot.stop == nil:
			m.pool.run(ctx, key, slot)
		case !needed[key] && slot.stop != nil:
			klog.FromContext(ctx).V(2).Info("stopping mount object informer, every cluster mounting its resource has an informer of its own", "resource", key)
			slot.stop()
			slot.stop = nil
		}
	}
	metrics.SetMountInformers(m.shard, len(m.pool.slots), len(m.denied))
}

// isDenied tells whether the resource was left unwatched by the last sync.
func (m *mountInformers) isDenied(resource restmapping.Resource) bool {
	m.pool.lock.Lock()
	defer m.pool.lock.Unlock()
	return m.denied[resource.Key()]
}

// informersAcrossClusters is the rule for the informers across all clusters: every watched bound resource (wanted, not
// denied) has one, its full objects read instead of a GET.
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

// startMetadataInformer runs an informer of the resource's metadata across all clusters.
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

// clusterAnnotations shares the annotations of the mount objects of a cluster: only its name.
var clusterAnnotations = share.New()

// TrimMountObject is the transform of the metadata informer of a CRD mount resource across all clusters: its events
// only say which object to read again, so it keeps only the name, namespace and cluster, and the resourceVersion the
// informer compares, in a [mountObjectMeta].
func TrimMountObject(obj interface{}) (interface{}, error) {
	if _, trimmed := obj.(*mountObjectMeta); trimmed {
		return obj, nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil //nolint:nilerr // a tombstone, kept as it is
	}
	return &mountObjectMeta{metav1.ObjectMeta{
		Name: accessor.GetName(), Namespace: accessor.GetNamespace(), ResourceVersion: accessor.GetResourceVersion(),
		Annotations: clusterAnnotations.Map(map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(accessor).String()}),
	}}, nil
}

// mountObjectMeta is what the metadata informer keeps of a mount object.
type mountObjectMeta struct{ metav1.ObjectMeta }

func (*mountObjectMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (m *mountObjectMeta) DeepCopyObject() runtime.Object {
	out := &mountObjectMeta{}
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}
