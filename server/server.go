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

// Package server runs workspacemounts, in the shape of kcp's pkg/server:
// Options (options.go: flags, validation, Complete) -> Config (config.go: the
// clients of kcp and the shared informer factories, built without asking kcp
// anything) -> New (server.go), which installs each part with its own start
// and the caches it needs synced: the controller, leader-elected
// (controller.go, leaderelection.go), the virtual workspace
// (virtual_workspace.go), metrics and health (metrics_server.go) -> Run.
// kcp going away is not a failure: Run waits for it (kcp.go) and the parts go
// on from what they last knew.
//
// With --kubeconfig the process serves one shard (its ShardConfig,
// shard_config.go). With --root-kubeconfig and --shards-kubeconfig it serves
// a sharded kcp (sharded.go): it follows the Shard objects in root
// (pkg/shards) and runs, per shard, that shard's clients, informers and
// source of the virtual workspace's store; the virtual workspace looks
// paths, clusters and access up on the shard holding them (shard_set.go).
// One Lease in root elects one leader for all shards, whose term each
// shard's controller runs in (leadership.go): never two writers for a shard.
package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/kubeconfig"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Server is the process: its parts, installed by New, started by Run.
type Server struct {
	CompletedConfig

	// parts in the order they start.
	parts []part
	// routing is what the controller keeps beside the annotations; Run
	// settles it before the controller starts.
	routing workspacemounts.RoutingOptions
	// notReady says why the process is not ready (/readyz), nil once every
	// part's caches have synced.
	notReady atomic.Pointer[string]
	// factories are the shared informer factories Run starts once kcp has
	// answered (a sharded kcp's shards start their own).
	factories []interface{ Start(stopCh <-chan struct{}) }
	// workspaces is the Workspace informer of the one shard, nil for a
	// sharded kcp.
	workspaces cache.SharedIndexInformer

	// For a sharded kcp: the virtual workspace's store (nil without it),
	// which each shard joins once synced, the leader's terms the shards'
	// controllers run in, and whether the process is stopping (a shard
	// stopping then leaves its objects to the last).
	store      *wsmregistry.Store
	leadership *leadership
	stopping   atomic.Bool
}

// A part is one unit of the process.
type part struct {
	name string
	// start runs the part until ctx is done or it fails.
	start func(ctx context.Context) error
	// afterKCP parts start once kcp has answered and the informers have
	// started; the others at once, so that the process is alive, and says
	// why it is not ready, while it waits.
	afterKCP bool
	// hasSynced are the caches the part reads: the process is ready once
	// they all have synced.
	hasSynced []cache.InformerSynced
}

// New installs the parts the options ask for. Nothing runs until Run.
func New(c CompletedConfig) (*Server, error) {
	s := &Server{CompletedConfig: c}
	s.setNotReady("waiting for kcp to answer")
	var workspaces metrics.WorkspaceLister
	if c.Sharded != nil {
		workspaces = c.Sharded.Shards
		s.factories = append(s.factories, c.Sharded.RootKcpSharedInformerFactory)
		s.leadership = newLeadership()
	} else {
		// Workspaces are read by every part: their informer is registered first.
		s.workspaces = c.KcpSharedInformerFactory.Tenancy().V1alpha1().Workspaces().Informer()
		workspaces = s.workspaces.GetStore()
		s.factories = append(s.factories, c.KcpSharedInformerFactory)
		if c.ApiExtensionsSharedInformerFactory != nil {
			s.factories = append(s.factories, c.ApiExtensionsSharedInformerFactory)
		}
	}

	if metrics := s.installMetrics(workspaces); metrics != nil {
		s.parts = append(s.parts, *metrics)
	}
	// Rotated credentials are picked up without a restart.
	for _, loader := range []*kubeconfig.Loader{c.KubeconfigLoader, c.ShardsLoader, c.TokenReviewLoader} {
		if loader != nil {
			s.parts = append(s.parts, part{name: "kubeconfig-reloader", start: func(ctx context.Context) error {
				loader.Run(ctx, kubeconfig.DefaultReloadInterval)
				return nil
			}})
		}
	}
	s.parts = append(s.parts, part{name: "kcp-contact", start: func(ctx context.Context) error {
		c.Contact.Run(ctx, contactProbeInterval, c.KCPProbe)
		return nil
	}})
	if c.Options.RunVirtualWorkspace {
		vw, err := s.installVirtualWorkspace()
		if err != nil {
			return nil, err
		}
		s.parts = append(s.parts, vw)
	}
	if c.Options.RunController {
		controller, err := s.installController()
		if err != nil {
			return nil, err
		}
		s.parts = append(s.parts, controller)
	}
	if c.Sharded != nil {
		s.parts = append(s.parts, s.installShards())
	}
	return s, nil
}

// Run runs the parts until ctx is done or one fails.
func (s *Server) Run(ctx context.Context) error {
	// When kcp answers right away, --workspace-url beside kcp's in-tree
	// controller is refused before anything is served or logged, the
	// start-up line with the build included: one line. Otherwise it is asked
	// again once kcp answers.
	routing, routingKnown, err := routingOptions(ctx, s.Options, s.ClientConfig, false)
	if err != nil {
		return err
	}
	s.routing = routing
	logger := klog.FromContext(ctx)
	build := version.Get()
	logger.Info("Starting workspacemounts", "version", build.Version, "revision", build.Revision,
		"goVersion", build.GoVersion, "kcpVersion", build.KcpVersion, "platform", build.Platform)
	if routingKnown {
		logRouting(logger, routing)
	}

	group, ctx := errgroup.WithContext(ctx)
	context.AfterFunc(ctx, func() { s.stopping.Store(true) })
	for _, p := range s.parts {
		if !p.afterKCP {
			group.Go(func() error { return p.start(ctx) })
		}
	}
	group.Go(func() error {
		if err := s.waitForKCP(ctx); err != nil {
			return nil //nolint:nilerr // it fails only when ctx is done: stopping
		}
		if !routingKnown {
			routing, _, err := routingOptions(ctx, s.Options, s.ClientConfig, true)
			if err != nil {
				return err
			}
			logRouting(logger, routing)
			s.routing = routing
		}
		s.setNotReady("the informer caches have not synced yet")
		for _, factory := range s.factories {
			factory.Start(ctx.Done())
		}
		var synced []cache.InformerSynced
		for _, p := range s.parts {
			synced = append(synced, p.hasSynced...)
			if p.afterKCP {
				group.Go(func() error { return p.start(ctx) })
			}
		}
		began := time.Now()
		if !cache.WaitForNamedCacheSync("workspacemounts", ctx.Done(), synced...) {
			return nil // stopping
		}
		logger := klog.FromContext(ctx)
		if s.workspaces != nil {
			logger.Info("informers synced", "duration", time.Since(began).Round(time.Millisecond), "workspaces", len(s.workspaces.GetStore().ListKeys()))
		} else {
			logger.Info("shards synced", "duration", time.Since(began).Round(time.Millisecond), "shards", s.Sharded.Shards.Names())
		}
		// Ready from now on, also while kcp is unreachable: the virtual
		// workspace serves what it last knew (see docs/deployment.md).
		s.notReady.Store(nil)
		return nil
	})
	if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (s *Server) setNotReady(reason string) { s.notReady.Store(&reason) }

// ready tells why the process is not ready, or nil.
func (s *Server) ready() error {
	if reason := s.notReady.Load(); reason != nil {
		return errors.New(*reason)
	}
	return nil
}
