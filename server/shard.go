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

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpeventsv1 "github.com/kcp-dev/client-go/kubernetes/typed/events/v1"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/shards"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// shardSyncGrace is how long a shard found at start may take to sync before
// the process is ready without it; the one shard of --kubeconfig is waited for.
const shardSyncGrace = time.Minute

// installShards installs the part running [Server.runShard] for each shard.
func (s *Server) installShards() part {
	runners := shards.New(s.ShardCredentials, s.runShard)
	p := part{name: "shards", afterKCP: true}
	var follow func(ctx context.Context) error
	var expected func() []string
	grace := time.Duration(0)
	if s.RootKcpSharedInformerFactory != nil {
		shardObjects := s.RootKcpSharedInformerFactory.Core().V1alpha1().Shards().Informer()
		follow = func(ctx context.Context) error {
			s.RootKcpSharedInformerFactory.Start(ctx.Done())
			return runners.Follow(ctx, shardObjects)
		}
		expected = func() []string { return shardNames(shardObjects.GetStore().List()) }
		grace = shardSyncGrace
		p.hasSynced = append(p.hasSynced, shardObjects.HasSynced)
	} else {
		follow = func(ctx context.Context) error {
			runners.Add(ctx, "", s.ClientConfig.Host)
			return nil
		}
		expected = func() []string { return []string{""} }
	}
	p.start = func(ctx context.Context) error {
		if err := follow(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		runners.Wait()
		return nil
	}
	p.hasSynced = append(p.hasSynced, func() bool { return s.Shards.syncedOrLate(expected(), grace) })
	return p
}

// shardNames are the names of the Shard objects with a base URL a runner reaches.
func shardNames(shardObjects []interface{}) []string {
	names := make([]string, 0, len(shardObjects))
	for _, obj := range shardObjects {
		if object, ok := obj.(*corev1alpha1.Shard); ok {
			if _, err := shards.BaseURL(object); err == nil {
				names = append(names, object.Name)
			}
		}
	}
	return names
}

// runShard serves one shard until ctx is done: its clients, its informers,
// its source of the virtual workspace's store once they have synced, and,
// during each term as leader, its controller.
func (s *Server) runShard(ctx context.Context, target shards.Shard) error {
	logger := klog.FromContext(ctx)
	contact := s.Contact // the unnamed shard is root: its answers are root's
	if target.Name != "" {
		contact = kcpcontact.NewForShard(target.Name)
	}
	cfg := rest.CopyConfig(target.Config)
	cfg.QPS, cfg.Burst = s.Options.QPS, s.Options.Burst
	cfg.UserAgent = userAgent
	cfg.Wrap(contact.Wrap)
	shardConfig, err := newShardConfig(cfg, s.ClientConfig, s.Options.RunController, s.Options.mountRule())
	if err != nil {
		return err
	}
	served := &shard{name: target.Name, contact: contact, started: time.Now()}
	if s.Options.RunVirtualWorkspace {
		reviewConfig := rest.CopyConfig(cfg)
		reviewConfig.RateLimiter = s.ReviewLimiter
		if served.review, err = authorization.NewSubjectAccessReviewer(reviewConfig); err != nil {
			return err
		}
	}
	s.Shards.add(served)
	defer s.Shards.remove(served)
	if target.Name != "" {
		probe, err := kcpProbe(cfg)
		if err != nil {
			return err
		}
		metrics.ShardSynced.WithLabelValues(target.Name).Set(0)
		defer metrics.ForgetShard(target.Name)
		go contact.Run(ctx, contactProbeInterval, probe)
	}

	if _, err := retryUntil(ctx, shardConfig.ResolveIdentities, "cannot read the tenancy identity in root for the shard yet"); err != nil {
		return nil // it fails only when ctx is done: stopping
	}
	workspaces := shardConfig.KcpSharedInformerFactory.Tenancy().V1alpha1().Workspaces().Informer()
	logicalClusters := shardConfig.KcpSharedInformerFactory.Core().V1alpha1().LogicalClusters().Informer()
	synced := []cache.InformerSynced{workspaces.HasSynced, logicalClusters.HasSynced}
	var controller *shardController
	var routing workspacemounts.RoutingOptions
	if s.Options.RunController {
		if controller, err = newShardController(shardConfig, workspaces, logicalClusters, s.Options.mountRule()); err != nil {
			return err
		}
		synced = append(synced, controller.synced...)
		if routing, err = shardRouting(ctx, s.Options, cfg); err != nil {
			return err
		}
	}
	shardConfig.KcpSharedInformerFactory.Start(ctx.Done())
	defer shardConfig.KcpSharedInformerFactory.Shutdown()
	if shardConfig.ApiExtensionsSharedInformerFactory != nil {
		shardConfig.ApiExtensionsSharedInformerFactory.Start(ctx.Done())
		defer shardConfig.ApiExtensionsSharedInformerFactory.Shutdown()
	}
	began := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // stopping
	}
	if s.store != nil {
		if err := s.store.AddShard(target.Name, workspaces, logicalClusters); err != nil {
			return err
		}
		defer func() {
			if !s.stopping.Load() { // the Shard is gone, not the process
				s.store.RemoveShard(target.Name)
			}
		}()
		if !cache.WaitForCacheSync(ctx.Done(), s.store.HasSynced) {
			return nil // stopping
		}
	}
	served.setSynced(workspaces.GetIndexer(), logicalClusters.GetIndexer())
	if target.Name != "" {
		metrics.ShardSynced.WithLabelValues(target.Name).Set(1)
	}
	logger.Info("shard synced: served", "duration", time.Since(began).Round(time.Millisecond), "workspaces", len(workspaces.GetStore().ListKeys()))

	if controller == nil {
		<-ctx.Done()
		return nil
	}
	s.leadership.whileLeading(ctx, func(ctx context.Context) error {
		return controller.run(ctx, s.controllerOptions(target.Name, routing), s.Options.WorkspaceWorkers)
	})
	return nil
}

// shardConfig is the clients and informer factories of one shard, built
// without asking kcp anything.
type shardConfig struct {
	// ResolveIdentities reads the tenancy identity in root, which listing
	// Workspaces across all clusters needs.
	ResolveIdentities func(context.Context) error

	KcpClusterClient         kcpclientset.ClusterInterface
	KcpSharedInformerFactory kcpinformers.SharedInformerFactory

	// Set for the controller only.
	ApiExtensionsSharedInformerFactory kcpapiextensionsinformers.SharedInformerFactory
	DynamicClusterClient               kcpdynamic.ClusterInterface
	MetadataClusterClient              kcpmetadata.ClusterInterface
	EventsClusterClient                kcpeventsv1.EventsV1ClusterInterface
}

// newShardConfig builds the clients of the shard cfg reaches, with
// controller also the controller's; the identities are read in root.
func newShardConfig(cfg, root *rest.Config, controller bool, rule mount.Rule) (*shardConfig, error) {
	c := &shardConfig{}
	tenancy := tenancyv1alpha1.SchemeGroupVersion.Group
	identityConfig, resolve := clients.NewConfigWithWildcardIdentities(cfg, root, map[string]string{tenancy: tenancy})
	c.ResolveIdentities = resolve
	var err error
	if c.KcpClusterClient, err = kcpclientset.NewForConfig(identityConfig); err != nil {
		return nil, err
	}
	c.KcpSharedInformerFactory = kcpinformers.NewSharedInformerFactoryWithOptions(c.KcpClusterClient, 0, kcpinformers.WithTransform(TrimForCache(rule)))
	if !controller {
		usePagedInformers(c.KcpSharedInformerFactory, nil, TrimForCache(rule))
		return c, nil
	}
	apiExtensionsClient, err := kcpapiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.ApiExtensionsSharedInformerFactory = kcpapiextensionsinformers.NewSharedInformerFactoryWithOptions(apiExtensionsClient, 0,
		kcpapiextensionsinformers.WithTransform(TrimForCache(rule)))
	usePagedInformers(c.KcpSharedInformerFactory, c.ApiExtensionsSharedInformerFactory, TrimForCache(rule))
	if c.DynamicClusterClient, err = kcpdynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.MetadataClusterClient, err = kcpmetadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.EventsClusterClient, err = kcpeventsv1.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// shardController is what the controller of one shard reads and writes
// with; each term builds a new controller from it.
type shardController struct {
	informers workspacemounts.Informers
	clients   workspacemounts.Clients
	synced    []cache.InformerSynced
}

// newShardController registers the controller's informers and indexers.
func newShardController(c *shardConfig, workspaces, logicalClusters cache.SharedIndexInformer, rule mount.Rule) (*shardController, error) {
	informers := workspacemounts.Informers{
		Workspaces:         workspaces,
		CRDs:               c.ApiExtensionsSharedInformerFactory.Apiextensions().V1().CustomResourceDefinitions().Informer(),
		APIBindings:        c.KcpSharedInformerFactory.Apis().V1alpha1().APIBindings().Informer(),
		APIResourceSchemas: c.KcpSharedInformerFactory.Apis().V1alpha1().APIResourceSchemas().Informer(),
		LogicalClusters:    logicalClusters,
	}
	if err := workspacemounts.InstallIndexers(informers, rule); err != nil {
		return nil, err
	}
	return &shardController{
		informers: informers,
		clients:   workspacemounts.Clients{KCP: c.KcpClusterClient, Dynamic: c.DynamicClusterClient, Metadata: c.MetadataClusterClient, Events: c.EventsClusterClient},
		synced:    []cache.InformerSynced{workspaces.HasSynced, informers.CRDs.HasSynced, informers.APIBindings.HasSynced, informers.APIResourceSchemas.HasSynced},
	}, nil
}

// run builds a controller and runs it until ctx is done.
func (c *shardController) run(ctx context.Context, options workspacemounts.Options, workers int) error {
	controller, err := workspacemounts.NewController(c.clients, c.informers, options)
	if err != nil {
		return err
	}
	return controller.Start(ctx, workers)
}

// controllerOptions are the controller's options for a shard, "" being the
// one of --kubeconfig.
func (s *Server) controllerOptions(shard string, routing workspacemounts.RoutingOptions) workspacemounts.Options {
	routing.URLs.ShardHosts = s.shardHostsOf()
	return workspacemounts.Options{MaxMountInformers: s.Options.MaxMountInformers, MaxClusterMountInformers: s.Options.MaxClusterMountInformers,
		Routing: routing, Shard: shard, MountRule: s.Options.mountRule(), MaxWorkspaceEventsPerHour: s.Options.WorkspaceEventsPerHour,
		MountHeartbeatTimeout: s.Options.MountHeartbeatTimeout, RequestTimeout: s.Options.RequestTimeout, WriteFence: s.fence.Allow}
}
