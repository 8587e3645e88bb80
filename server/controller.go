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

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
)

// installController installs the leader election of the controller that
// writes the mount status of every mounted Workspace: with --leader-elect,
// one Lease in root for all shards; each term is handed to the controllers
// of every shard served (runShard), each started once its shard has
// synced, all stopped when the term ends. Without --leader-elect, the one
// term lasts as long as the process. The Lease's renewals go through
// s.fence, which the controllers' writes ask first (Options.WriteFence).
func (s *Server) installController() part {
	return part{
		name:     workspacemounts.ControllerName,
		afterKCP: true,
		start: func(ctx context.Context) error {
			if s.Options.LeaderElection.Enabled {
				return runAsLeader(ctx, &s.Options.LeaderElection, s.Options.leaderFacts(), s.LeaseClusterClient, s.fence, s.leadership.lead)
			}
			return s.leadership.lead(ctx)
		},
	}
}
