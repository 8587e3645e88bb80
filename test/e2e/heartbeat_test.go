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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// hbTimeout is the test plugin's --mount-heartbeat-timeout.
	hbTimeout = 6 * time.Second
	// hbMargin is how late after hbTimeout the expiry may show: the
	// delayed requeue fires at the expiry, then one reconcile, one patch,
	// and the test's poll.
	hbMargin = 2 * time.Second
)

// TestMountHeartbeatExpires: a plugin with --mount-heartbeat-timeout=6s
// (and --workspace-condition), on a kcp of the test's own (TestMain's plugin,
// without the flag, would write the other answer on the same Workspace). A
// KubeCluster heartbeating in status.lastProxyHeartbeatTime (kcp-dev/contrib's
// field) every 2s stays Ready past the timeout; once the heartbeat stops
// moving it turns Unknown/MountHeartbeatExpired the timeout after its last
// heartbeat (within hbMargin), its condition False; written again, it is
// Ready again.
func TestMountHeartbeatExpires(t *testing.T) {
	t.Parallel()
	began := time.Now()
	server, c, cluster, ready := ownKCPWithProxy(t, "heartbeat")
	url := ready["URL"].(string)
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
	isReady := func(s mount.Status) bool {
		return mountState{phase: s.Phase, ready: s.Ready, reason: s.Reason, url: s.URL} ==
			mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url}
	}
	last := beat()
	c.createMountedWorkspace(t, cluster, "hb", kubeClusters.ref("proxy"))
	plugin := opStartPlugin(t, t, t.TempDir(), "heartbeat", server.KubeconfigPath,
		fmt.Sprintf("--mount-heartbeat-timeout=%s", hbTimeout), "--workspace-condition")

	t.Logf("heartbeating every %s until Ready, then for %s more: Ready throughout", hbTimeout/3, hbTimeout+hbTimeout/3)
	var first mount.Status
	var readyAt time.Time
	for deadline := time.Now().Add(convergeTimeout); ; {
		require.True(t, time.Now().Before(deadline), "hb is Ready within %s: %+v%s", convergeTimeout, current(), opLogs(plugin))
		time.Sleep(hbTimeout / 3)
		last = beat()
		if readyAt.IsZero() {
			if first = current(); isReady(first) {
				readyAt = time.Now()
			}
			continue
		}
		if time.Since(readyAt) > hbTimeout+hbTimeout/3 {
			break
		}
	}
	status := current()
	require.True(t, isReady(status), "Ready while heartbeating: %+v", status)
	require.Equal(t, first.LastTransitionTime, status.LastTransitionTime, "never expired while heartbeating (a flip would move lastTransitionTime)")

	t.Logf("the heartbeat stops at %s: Unknown/%s from %s", last.Format(time.RFC3339), mount.ReasonMountHeartbeatExpired, last.Add(hbTimeout).Format(time.RFC3339))
	expiredState := mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountHeartbeatExpired, url: url}
	var took time.Duration
	framework.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "hb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		status, _ = mount.StatusOf(ws.Annotations)
		took = time.Since(last)
		got := mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}
		return got == expiredState, fmt.Sprintf("%s after the last heartbeat: %s (%s)", took.Round(time.Millisecond), got, status.Message)
	}, hbTimeout+hbMargin+5*time.Second, 50*time.Millisecond, "the mount of hb expires%s", opLogs(plugin))
	t.Logf("expired %s after the last heartbeat (timeout %s): %s", took.Round(time.Millisecond), hbTimeout, status.Message)
	require.GreaterOrEqual(t, took, hbTimeout, "not before the timeout")
	require.LessOrEqual(t, took, hbTimeout+hbMargin, "on time")
	require.Contains(t, status.Message, fmt.Sprintf("has not heartbeated since %s (status.lastProxyHeartbeatTime), longer than --mount-heartbeat-timeout=%s", last.Format(time.RFC3339), hbTimeout))
	ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "hb", metav1.GetOptions{})
	require.NoError(t, err)
	cond := condition(ws, condType)
	require.NotNil(t, cond)
	require.Equal(t, corev1.ConditionFalse, cond.Status)
	require.Equal(t, mount.ReasonMountHeartbeatExpired, cond.Reason)
	require.Equal(t, conditionsv1alpha1.ConditionSeverityWarning, cond.Severity)

	t.Log("the provider heartbeats again: Ready again")
	resumed := beat()
	c.waitForMount(t, cluster, "hb", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})
	t.Logf("Ready again %s after the heartbeat", time.Since(resumed).Round(time.Millisecond))
	framework.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "hb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := condition(ws, condType)
		return cond != nil && cond.Status == corev1.ConditionTrue, fmt.Sprintf("condition %+v", cond)
	}, convergeTimeout, 100*time.Millisecond, "the condition of hb is True again%s", opLogs(plugin))
	t.Logf("TestMountHeartbeatExpires took %s (kcp start included)", time.Since(began).Round(time.Second))
}
