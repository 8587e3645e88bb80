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
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// markNote is a part of the note that ends the message of an unmarked mount
// object (mount.UnmarkedNote) that JSON does not escape.
const markNote = "it is not marked as a mount object"

// TestMountObjectMark: a mount object's conditions, and the quote of the
// failing one, reach the Workspace's status annotation and the virtual
// workspace (lists at the cluster and at *, get, Table, on the plugin's
// listener and through kcp) only while the object carries kcp's mark
// experimental.tenancy.kcp.io/is-mount: "true"; an unmarked one gets its
// phase and reason, and a message that says how to mark it. Marking and
// unmarking converge both ways.
func TestMountObjectMark(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "mark")
	secret := framework.UniqueName("another-teams-secret")
	connecting := func(message string) map[string]interface{} {
		return map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{map[string]interface{}{
			"type": "AgentConnected", "status": "False", "reason": "NoHeartbeat", "message": message, "lastTransitionTime": "2026-01-02T03:04:05Z",
		}}}
	}
	// The unmarked object is there, unmarked, before its Workspace.
	c.createMountObject(t, org.path, kubeClusters, "unmarked", connecting(secret))
	c.setMountMark(t, org.path, kubeClusters, "unmarked", false)
	notReady := mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}
	org.mountAll(t, []vwMount{
		{workspace: "marked", object: "marked", status: connecting("published-message"), want: notReady},
		{workspace: "unmarked", object: "unmarked", want: notReady},
	})

	marked := c.waitForMount(t, org.path, "marked", notReady)
	require.Len(t, marked.Conditions, 1)
	require.Equal(t, "published-message", marked.Conditions[0].Message)
	require.Contains(t, marked.Message, "(NoHeartbeat: published-message)")
	require.NotContains(t, marked.Message, markNote)
	ws, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "unmarked", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, ws.Annotations[mount.StatusAnnotationKey], secret)
	unmarked, ok := mount.StatusOf(ws.Annotations)
	require.True(t, ok)
	require.Empty(t, unmarked.Conditions)
	require.Equal(t, "KubeCluster unmarked (contrib.kcp.io/v1alpha1) is Connecting. "+mount.UnmarkedNote, unmarked.Message)
	t.Logf("%s of the unmarked mount: %s", mount.StatusAnnotationKey, ws.Annotations[mount.StatusAnnotationKey])

	// Every answer of the virtual workspace: the marked object's condition
	// message, the unmarked one's note, never its condition.
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	for _, route := range vwRoutes(t) {
		client := rawClient(t, route, adminContext)
		for _, cluster := range []string{org.cluster.String(), "*"} {
			collection := route.base + vwPrefix + url.PathEscape(cluster) + vwResourcePath
			answers := map[string]string{"list": collection, "table": collection + "?includeObject=Object"}
			if cluster != "*" {
				answers["get"] = collection + "/unmarked"
				answers["get marked"] = collection + "/marked"
			}
			for what, target := range answers {
				accept := "application/json"
				if what == "table" {
					accept = table
				}
				resp := doAccepting(t, client, http.MethodGet, target, "", "", accept)
				require.Equal(t, http.StatusOK, resp.code, "%s %s: %s", what, target, resp.body)
				require.NotContains(t, resp.body, secret, "%s %s", what, target)
				if what != "get marked" {
					require.Contains(t, resp.body, markNote, "%s %s holds the unmarked mount", what, target)
				}
				if what != "get" {
					require.Contains(t, resp.body, "published-message", "%s %s holds the marked mount's condition", what, target)
				}
			}
		}
	}

	// Marked, its conditions are published; unmarked again, they go.
	c.setMountMark(t, org.path, kubeClusters, "unmarked", true)
	waitStatus(t, c, org, "unmarked", func(s mount.Status) bool {
		return len(s.Conditions) == 1 && s.Conditions[0].Message == secret && strings.Contains(s.Message, secret) && !strings.Contains(s.Message, markNote)
	})
	c.setMountMark(t, org.path, kubeClusters, "unmarked", false)
	waitStatus(t, c, org, "unmarked", func(s mount.Status) bool {
		return len(s.Conditions) == 0 && !strings.Contains(s.Message, secret) && strings.HasSuffix(s.Message, mount.UnmarkedNote)
	})
}

// waitStatus waits until the status annotation of Workspace name in org
// satisfies ok, and the virtual workspace serves that very message.
func waitStatus(t *testing.T, c clients, org vwOrg, name string, ok func(mount.Status) bool) {
	t.Helper()
	var message string
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, found := mount.StatusOf(ws.Annotations)
		message = s.Message
		return found && ok(s), fmt.Sprintf("%s: %s", mount.StatusAnnotationKey, ws.Annotations[mount.StatusAnnotationKey])
	}, convergeTimeout, 100*time.Millisecond, "workspace %s|%s", org.path, name)
	k := newKubectl(t, vwRoute{name: "direct", base: virtualWorkspaceURL, kubeconfig: writeDirectKubeconfig(t)}, adminContext)
	k.eventually(org.cluster.String(), func(r kubectlResult) (bool, string) {
		if r.err != nil {
			return false, r.err.Error()
		}
		got := strings.TrimSpace(r.stdout)
		return got == message, fmt.Sprintf("served %q, want %q", got, message)
	}, "get", "workspacemounts", name, "-o", "jsonpath={.status.message}")
}

// TestMountKindNotAllowed: Workspaces mounting kcp's own Workspace
// (tenancy.kcp.io) and Kubernetes' ConfigMap (the core group) are Invalid
// with reason MountKindNotAllowed, and the plugin starts no informer for
// either: on a kcp and a plugin of the test's own, whose gauges count the
// mount resources of this test alone, the only one watched is the
// KubeCluster CRD another Workspace mounts.
func TestMountKindNotAllowed(t *testing.T) {
	t.Parallel()
	server, c, cluster, ready := ownKCPWithProxy(t, "kinds")
	c.createMountedWorkspace(t, cluster, "kube", kubeClusters.ref("proxy"))
	plugin := opStartPlugin(t, t, t.TempDir(), "kinds", server.KubeconfigPath)

	c.waitForMount(t, cluster, "kube", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: ready["URL"].(string)})
	for name, ref := range map[string]tenancyv1alpha1.ObjectReference{
		"workspace": {APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "kube"},
		"configmap": {APIVersion: "v1", Kind: "ConfigMap", Name: "kube-root-ca.crt", Namespace: "default"},
	} {
		c.createMountedWorkspace(t, cluster, name, ref)
	}
	for _, name := range []string{"workspace", "configmap"} {
		status := c.waitForMount(t, cluster, name, mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountKindNotAllowed})
		require.Contains(t, status.Message, "is not a mount kind")
		require.Empty(t, status.Conditions)
		t.Logf("%s: %s", name, status.Message)
	}
	// The controller decides a Workspace's kind before its status: a kind
	// that had reached workspacemounts-mounts would be counted by now.
	opWaitMetrics(t, plugin, "only the KubeCluster CRD watched", convergeTimeout, func(m framework.Metrics) (bool, string) {
		watched := m.Value("workspacemounts_mount_kinds_watched", nil)
		denied := m.Value("workspacemounts_mount_informers_denied", nil)
		pairs := m.Value("workspacemounts_cluster_mount_informers", nil)
		return watched == 1 && denied == 0 && pairs == 1, fmt.Sprintf("mount_kinds_watched %v, mount_informers_denied %v, cluster_mount_informers %v", watched, denied, pairs)
	})
}
