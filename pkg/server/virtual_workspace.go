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

	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// installVirtualWorkspace installs the virtual workspace over the Workspace
// and LogicalCluster informers. It serves from the start (once kcp has
// answered): until the caches sync, its /readyz fails and reads get 503.
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
	server, err := apiserver.New(s.Options.VirtualWorkspace, apiserver.Dependencies{
		Store:      store,
		Authorizer: s.Authorizer,
		GetWorkspace: func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return lister.Cluster(cluster).Get(name)
		},
		ClustersSynced:    logicalClusters.HasSynced,
		TokenReviewConfig: s.TokenReviewConfig,
		KCPLastContact:    s.Contact.Since,
	})
	if err != nil {
		return part{}, fmt.Errorf("virtual workspace: %w", err)
	}
	return part{
		name:     apiserver.Name,
		afterKCP: true,
		start: func(ctx context.Context) error {
			store.StopWatchesWhenDone(ctx)
			return apiserver.Run(ctx, server)
		},
		hasSynced: []cache.InformerSynced{store.HasSynced, logicalClusters.HasSynced},
	}, nil
}
