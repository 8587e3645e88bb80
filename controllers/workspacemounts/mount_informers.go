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
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// mountInformers runs one metadata-only informer across all clusters per mount
// resource in use. Metadata is enough: kcp serves CRD-provided resources across
// clusters only as partial object metadata, and the resourceVersion changes on
// every status update, so an event says when to read the object again.
type mountInformers struct {
	client kcpmetadata.ClusterInterface
	// onEvent is called for every add, update and delete of a mount object.
	onEvent func(resource restmapping.Resource, obj interface{})

	lock    sync.Mutex
	running map[string]*runningInformer
}

type runningInformer struct {
	resource restmapping.Resource
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

func newMountInformers(client kcpmetadata.ClusterInterface, onEvent func(restmapping.Resource, interface{})) *mountInformers {
	return &mountInformers{client: client, onEvent: onEvent, running: map[string]*runningInformer{}}
}

// sync makes the running informers exactly the wanted ones, keyed by
// restmapping.Resource.Key.
func (m *mountInformers) sync(ctx context.Context, wanted map[string]restmapping.Resource) {
	logger := klog.FromContext(ctx)
	m.lock.Lock()
	defer m.lock.Unlock()

	for key, running := range m.running {
		if _, found := wanted[key]; !found {
			logger.V(2).Info("stopping mount object informer, no Workspace references its kind any more", "resource", key)
			running.cancel()
			delete(m.running, key)
		}
	}
	for key, resource := range wanted {
		if _, found := m.running[key]; found {
			continue
		}
		logger.V(2).Info("starting mount object informer", "resource", key)
		informer := newMetadataInformer(m.client, resource)
		_ = informer.SetTransform(trimMountObject)
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { m.onEvent(resource, obj) },
			UpdateFunc: func(_, obj interface{}) { m.onEvent(resource, obj) },
			DeleteFunc: func(obj interface{}) { m.onEvent(resource, obj) },
		}); err != nil {
			logger.Error(err, "cannot watch mount objects", "resource", key)
			continue
		}
		informerCtx, cancel := context.WithCancel(ctx)
		go informer.RunWithContext(informerCtx)
		m.running[key] = &runningInformer{resource: resource, informer: informer, cancel: cancel}
	}
	metrics.MountKindsWatched.Set(float64(len(m.running)))
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

// trimMountObject is the mount object informers' transform: events only say
// which object to read again, so only its name, namespace and cluster matter.
func trimMountObject(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
		accessor.SetLabels(nil)
		accessor.SetOwnerReferences(nil)
		accessor.SetFinalizers(nil)
		accessor.SetAnnotations(map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(accessor).String()})
	}
	return obj, nil
}
