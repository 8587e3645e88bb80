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
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// spoofedMessage is what a tenant's mount controller writes in a condition:
// shown as is, the right-to-left override makes "ok gnp.exe" read "ok exe.png";
// the zero-width and isolate characters make two strings that look alike differ.
const spoofedMessage = "ok \u202egnp.exe \u200b\u2066x\u2069\ufeff"

// escapedFormatCharacter matches a JSON escape of a character of category Cf
// (\u200b to \u200f, \u202a to \u202e, \u2060 to \u2069, \ufeff, \u00ad, ...):
// an answer could hold one escaped instead of as is.
var escapedFormatCharacter = regexp.MustCompile(`(?i)\\u(00ad|061c|180e|200[b-f]|202[a-e]|206\d|feff)`)

// requireNoFormatCharacter fails if s holds a character of category Cf or
// Cc but for new lines and tabs (a body's own), as is or JSON-escaped.
func requireNoFormatCharacter(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		if r == '\n' || r == '\t' || r == '\r' {
			continue
		}
		require.False(t, unicode.In(r, unicode.Cf, unicode.Cc), "%s holds %U at byte %d", what, r, i)
	}
	require.False(t, escapedFormatCharacter.MatchString(s), "%s holds an escaped format character: %s", what, escapedFormatCharacter.FindString(s))
}

// TestSpoofingCharacters: a mount condition whose message holds a
// right-to-left override, zero-width and isolate characters reaches neither
// the workspacemounts.io/status annotation nor any answer of the virtual
// workspace (JSON and Table, one cluster and *, list and get, kubectl -o wide
// and -o json, on the plugin's listener and through kcp): each is a space.
func TestSpoofingCharacters(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "spoof")
	org.mountAll(t, []vwMount{{
		workspace: "spoof", object: "spoof",
		status: map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{map[string]interface{}{
			"type": "Ready", "status": "False", "reason": "Agent\u200bGone", "message": spoofedMessage,
			"lastTransitionTime": "2026-01-02T03:04:05Z",
		}}},
		want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady},
	}})

	ws, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "spoof", metav1.GetOptions{})
	require.NoError(t, err)
	annotation := ws.Annotations[mount.StatusAnnotationKey]
	requireNoFormatCharacter(t, "the "+mount.StatusAnnotationKey+" annotation", annotation)
	status, ok := mount.StatusOf(ws.Annotations)
	require.True(t, ok)
	// The condition reached the annotation, each spoofing character a space.
	require.Contains(t, status.Message, "ok  gnp.exe")
	require.Len(t, status.Conditions, 1)
	require.Equal(t, "ok  gnp.exe   x  ", status.Conditions[0].Message)
	require.Equal(t, "Agent Gone", status.Conditions[0].Reason)
	t.Logf("%s: %s", mount.StatusAnnotationKey, annotation)

	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	for _, route := range vwRoutes(t) {
		client := rawClient(t, route, adminContext)
		for _, cluster := range []string{org.cluster.String(), "*"} {
			collection := route.base + vwPrefix + url.PathEscape(cluster) + vwResourcePath
			answers := map[string]string{
				"list":  collection,
				"table": collection + "?includeObject=Object",
			}
			if cluster != "*" {
				answers["get"] = collection + "/spoof"
			}
			for what, target := range answers {
				accept := "application/json"
				if what == "table" {
					accept = table
				}
				resp := doAccepting(t, client, http.MethodGet, target, "", "", accept)
				require.Equal(t, http.StatusOK, resp.code, "%s %s: %s", what, target, resp.body)
				require.Contains(t, resp.body, "gnp.exe", "%s %s holds the mount", what, target)
				requireNoFormatCharacter(t, route.name+" "+what+" at "+cluster, resp.body)
			}
		}
		k := newKubectl(t, route, adminContext)
		for _, cluster := range []string{org.cluster.String(), "*"} {
			wide := k.ok(cluster, "get", "workspacemounts", "-o", "wide")
			require.Contains(t, wide, "spoof")
			requireNoFormatCharacter(t, route.name+" kubectl -o wide at "+cluster, wide)
			asJSON := k.ok(cluster, "get", "workspacemounts", "-o", "json")
			require.Contains(t, asJSON, "gnp.exe")
			requireNoFormatCharacter(t, route.name+" kubectl -o json at "+cluster, asJSON)
		}
	}
}
