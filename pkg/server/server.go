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

// Package server runs workspacemounts: the informers across all logical
// clusters of a kcp shard, the controller that writes mount status
// annotations, and the virtual workspace that serves them, all in one process.
package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Run runs what the options ask for until ctx is done or a part fails.
func Run(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx)
	cfg, err := o.RestConfig()
	if err != nil {
		return err
	}
	tenancyIdentity, err := clients.TenancyIdentity(ctx, cfg)
	if err != nil {
		return fmt.Errorf("cannot list Workspaces across clusters: %w", err)
	}
	kcpClient, err := kcpclientset.NewForConfig(clients.WithWildcardIdentities(cfg, map[string]string{tenancyv1alpha1.SchemeGroupVersion.Group: tenancyIdentity}))
	if err != nil {
		return err
	}

	// Workspaces are read by both parts; CRDs, bindings and schemas only by
	// the controller, LogicalClusters only by the virtual workspace.
	kcpInformers := kcpinformers.NewSharedInformerFactoryWithOptions(kcpClient, 0, kcpinformers.WithTransform(trimForCache))
	workspaceInformer := kcpInformers.Tenancy().V1alpha1().Workspaces().Informer()
	metrics.Register()
	metrics.RegisterMountCollector(workspaceInformer.GetStore())
	synced := []cache.InformerSynced{workspaceInformer.HasSynced}
	var starters []func(<-chan struct{})
	starters = append(starters, kcpInformers.Start)

	group, ctx := errgroup.WithContext(ctx)
	var runController func(context.Context)
	if o.RunController {
		apiExtensionsClient, err := kcpapiextensionsclientset.NewForConfig(cfg)
		if err != nil {
			return err
		}
		dynamicClient, err := kcpdynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		metadataClient, err := kcpmetadata.NewForConfig(cfg)
		if err != nil {
			return err
		}
		apiExtensionsInformers := kcpapiextensionsinformers.NewSharedInformerFactoryWithOptions(apiExtensionsClient, 0, kcpapiextensionsinformers.WithTransform(trimForCache))
		informers := workspacemounts.Informers{
			Workspaces:         workspaceInformer,
			CRDs:               apiExtensionsInformers.Apiextensions().V1().CustomResourceDefinitions().Informer(),
			APIBindings:        kcpInformers.Apis().V1alpha1().APIBindings().Informer(),
			APIResourceSchemas: kcpInformers.Apis().V1alpha1().APIResourceSchemas().Informer(),
		}
		if err := workspacemounts.InstallIndexers(informers); err != nil {
			return err
		}
		controller, err := workspacemounts.NewController(workspacemounts.Clients{KCP: kcpClient, Dynamic: dynamicClient, Metadata: metadataClient}, informers,
			workspacemounts.Options{MaxMountInformers: o.MaxMountInformers})
		if err != nil {
			return err
		}
		synced = append(synced, informers.CRDs.HasSynced, informers.APIBindings.HasSynced, informers.APIResourceSchemas.HasSynced)
		starters = append(starters, apiExtensionsInformers.Start)
		runController = func(ctx context.Context) { controller.Start(ctx, o.WorkspaceWorkers) }
	}

	if o.RunVirtualWorkspace {
		logicalClusterInformer := kcpInformers.Core().V1alpha1().LogicalClusters().Informer()
		server, store, err := newVirtualWorkspace(ctx, o, cfg, workspaceInformer, logicalClusterInformer)
		if err != nil {
			return fmt.Errorf("virtual workspace: %w", err)
		}
		synced = append(synced, store.HasSynced, logicalClusterInformer.HasSynced)
		// Serving starts before the caches sync: until then, /readyz fails and reads get 503.
		group.Go(func() error { return apiserver.Run(ctx, server) })
	}

	var ready atomic.Bool
	if o.MetricsBindAddress != "0" {
		group.Go(func() error {
			return serveMetrics(ctx, o.MetricsBindAddress, func() error {
				if !ready.Load() {
					return errors.New("the informer caches have not synced yet")
				}
				return nil
			})
		})
	}

	for _, start := range starters {
		start(ctx.Done())
	}
	group.Go(func() error {
		began := time.Now()
		if !cache.WaitForNamedCacheSync(workspacemounts.ControllerName, ctx.Done(), synced...) {
			return nil // stopping
		}
		logger.Info("informers synced", "duration", time.Since(began).Round(time.Millisecond), "workspaces", len(workspaceInformer.GetStore().ListKeys()))
		ready.Store(true)
		switch {
		case runController == nil:
			return nil
		case o.LeaderElection.Enabled:
			// A client of its own, so that no other traffic can delay a renewal.
			leaseClient, err := kcpkubernetesclientset.NewForConfig(rest.CopyConfig(cfg))
			if err != nil {
				return err
			}
			return runAsLeader(ctx, o, leaseClient, runController)
		default:
			runController(ctx)
			return nil
		}
	})
	if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// newVirtualWorkspace builds the virtual workspace server over the Workspace
// and LogicalCluster informers. Its SubjectAccessReviews go through a client
// of their own, rate-limited by --authorization-qps, apart from the
// controller's writes and the Lease.
func newVirtualWorkspace(ctx context.Context, o *Options, cfg *rest.Config, workspaceInformer, logicalClusterInformer cache.SharedIndexInformer) (*genericapiserver.GenericAPIServer, *wsmregistry.Store, error) {
	store, err := wsmregistry.NewStore(workspaceInformer)
	if err != nil {
		return nil, nil, err
	}
	store.StopWatchesWhenDone(ctx)
	tokenReviewConfig, err := o.tokenReviewConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	reviewConfig := rest.CopyConfig(cfg)
	reviewConfig.QPS, reviewConfig.Burst = o.VirtualWorkspace.AuthorizationQPS, o.VirtualWorkspace.AuthorizationBurst
	review, err := authorization.NewSubjectAccessReviewer(reviewConfig)
	if err != nil {
		return nil, nil, err
	}
	lister := tenancyv1alpha1listers.NewWorkspaceClusterLister(workspaceInformer.GetIndexer())
	logicalClusters := logicalClusterInformer.GetIndexer()
	server, err := apiserver.New(o.VirtualWorkspace, apiserver.Dependencies{
		Store: store,
		Authorizer: authorization.New(authorization.NewReviews(review, o.VirtualWorkspace.Authorization), func(cluster logicalcluster.Name) bool {
			_, exists, err := logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
			return exists && err == nil
		}),
		GetWorkspace: func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return lister.Cluster(cluster).Get(name)
		},
		ClustersSynced:    logicalClusterInformer.HasSynced,
		TokenReviewConfig: tokenReviewConfig,
	})
	return server, store, err
}

// tokenReviewConfig is where bearer tokens are reviewed: --authentication-kubeconfig,
// else the plugin's own credentials, in root unless the URL names a cluster.
func (o *Options) tokenReviewConfig(cfg *rest.Config) (*rest.Config, error) {
	if path := o.VirtualWorkspace.AuthenticationKubeconfig; path != "" {
		loaded, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading --authentication-kubeconfig %s: %w", path, err)
		}
		cfg = loaded
	}
	cfg = rest.CopyConfig(cfg)
	if !strings.Contains(cfg.Host, "/clusters/") {
		cfg.Host = strings.TrimSuffix(cfg.Host, "/") + core.RootCluster.Path().RequestPath()
	}
	return cfg, nil
}

// baseURL strips a /clusters/<name> path from a kcp server URL: the clients
// here are cluster-aware and add it per request.
func baseURL(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return host
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	return strings.TrimSuffix(u.String(), "/")
}
