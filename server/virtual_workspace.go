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
	"sync/atomic"

	"k8s.io/client-go/tools/cache"

	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

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
