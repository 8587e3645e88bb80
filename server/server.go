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

// Package server runs workspacemounts in the shape of kcp's pkg/server:
// [Options] make a [Config], from which [New] installs the parts, each with
// its own start and the caches it needs synced, and [Server.Run] runs them.
// docs/design/server-parts.md tells how the parts and the shards fit.
package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/kubeconfig"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Server is the process: its parts, installed by New, started by Run.
type Server struct {
	CompletedConfig

	parts []part
	// notReady says why /readyz fails, nil once every part has synced.
	notReady atomic.Pointer[string]

	// store is the virtual workspace's, nil without it; fence refuses the
	// controller's writes once the Lease was not renewed in time, nil
	// without --leader-elect; stopping keeps a stopping shard's objects.
	store      *wsmregistry.Store
	leadership *leadership
	fence      *leaderfence.Fence
	stopping   atomic.Bool
}

// A part is one unit of the process.
type part struct {
	name  string
	start func(ctx context.Context) error
	// afterKCP parts start once kcp has answered, the others at once.
	afterKCP  bool
	hasSynced []cache.InformerSynced
}

// New installs the parts the options ask for. Nothing runs until Run.
func New(c CompletedConfig) (*Server, error) {
	s := &Server{CompletedConfig: c, leadership: newLeadership()}
	if c.Options.LeaderElection.Enabled {
		s.fence = leaderfence.New(c.Options.LeaderElection.RenewDeadline)
	}
	s.setNotReady("waiting for kcp to answer")
	if metrics := s.installMetrics(); metrics != nil {
		s.parts = append(s.parts, *metrics)
	}
	// With --all-shards, ShardsLoader is KubeconfigLoader: run once.
	loaders := []*kubeconfig.Loader{c.KubeconfigLoader, c.ShardsLoader, c.TokenReviewLoader}
	for i, loader := range loaders {
		if loader != nil && !slices.Contains(loaders[:i], loader) {
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
		s.parts = append(s.parts, s.installVirtualWorkspace())
	}
	if c.Options.RunController {
		s.parts = append(s.parts, s.installController())
	}
	s.parts = append(s.parts, s.installShards())
	return s, nil
}

// Run runs the parts until ctx is done or one fails; the error names the part.
func (s *Server) Run(ctx context.Context) error {
	// --workspace-url beside kcp's in-tree controller is refused in one
	// line when kcp answers at once, else once it answers.
	routingKnown := !s.Options.WorkspaceURL
	if !routingKnown {
		_, err := routingOf(ctx, s.Options, s.ClientConfig)
		if routingKnown = !errors.Is(err, errNotAnswered); routingKnown && err != nil {
			return err
		}
	}
	logger := klog.FromContext(ctx)
	build := version.Get()
	logger.Info("Starting workspacemounts", "version", build.Version, "revision", build.Revision,
		"goVersion", build.GoVersion, "kcpVersion", build.KcpVersion, "platform", build.Platform)
	if s.Options.WorkspaceURLAllowInternalHosts {
		logger.Info(allowInternalHostsWarning)
	}
	if ignored := s.Options.KCPOnlyFlagsSet(); len(ignored) > 0 {
		logger.Info("ignoring flags of kcp's own virtual workspaces, which kcp-operator passes to every VirtualWorkspace", "flags", ignored)
	}
	if s.Options.RunVirtualWorkspace && s.Options.VirtualWorkspace.RequestHeaderDedicatedCA {
		logger.Info(apiserver.RequestHeaderDedicatedCAWarning)
	}

	group, ctx := errgroup.WithContext(ctx)
	context.AfterFunc(ctx, func() { s.stopping.Store(true) })
	start := func(p part) {
		group.Go(func() error {
			if err := p.start(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			return nil
		})
	}
	for _, p := range s.parts {
		if !p.afterKCP {
			start(p)
		}
	}
	group.Go(func() error {
		if err := s.waitForKCP(ctx); err != nil {
			return nil //nolint:nilerr // it fails only when ctx is done: stopping
		}
		if !routingKnown {
			if _, err := shardRouting(ctx, s.Options, s.ClientConfig); err != nil && ctx.Err() == nil {
				return err
			}
		}
		s.setNotReady("the informer caches have not synced yet")
		var synced []cache.InformerSynced
		for _, p := range s.parts {
			synced = append(synced, p.hasSynced...)
			if p.afterKCP {
				start(p)
			}
		}
		began := time.Now()
		if !cache.WaitForNamedCacheSync("workspacemounts", ctx.Done(), synced...) {
			return nil // stopping
		}
		logger.Info("synced: ready", "duration", time.Since(began).Round(time.Millisecond), "shards", s.Shards.Names())
		// Ready from now on, also while kcp is unreachable.
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

// installVirtualWorkspace installs the virtual workspace over the store
// every shard joins once synced; it is built when it starts, so that a
// refused start writes no serving certificate.
func (s *Server) installVirtualWorkspace() part {
	s.store = wsmregistry.NewStore(s.Options.mountRule())
	deps := apiserver.Dependencies{
		Store:             s.store,
		Authorizer:        s.Authorizer,
		TokenReviewConfig: s.TokenReviewConfig,
		KCPLastContact:    s.Contact.Since,
		GetWorkspace:      s.Shards.GetWorkspace,
		ClustersSynced:    s.Shards.Synced,
		Shards:            s.Shards,
		PathOf:            s.Shards.PathOf,
	}
	var listening atomic.Bool
	return part{
		name:     apiserver.Name,
		afterKCP: true,
		start: func(ctx context.Context) error {
			completed, err := s.Options.VirtualWorkspace.Complete()
			if err != nil {
				return err
			}
			server, err := apiserver.New(completed, deps) // binds the port
			if err != nil {
				return err
			}
			listening.Store(true)
			s.store.StopWatchesWhenDone(ctx)
			return apiserver.Run(ctx, server)
		},
		hasSynced: []cache.InformerSynced{listening.Load},
	}
}
