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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
// and status annotation say MountURLInvalid, and kcp's phase rule makes
// the Workspace Unavailable; an https URL with a public host is copied to
// spec.URL, and the Workspace is Ready.
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
	cases := []urlCase{
		{name: "https", url: "https://mounts.example.com/clusters/root:dest", reason: mount.ReasonMountReady},
		{name: "flip-to-http", from: "https://mounts.example.com/clusters/root:flip", url: "http://attacker.example.com", reason: mount.ReasonMountURLInvalid},
	}
	for i, refused := range refusedMountURLs {
		cases = append(cases, urlCase{name: "refused-" + string(rune('a'+i)), url: refused.url, reason: refused.reason})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := tc.url
			if tc.from != "" {
				first = tc.from
			}
			t.Logf("workspace %s mounts KubeCluster %s, Ready at %q", org.Join(tc.name), tc.name, first)
			e.mounted(t, org, tc.name, first)
			if tc.from != "" {
				e.c.waitForMount(t, org, tc.name, urlMountState(tc.from, mount.ReasonMountReady))
				e.waitWorkspace(t, org, tc.name, routedWant(tc.from))
				t.Logf("the mount turns Ready at %q", tc.url)
				e.c.setMountStatus(t, org, kubeClusters, tc.name, map[string]interface{}{"phase": "Ready", "URL": tc.url})
			}

			e.c.waitForMount(t, org, tc.name, urlMountState(tc.url, tc.reason))
			if tc.reason == mount.ReasonMountReady {
				e.waitWorkspace(t, org, tc.name, routedWant(tc.url))
				return
			}
			// spec.URL is kcp's routing field: unset for a Workspace never
			// routed, the last routable URL for one that was.
			specURL := tc.from
			want := condWant{
				// kcp's rule (updateTerminalConditionPhase, v0.28.1): a False
				// Workspace* condition makes the Workspace Unavailable, one
				// that was never Ready (Scheduling) included.
				phase:  corev1alpha1.LogicalClusterPhaseUnavailable,
				status: corev1.ConditionFalse, reason: tc.reason, severity: conditionsv1alpha1.ConditionSeverityError,
				inTree: corev1.ConditionFalse, inTreeReason: kcpReasonInvalidURL,
				url: &specURL,
			}
			e.waitWorkspace(t, org, tc.name, want)
		})
	}
	t.Cleanup(func() {
		t.Logf("TestMountURLContract took %s (the shared kcp's start included if this test started it)", time.Since(began).Round(time.Second))
	})
}

// routedWant is a Workspace at level 3 whose mount is Ready at url, a
// routable one: spec.URL is url, both conditions True, phase Ready.
func routedWant(url string) condWant {
	return condWant{phase: corev1alpha1.LogicalClusterPhaseReady,
		status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue, url: &url}
}
