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
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// installVirtualWorkspace installs the virtual workspace over the Workspace
// and LogicalCluster informers. It serves from its start (once kcp has
// answered): until the caches sync, its /readyz fails and reads get 503. The
// server itself is built then, with its serving certificate (a self-signed
// one is written to --cert-dir and logged), so that a refused start writes
// nothing; the process is not ready before it is built and listening.
//
// For a sharded kcp, each shard joins the store once its caches have synced
// (runShard); paths and clusters are looked up on every shard.
func (s *Server) installVirtualWorkspace() (part, error) {
	deps, synced, err := s.virtualWorkspaceDependencies()
	if err != nil {
		return part{}, fmt.Errorf("virtual workspace: %w", err)
	}
	store := deps.Store
	var listening atomic.Bool
	return part{
		name:     apiserver.Name,
		afterKCP: true,
		start: func(ctx context.Context) error {
			completed, err := s.Options.VirtualWorkspace.Complete()
			if err != nil {
				return fmt.Errorf("virtual workspace: %w", err)
			}
			server, err := apiserver.New(completed, deps) // binds the port
			if err != nil {
				return fmt.Errorf("virtual workspace: %w", err)
			}
			listening.Store(true)
			store.StopWatchesWhenDone(ctx)
			return apiserver.Run(ctx, server)
		},
		hasSynced: append(synced, listening.Load),
	}, nil
}

// virtualWorkspaceDependencies are what the virtual workspace reads: one
// shard's informers, or every shard's (s.Sharded), and the caches to sync.
func (s *Server) virtualWorkspaceDependencies() (apiserver.Dependencies, []cache.InformerSynced, error) {
	deps := apiserver.Dependencies{
		Authorizer:        s.Authorizer,
		TokenReviewConfig: s.TokenReviewConfig,
		KCPLastContact:    s.Contact.Since,
	}
	if s.Sharded != nil {
		s.store = wsmregistry.NewStore()
		deps.Store = s.store
		deps.GetWorkspace = s.Sharded.Shards.GetWorkspace
		deps.ClustersSynced = s.Sharded.Shards.Synced
		deps.Shards = s.Sharded.Shards
		// The shards' part holds readiness until they have synced.
		return deps, nil, nil
	}
	logicalClusters := s.KcpSharedInformerFactory.Core().V1alpha1().LogicalClusters().Informer()
	store := wsmregistry.NewStore()
	if err := store.AddShard("", s.workspaces, logicalClusters); err != nil {
		return deps, nil, err
	}
	lister := tenancyv1alpha1listers.NewWorkspaceClusterLister(s.workspaces.GetIndexer())
	deps.Store = store
	deps.GetWorkspace = func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
		return lister.Cluster(cluster).Get(name)
	}
	deps.ClustersSynced = logicalClusters.HasSynced
	return deps, []cache.InformerSynced{store.HasSynced, logicalClusters.HasSynced}, nil
}
