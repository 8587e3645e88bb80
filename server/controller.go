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

	"k8s.io/client-go/tools/cache"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
)

// installController installs the controller writing the mount status of
// every mounted Workspace. It starts once the caches it reads have synced,
// and, with --leader-elect, only while this replica holds the lease. For a
// sharded kcp, the term as leader is handed to one controller per shard
// (runShard), each started once its shard has synced.
func (s *Server) installController() (part, error) {
	if s.Sharded != nil {
		return part{
			name:     workspacemounts.ControllerName,
			afterKCP: true,
			start: func(ctx context.Context) error {
				if s.Options.LeaderElection.Enabled {
					return runAsLeader(ctx, &s.Options.LeaderElection, s.LeaseClusterClient, s.leadership.lead)
				}
				return s.leadership.lead(ctx)
			},
		}, nil
	}
	controller, err := newShardController(s.ShardConfig, s.workspaces)
	if err != nil {
		return part{}, err
	}
	// A new controller each run (each term as leader): it starts from the
	// informer caches and reconciles every Workspace once.
	run := func(ctx context.Context) error {
		return controller.run(ctx, s.controllerOptions(""), s.Options.WorkspaceWorkers)
	}
	return part{
		name:     workspacemounts.ControllerName,
		afterKCP: true,
		start: func(ctx context.Context) error {
			if !cache.WaitForNamedCacheSync(workspacemounts.ControllerName, ctx.Done(), controller.synced...) {
				return nil // stopping
			}
			if s.Options.LeaderElection.Enabled {
				return runAsLeader(ctx, &s.Options.LeaderElection, s.LeaseClusterClient, run)
			}
			return run(ctx)
		},
		hasSynced: controller.synced,
	}, nil
}
