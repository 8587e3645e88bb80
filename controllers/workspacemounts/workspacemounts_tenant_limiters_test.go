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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// TestRetriesPerTenant: a tenant whose keys keep failing spends its own
// retry bucket; another tenant's first retry is not delayed.
func TestRetriesPerTenant(t *testing.T) {
	t.Parallel()
	limiter := tenantRetryRateLimiter(keyTenant(testTenantOf))
	var last time.Duration
	for i := range 2 * retryBurst {
		last = limiter.When(testKey("a", i)) // each key's first failure: 5ms, unless the bucket is empty
	}
	require.Greater(t, last, 5*time.Second, "tenant a's bucket is spent after %d retries", retryBurst)
	require.Equal(t, 5*time.Millisecond, limiter.When(testKey("b", 0)), "tenant b's retry waits only for its own backoff")
}

// TestRepairsPerTenant: writes that only undo someone else's edit of the
// annotations are limited per tenant; a new answer always goes through.
func TestRepairsPerTenant(t *testing.T) {
	t.Parallel()
	c := &Controller{tenantOf: testTenantOf, repairs: tenant.NewLimiters[tenant.Name](1, 2, nil), mountObjects: NewMountObjectIndex(mount.Rule{})}
	state := mountState{status: mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady}, mounted: true}
	workspace := func(cluster string) (ws, updated *tenancyv1alpha1.Workspace) {
		ws = mountedWorkspace(kubeClusterRef)
		ws.Annotations = map[string]string{logicalcluster.AnnotationKey: cluster, mount.PhaseAnnotationKey: "Invalid"}
		updated = ws.DeepCopy()
		updated.Annotations[mount.PhaseAnnotationKey] = string(mount.PhaseReady)
		updated.Annotations[mount.StatusAnnotationKey] = state.status.Encode()
		return ws, updated
	}
	ws, updated := workspace("a-1")
	require.NoError(t, c.allowRepair("a-1|mounted", ws, updated, state), "nothing written yet: not a repair")
	c.noteWritten("a-1|mounted", updated, state)
	for _, key := range []string{"a-1|mounted", "a-1|mounted"} {
		require.NoError(t, c.allowRepair(key, ws, updated, state), "within the burst")
	}
	err := c.allowRepair("a-1|mounted", ws, updated, state)
	var limited *repairLimitedError
	require.ErrorAs(t, err, &limited, "the tenant's repairs are used up")
	require.Positive(t, limited.retryIn)

	other, otherUpdated := workspace("b-1")
	c.written.put("b-1|mounted", answerHash(state))
	require.NoError(t, c.allowRepair("b-1|mounted", other, otherUpdated, state), "another tenant repairs at once")

	changed := state
	changed.status.Phase, changed.status.Ready = mount.PhaseConnecting, false
	require.NoError(t, c.allowRepair("a-1|mounted", ws, updated, changed), "a new answer is no repair")
}
