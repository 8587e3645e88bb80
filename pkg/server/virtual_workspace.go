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
func (s *Server) installVirtualWorkspace(workspaces cache.SharedIndexInformer) (part, error) {
	logicalClusters := s.KcpSharedInformerFactory.Core().V1alpha1().LogicalClusters().Informer()
	store, err := wsmregistry.NewStore(workspaces)
	if err != nil {
		return part{}, fmt.Errorf("virtual workspace: %w", err)
	}
	if err := store.AddClusterPaths(logicalClusters); err != nil {
		return part{}, fmt.Errorf("virtual workspace: %w", err)
	}
	lister := tenancyv1alpha1listers.NewWorkspaceClusterLister(workspaces.GetIndexer())
	deps := apiserver.Dependencies{
		Store:      store,
		Authorizer: s.Authorizer,
		GetWorkspace: func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return lister.Cluster(cluster).Get(name)
		},
		ClustersSynced:    logicalClusters.HasSynced,
		TokenReviewConfig: s.TokenReviewConfig,
		KCPLastContact:    s.Contact.Since,
	}
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
		hasSynced: []cache.InformerSynced{store.HasSynced, logicalClusters.HasSynced, listening.Load},
	}, nil
}
