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

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestWorkspaceEvents: the shared plugin (default flags: events on) turns a
// mount's flips into events regarding its Workspace, in the Workspace's own
// logical cluster (namespace default), and kubectl describe workspace shows
// them: Warning with the not-ready reason, Normal with MountReady.
func TestWorkspaceEvents(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	cfg := kcp.BaseConfigT(t, "base")
	org := framework.UniqueName("events")
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	cluster := framework.RootPath.Join(org)
	kind := installKubeClusters(t, cluster)
	url := kcp.BaseURL + "/clusters/" + org
	ready := map[string]interface{}{"phase": "Ready", "URL": url}
	c.createMountObject(t, cluster, kind, "proxy", ready)
	c.createMountedWorkspace(t, cluster, "mounted", kind.ref("proxy"))
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Connecting", "URL": url, "conditions": []interface{}{
		map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "AgentDisconnected", "message": "no agent heartbeat"},
	}})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady, url: url})
	c.setMountStatus(t, cluster, kind, "proxy", ready)
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "mounted", metav1.GetOptions{})
	require.NoError(t, err)
	kube, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	// The first status (Ready), not ready, ready again: the third is like
	// the first, so it is a series of it.
	var warning, normal eventsv1.Event
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		list, err := kube.Cluster(cluster).EventsV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		warning, normal = eventsv1.Event{}, eventsv1.Event{}
		for _, event := range list.Items {
			if event.Regarding.UID != ws.UID {
				continue
			}
			count := int32(1)
			if event.Series != nil {
				count = event.Series.Count
			}
			seen = append(seen, fmt.Sprintf("%s %s x%d: %s", event.Type, event.Reason, count, event.Note))
			switch {
			case event.Type == corev1.EventTypeWarning && event.Reason == mount.ReasonMountNotReady:
				warning = event
			case event.Type == corev1.EventTypeNormal && event.Reason == mount.ReasonMountReady && count == 2:
				normal = event
			}
		}
		return warning.Name != "" && normal.Name != "" && len(seen) == 2, fmt.Sprintf("events regarding the Workspace: %q", seen)
	}, convergeTimeout, 200*time.Millisecond)

	require.Equal(t, "Workspace", warning.Regarding.Kind)
	require.Equal(t, "mounted", warning.Regarding.Name)
	require.Equal(t, workspacemounts.EventReportingController, warning.ReportingController)
	require.Equal(t, workspacemounts.EventAction, warning.Action)
	require.Contains(t, warning.Note, "is Connecting: condition ClusterReady is False (AgentDisconnected: no agent heartbeat)")
	require.Contains(t, normal.Note, "is ready at "+url)

	k := newKubectl(t, vwRoute{name: "kcp", base: kcp.BaseURL, kubeconfig: kcp.KubeconfigPath}, adminContext)
	r := k.runServer(kcp.BaseURL+"/clusters/"+cluster.String(), "[kcp "+cluster.String()+"]", "describe", "workspace", "mounted")
	require.NoError(t, r.err, "%s", r)
	at := strings.Index(r.stdout, "Events:")
	require.GreaterOrEqual(t, at, 0, "%s", r)
	events := r.stdout[at:]
	require.Regexp(t, `Warning\s+`+mount.ReasonMountNotReady+`\s+.*`+workspacemounts.EventReportingController+`.*is Connecting`, events, "%s", r)
	require.Regexp(t, `Normal\s+`+mount.ReasonMountReady+`\s+.*\(x2 over .*`+workspacemounts.EventReportingController+`.*is ready at`, events, "%s", r)

	// Drops are counted by a fixed set of reasons, all exported from the start.
	reasons := scrapePluginMetrics(t).LabelValues("workspacemounts_events_dropped_total", "reason")
	require.Equal(t, map[string]bool{"rate_limited": true, "queue_full": true, "refused": true, "unreachable": true, "workspace_deleted": true, "cluster_suspended": true}, reasons)
}
