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

package server

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpsdkinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/pagedlist"
)

// usePagedInformers makes the factories' informers of the kinds the parts
// cache list through [pagedlist.Trimmed] with transform, the factories' own,
// so that no list holds every full object at once; the factories' informers
// are otherwise the generated ones, with the cluster index alone: every kind
// is cluster-scoped, and kcp's listers read the other for namespaces only.
func usePagedInformers(kcp kcpsdkinformers.SharedInformerFactory, apiExtensions kcpapiextensionsinformers.SharedInformerFactory, transform cache.TransformFunc) {
	kcp.InformerFor(&tenancyv1alpha1.Workspace{}, func(c kcpclientset.ClusterInterface, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
		r := c.TenancyV1alpha1().Workspaces()
		return pagedInformer(&tenancyv1alpha1.Workspace{}, listWatch(c, r.List, r.Watch), transform, resync)
	})
	kcp.InformerFor(&corev1alpha1.LogicalCluster{}, func(c kcpclientset.ClusterInterface, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
		r := c.CoreV1alpha1().LogicalClusters()
		return pagedInformer(&corev1alpha1.LogicalCluster{}, listWatch(c, r.List, r.Watch), transform, resync)
	})
	kcp.InformerFor(&apisv1alpha1.APIBinding{}, func(c kcpclientset.ClusterInterface, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
		r := c.ApisV1alpha1().APIBindings()
		return pagedInformer(&apisv1alpha1.APIBinding{}, listWatch(c, r.List, r.Watch), transform, resync)
	})
	kcp.InformerFor(&apisv1alpha1.APIResourceSchema{}, func(c kcpclientset.ClusterInterface, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
		r := c.ApisV1alpha1().APIResourceSchemas()
		return pagedInformer(&apisv1alpha1.APIResourceSchema{}, listWatch(c, r.List, r.Watch), transform, resync)
	})
	if apiExtensions == nil {
		return
	}
	apiExtensions.InformerFor(&apiextensionsv1.CustomResourceDefinition{},
		func(c kcpapiextensionsclientset.ClusterInterface, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
			r := c.ApiextensionsV1().CustomResourceDefinitions()
			return pagedInformer(&apiextensionsv1.CustomResourceDefinition{}, listWatch(c, r.List, r.Watch), transform, resync)
		})
}

func pagedInformer(obj runtime.Object, lw cache.ListerWatcher, transform cache.TransformFunc, resync time.Duration) kcpcache.ScopeableSharedIndexInformer {
	return kcpinformers.NewSharedIndexInformer(pagedlist.Trimmed(lw, transform), obj, resync, CacheIndexers())
}

// CacheIndexers are the indexes of the informers of the kinds the parts cache.
func CacheIndexers() cache.Indexers {
	return cache.Indexers{kcpcache.ClusterIndexName: kcpcache.ClusterIndexFunc}
}

// listWatch lists and watches with a cluster client's list and watch, and
// streams initial lists where client can, as the generated informers do.
func listWatch[L runtime.Object](client any, list func(context.Context, metav1.ListOptions) (L, error),
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, options)
		},
		WatchFuncWithContext: watch,
	}, client)
}
