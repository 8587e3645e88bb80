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

package workspacemounts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
)

// TestProcessWorkspaceFenced: while the write fence refuses (a leader past
// its renew deadline), no patch reaches kcp and the key fails with
// leaderfence.ErrFenced, to be tried again; once it allows, the same key is
// written.
func TestProcessWorkspaceFenced(t *testing.T) {
	t.Parallel()
	k := newFakeKCP(mountedWorkspace(kubeClusterRef))
	c, indexer := testController(k, RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true},
		returns(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://shard.example/clusters/target"}), nil))
	fence := leaderfence.New(time.Minute) // never renewed: closed
	c.writeFence = fence.Allow
	key := syncCache(t, k, indexer, "mounted")
	ctx := context.Background()

	for range 3 {
		require.ErrorIs(t, c.processWorkspace(ctx, key), leaderfence.ErrFenced)
	}
	require.Empty(t, k.patches, "a patch reached kcp through a closed fence")

	c.writeFence = nil
	require.NoError(t, c.processWorkspace(ctx, key))
	require.Len(t, k.patches, 2, "once allowed: metadata and spec, then status")
}
