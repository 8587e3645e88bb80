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
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/sdk/apis/core"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/shards"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// ShardedConfig is what serves a sharded kcp (--root-kubeconfig and
// --shards-kubeconfig): the Shard objects in root, and the credentials each
// shard is reached with. The shards themselves are found at run time.
type ShardedConfig struct {
	// Credentials are --shards-kubeconfig's; each Shard's spec.baseURL is
	// put in as the server (pkg/shards).
	Credentials *rest.Config
	// RootKcpSharedInformerFactory informs of the Shard objects in root,
	// scoped to root as kcp's front-proxy does (Shards are not served across
	// clusters).
	RootKcpSharedInformerFactory kcpinformers.SharedScopedInformerFactory
	// ResolveRootIdentities reads the tenancy identity in root, once: root
	// answers and serves Workspaces.
	ResolveRootIdentities func(context.Context) error
	// Shards are the shards served, as they are found.
	Shards *Shards
	// ReviewLimiter (with the virtual workspace) is the one rate limit of
	// the SubjectAccessReviews sent to all shards (--authorization-qps).
	ReviewLimiter flowcontrol.RateLimiter
}

// newShardedConfig builds the clients of root (from the root shard's
// client config) and keeps the shards' credentials.
func newShardedConfig(root, credentials *rest.Config) (*ShardedConfig, error) {
	client, err := kcpclientset.NewForConfig(root)
	if err != nil {
		return nil, err
	}
	tenancy := tenancyv1alpha1.SchemeGroupVersion.Group
	_, resolve := clients.NewConfigWithWildcardIdentities(root, root, map[string]string{tenancy: tenancy})
	return &ShardedConfig{
		Credentials:                  credentials,
		RootKcpSharedInformerFactory: kcpinformers.NewSharedScopedInformerFactory(client.Cluster(core.RootCluster.Path()), 0, ""),
		ResolveRootIdentities:        resolve,
		Shards:                       newShards(),
	}, nil
}

// shardSyncGrace is how long a shard found at start may take to sync before
// the process is ready without it (a shard down at start does not keep
// the others from being served); it is served once it syncs.
const shardSyncGrace = time.Minute

// installShards installs the part following the Shards in root: a runner
// per shard (pkg/shards), each running runShard.
func (s *Server) installShards() part {
	shardInformer := s.Sharded.RootKcpSharedInformerFactory.Core().V1alpha1().Shards().Informer()
	runners := shards.New(s.Sharded.Credentials, s.runShard)
	return part{
		name:     "shards",
		afterKCP: true,
		start: func(ctx context.Context) error {
			if err := runners.Start(ctx, shardInformer); err != nil {
				return err
			}
			<-ctx.Done()
			runners.Wait()
			return nil
		},
		// Ready once every Shard found has synced, or had shardSyncGrace to.
		hasSynced: []cache.InformerSynced{shardInformer.HasSynced, func() bool {
			return s.Sharded.Shards.syncedOrLate(shardInformer.GetStore().List(), shardSyncGrace)
		}},
	}
}

// runShard serves one shard until ctx is done (the Shard deleted or moved,
// or the process stopping): its clients with a rate limit and a contact
// tracker of their own, its informers, its source of the virtual
// workspace's store once they have synced, and, during each term as leader,
// its controller. A shard that does not answer keeps what it last knew;
// the others are not affected.
func (s *Server) runShard(ctx context.Context, target shards.Shard) error {
	logger := klog.FromContext(ctx)
	contact := kcpcontact.NewForShard(target.Name)
	cfg := rest.CopyConfig(target.Config)
	cfg.QPS, cfg.Burst = s.Options.QPS, s.Options.Burst
	cfg.UserAgent = "workspacemounts"
	cfg.Wrap(contact.Wrap)
	shardConfig, err := NewShardConfig(cfg, s.ClientConfig, s.Options.RunController)
	if err != nil {
		return err
	}
	probe, err := kcpProbe(cfg)
	if err != nil {
		return err
	}
	served := &shard{name: target.Name, contact: contact, started: time.Now()}
	if s.Options.RunVirtualWorkspace {
		reviewConfig := rest.CopyConfig(cfg)
		reviewConfig.RateLimiter = s.Sharded.ReviewLimiter
		if served.review, err = authorization.NewSubjectAccessReviewer(reviewConfig); err != nil {
			return err
		}
	}
	s.Sharded.Shards.add(served)
	metrics.ShardSynced.WithLabelValues(target.Name).Set(0)
	defer func() {
		s.Sharded.Shards.remove(served)
		metrics.ForgetShard(target.Name)
	}()
	go contact.Run(ctx, contactProbeInterval, probe)

	if _, err := retryUntilDone(ctx, "cannot read the tenancy identity in root for the shard yet", shardConfig.ResolveIdentities); err != nil {
		return nil // ctx is done
	}
	workspaces := shardConfig.KcpSharedInformerFactory.Tenancy().V1alpha1().Workspaces().Informer()
	logicalClusters := shardConfig.KcpSharedInformerFactory.Core().V1alpha1().LogicalClusters().Informer()
	synced := []cache.InformerSynced{workspaces.HasSynced, logicalClusters.HasSynced}
	var controller *shardController
	if s.Options.RunController {
		if controller, err = newShardController(shardConfig, workspaces); err != nil {
			return err
		}
		synced = append(synced, controller.synced...)
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
	if s.Options.RunVirtualWorkspace {
		if err := s.store.AddShard(target.Name, workspaces, logicalClusters); err != nil {
			return err
		}
		defer func() {
			if !s.stopping.Load() { // the Shard is gone, not the process
				s.store.RemoveShard(target.Name)
			}
		}()
	}
	served.setSynced(workspaces.GetIndexer(), logicalClusters.GetIndexer())
	metrics.ShardSynced.WithLabelValues(target.Name).Set(1)
	logger.Info("shard synced: served", "duration", time.Since(began).Round(time.Millisecond), "workspaces", len(workspaces.GetStore().ListKeys()))

	if controller == nil {
		<-ctx.Done()
		return nil
	}
	// The one leader of all shards writes this one during each of its terms.
	s.leadership.whileLeading(ctx, func(ctx context.Context) error {
		return controller.run(ctx, s.controllerOptions(target.Name), s.Options.WorkspaceWorkers)
	})
	return nil
}

// shardController is what the controller of one shard reads and writes
// with; a new Controller is built from it in each term.
type shardController struct {
	informers workspacemounts.Informers
	clients   workspacemounts.Clients
	synced    []cache.InformerSynced
}

// newShardController registers the controller's informers (and their
// indexers) of a shard's config, beside its Workspace informer.
func newShardController(c *ShardConfig, workspaces cache.SharedIndexInformer) (*shardController, error) {
	informers := workspacemounts.Informers{
		Workspaces:         workspaces,
		CRDs:               c.ApiExtensionsSharedInformerFactory.Apiextensions().V1().CustomResourceDefinitions().Informer(),
		APIBindings:        c.KcpSharedInformerFactory.Apis().V1alpha1().APIBindings().Informer(),
		APIResourceSchemas: c.KcpSharedInformerFactory.Apis().V1alpha1().APIResourceSchemas().Informer(),
	}
	if err := workspacemounts.InstallIndexers(informers); err != nil {
		return nil, err
	}
	return &shardController{
		informers: informers,
		clients:   workspacemounts.Clients{KCP: c.KcpClusterClient, Dynamic: c.DynamicClusterClient, Metadata: c.MetadataClusterClient},
		synced:    []cache.InformerSynced{workspaces.HasSynced, informers.CRDs.HasSynced, informers.APIBindings.HasSynced, informers.APIResourceSchemas.HasSynced},
	}, nil
}

// run builds a controller and runs it until ctx is done: it starts from the
// informer caches and reconciles every Workspace once.
func (c *shardController) run(ctx context.Context, options workspacemounts.Options, workers int) error {
	controller, err := workspacemounts.NewController(c.clients, c.informers, options)
	if err != nil {
		return err
	}
	return controller.Start(ctx, workers)
}

// controllerOptions are the controller's options for a shard ("" with one).
func (s *Server) controllerOptions(shard string) workspacemounts.Options {
	return workspacemounts.Options{MaxMountInformers: s.Options.MaxMountInformers, MaxClusterMountInformers: s.Options.MaxClusterMountInformers,
		Routing: s.routing, Shard: shard}
}
