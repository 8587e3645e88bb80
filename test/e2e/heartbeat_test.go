//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// hbMargin is how late after the timeout (mountHeartbeatTimeout, TestMain's
// plugin's) an expiry may show: the delayed requeue fires at the expiry,
// then one reconcile, one patch, and the test's poll.
const hbMargin = 2 * time.Second

// TestMountHeartbeatExpires: TestMain's plugin runs with
// --mount-heartbeat-timeout=6s (mountHeartbeatTimeout; heartbeats are
// opt-in, and no other test's mount object carries one). A KubeCluster
// heartbeating in status.lastProxyHeartbeatTime (kcp-dev/contrib's field)
// every 2s stays Ready past the timeout; once the heartbeat stops moving it
// turns Unknown/MountHeartbeatExpired the timeout after its last heartbeat
// (within hbMargin), as the virtual workspace shows; written again, it is
// Ready again.
func TestMountHeartbeatExpires(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := newClients(t)
	org := newVWOrg(t, c, "heartbeat")
	cluster := org.path
	url := kcp.BaseURL + "/clusters/" + org.name
	beat := func() time.Time {
		at := time.Now().UTC().Truncate(time.Second) // metav1.Time's precision: the value is exact
		c.setMountStatus(t, cluster, kubeClusters, "proxy", map[string]interface{}{
			"phase": "Ready", "URL": url, "lastProxyHeartbeatTime": at.Format(time.RFC3339),
		})
		return at
	}
	current := func() mount.Status {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "hb", metav1.GetOptions{})
		require.NoError(t, err)
		status, _ := mount.StatusOf(ws.Annotations)
		return status
	}
	readyState := mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url}
	isReady := func(s mount.Status) bool {
		return mountState{phase: s.Phase, ready: s.Ready, reason: s.Reason, url: s.URL} == readyState
	}
	c.createMountObject(t, cluster, kubeClusters, "proxy", nil)
	beat()
	c.createMountedWorkspace(t, cluster, "hb", kubeClusters.ref("proxy"))

	t.Logf("heartbeating every %s until Ready, then for %s more: Ready throughout", mountHeartbeatTimeout/3, mountHeartbeatTimeout+mountHeartbeatTimeout/3)
	var first mount.Status
	var last, readyAt time.Time
	for deadline := time.Now().Add(convergeTimeout); ; {
		require.True(t, time.Now().Before(deadline), "hb is Ready within %s: %+v", convergeTimeout, current())
		time.Sleep(mountHeartbeatTimeout / 3)
		last = beat()
		if readyAt.IsZero() {
			if first = current(); isReady(first) {
				readyAt = time.Now()
			}
			continue
		}
		if time.Since(readyAt) > mountHeartbeatTimeout+mountHeartbeatTimeout/3 {
			break
		}
	}
	status := current()
	require.True(t, isReady(status), "Ready while heartbeating: %+v", status)
	require.Equal(t, first.LastTransitionTime, status.LastTransitionTime, "never expired while heartbeating (a flip would move lastTransitionTime)")

	t.Logf("the heartbeat stops at %s: Unknown/%s from %s", last.Format(time.RFC3339), mount.ReasonMountHeartbeatExpired, last.Add(mountHeartbeatTimeout).Format(time.RFC3339))
	expiredState := mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountHeartbeatExpired, url: url}
	var took time.Duration
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "hb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		status, _ = mount.StatusOf(ws.Annotations)
		took = time.Since(last)
		got := mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}
		return got == expiredState, fmt.Sprintf("%s after the last heartbeat: %s (%s)", took.Round(time.Millisecond), got, status.Message)
	}, mountHeartbeatTimeout+hbMargin+5*time.Second, 50*time.Millisecond, "the mount of hb expires")
	t.Logf("expired %s after the last heartbeat (timeout %s): %s", took.Round(time.Millisecond), mountHeartbeatTimeout, status.Message)
	require.GreaterOrEqual(t, took, mountHeartbeatTimeout, "not before the timeout")
	require.LessOrEqual(t, took, mountHeartbeatTimeout+hbMargin, "on time")
	require.Contains(t, status.Message, fmt.Sprintf("has not heartbeated since %s (status.lastProxyHeartbeatTime), longer than --mount-heartbeat-timeout=%s",
		last.Format(time.RFC3339), mountHeartbeatTimeout))
	k := newKubectl(t, vwRoutes(t)[0], adminContext)
	k.eventually(org.cluster.String(), func(r kubectlResult) (bool, string) {
		got := strings.TrimSpace(r.stdout)
		return r.err == nil && got == "Unknown "+mount.ReasonMountHeartbeatExpired, fmt.Sprintf("served %q (%v)", got, r.err)
	}, "get", "workspacemounts", "hb", "-o", "jsonpath={.status.phase} {.status.reason}")

	t.Log("the provider heartbeats again: Ready again")
	resumed := beat()
	c.waitForMount(t, cluster, "hb", readyState)
	t.Logf("Ready again %s after the heartbeat", time.Since(resumed).Round(time.Millisecond))
	t.Logf("TestMountHeartbeatExpires took %s", time.Since(began).Round(time.Second))
}
