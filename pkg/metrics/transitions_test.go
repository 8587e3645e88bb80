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

package metrics

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// TestTransitionKindsBounded: a kind is a label value only if it resolved,
// and only the first kindLimit kinds seen; a tenant's made-up kinds, as
// many as they like, and a forged reason give (unresolved).
func TestTransitionKindsBounded(t *testing.T) {
	t.Parallel()
	kinds := &kindSet{kindLimit: func() int { return 2 }, seen: map[string]bool{}}
	status := func(kind, reason string) mount.Status {
		return mount.Status{Phase: mount.PhaseReady, Reason: reason, MountRef: mount.Reference{APIVersion: "x.io/v1", Kind: kind, Name: "m"}}
	}
	require.Equal(t, KindUnresolved, kinds.label(status("Made", mount.ReasonMountKindUnknown)))
	require.Equal(t, KindUnresolved, kinds.label(status("Made", "Pwned")))
	require.Equal(t, "KubeCluster", kinds.label(status("KubeCluster", mount.ReasonMountReady)))
	require.Equal(t, "Other", kinds.label(status("Other", mount.ReasonMountNotReady)))
	for i := range 50 {
		require.Equal(t, KindUnresolved, kinds.label(status(fmt.Sprintf("Kind%d", i), mount.ReasonMountReady)))
	}
	require.Equal(t, "KubeCluster", kinds.label(status("KubeCluster", mount.ReasonMountObjectNotFound)), "a kind seen keeps its value")
	require.Equal(t, KindUnresolved, kinds.label(status("", mount.ReasonMountReady)))
}
