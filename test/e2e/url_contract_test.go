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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// kcpReasonInvalidURL is the reason of kcp's condition WorkspaceMountReady
// for a Ready mount whose URL kcp's form refuses (kcp v0.33 and later,
// tenancyv1alpha1.MountObjectInvalidURLReason, which kcp's SDK v0.32.3
// lacks).
const kcpReasonInvalidURL = "MountObjectInvalidURL"

// refusedMountURLs are the mount URLs kcp's newer contract refuses (kcp's
// workspacemounts_reconcile_updater_test.go @3f4358ca, every row, and a
// fragment), each with the reason of the status annotation for it.
var refusedMountURLs = []struct{ url, reason string }{
	{"http://attacker.example.com", mount.ReasonMountURLInvalid},
	{"https://user:token@attacker.example.com", mount.ReasonMountURLInvalid},
	{"https://attacker.example.com/?x=y", mount.ReasonMountURLInvalid},
	{"https://attacker.example.com/clusters/x#top", mount.ReasonMountURLInvalid},
	{"attacker.example.com", mount.ReasonMountURLInvalid},
	// The KubeCluster CRD lets status.URL be "": a Ready mount with no URL.
	{"", mount.ReasonMountURLMissing},
}

// TestMountURLContract is kcp's newer mount contract at level 3 on kcp
// v0.28.1 (gate off, the plugin writing spec.URL): a Ready mount whose URL
// kcp's https form refuses is not copied to spec.URL (which stays unset, or
// keeps the routable URL it had), kcp's condition WorkspaceMountReady is
// False with kcp's reason MountObjectInvalidURL, the plugin's condition
// and status annotation say MountURLInvalid (MountURLMissing for ""), and
// kcp's phase rule makes the Workspace Unavailable, a Ready one and one
// never Ready alike, and keeps it so; an https URL with a public host is
// copied to spec.URL, and the Workspace is Ready.
func TestMountURLContract(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := sharedURLEnv(t)
	org, _ := e.newOrg(t, "urlcontract")

	type urlCase struct {
		name string
		// from, when set, is the URL the mount is Ready at first: the
		// Workspace is Ready with spec.URL from before the mount turns to url.
		from, url string
		// reason is the status annotation's, ReasonMountReady for a routed URL.
		reason string
	}
	cases := make([]urlCase, 0, 2+len(refusedMountURLs))
	cases = append(cases,
		urlCase{name: "https", url: "https://mounts.example.com/clusters/root:dest", reason: mount.ReasonMountReady},
		urlCase{name: "flip-to-http", from: "https://mounts.example.com/clusters/root:flip", url: "http://attacker.example.com", reason: mount.ReasonMountURLInvalid})
	for i, refused := range refusedMountURLs {
		cases = append(cases, urlCase{name: "refused-" + string(rune('a'+i)), url: refused.url, reason: refused.reason})
	}

	// The cases run in parallel within one group, which returns when all
	// have ended.
	t.Run("cases", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e.requireURLCase(t, org, tc.name, tc.from, tc.url, tc.reason)
			})
		}
	})
	if t.Failed() {
		return
	}

	// kcp's workspace controller applies its phase rule to these
	// Workspaces too: had it another phase for one, it would write it.
	t.Log("steady state: kcp keeps the phases (no Workspace of the test changes)")
	names := make([]string, len(cases))
	for i, tc := range cases {
		names[i] = tc.name
	}
	before := e.resourceVersions(t, org, names)
	time.Sleep(condSettle + condSteadyFor)
	require.Equal(t, before, e.resourceVersions(t, org, names), "a Workspace changed at steady state (resourceVersions)")
	t.Logf("TestMountURLContract took %s (the shared kcp's start included if this test started it)", time.Since(began).Round(time.Second))
}

// requireURLCase: Workspace name of cluster, mounting a KubeCluster Ready
// at from (when set) and then at url, is routed to url when the status
// annotation's reason for it is ReasonMountReady; else it is not, and
// Unavailable.
func (e *urlEnv) requireURLCase(t *testing.T, cluster logicalcluster.Path, name, from, url, reason string) {
	t.Helper()
	first := url
	if from != "" {
		first = from
	}
	t.Logf("workspace %s mounts KubeCluster %s, Ready at %q", cluster.Join(name), name, first)
	e.mounted(t, cluster, name, first)
	if from != "" {
		e.c.waitForMount(t, cluster, name, urlMountState(from, mount.ReasonMountReady))
		e.waitWorkspace(t, cluster, name, routedWant(from))
		t.Logf("the mount turns Ready at %q", url)
		e.c.setMountStatus(t, cluster, kubeClusters, name, map[string]interface{}{"phase": "Ready", "URL": url})
	}

	e.c.waitForMount(t, cluster, name, urlMountState(url, reason))
	if reason == mount.ReasonMountReady {
		e.waitWorkspace(t, cluster, name, routedWant(url))
		return
	}
	// spec.URL is kcp's routing field: unset for a Workspace never
	// routed, the last routable URL for one that was.
	e.waitWorkspace(t, cluster, name, condWant{
		// kcp's rule (updateTerminalConditionPhase, which kcp v0.28.1's
		// phase reconciler applies to a Workspace with spec.mount in any
		// phase): a False Workspace* condition makes it Unavailable, one
		// never Ready (Scheduling) included.
		phase:  corev1alpha1.LogicalClusterPhaseUnavailable,
		status: corev1.ConditionFalse, reason: reason, severity: conditionsv1alpha1.ConditionSeverityError,
		inTree: corev1.ConditionFalse, inTreeReason: kcpReasonInvalidURL,
		url: &from,
	})
}

// resourceVersions returns the resourceVersion of each Workspace names of cluster.
func (e *urlEnv) resourceVersions(t *testing.T, cluster logicalcluster.Path, names []string) map[string]string {
	t.Helper()
	versions := map[string]string{}
	for _, name := range names {
		ws, err := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		versions[name] = ws.ResourceVersion
	}
	return versions
}

// routedWant is a Workspace at level 3 whose mount is Ready at url, a
// routable one: spec.URL is url, both conditions True, phase Ready.
func routedWant(url string) condWant {
	return condWant{phase: corev1alpha1.LogicalClusterPhaseReady,
		status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue, url: &url}
}
