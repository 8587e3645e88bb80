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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// reviewsMetric is the plugin's count of the SubjectAccessReviews it sent kcp.
const reviewsMetric = "workspacemounts_authorization_reviews_total"

// TestSelectorsCostTheSameReviews: at *, what a list costs in reviews of
// kcp does not tell whether an object the user may not see matches its
// selector. The user lists * with a label selector that matches only a
// WorkspaceMount of another tenant's org (customer=bigbank) and with one
// that matches nothing; the plugin's own workspacemounts_authorization_reviews_total
// counts the same reviews for both (one per cluster), with and without
// limit=1. The plugin keeps no answer (TTLs 0), so that each list asks.
//
//nolint:paralleltest // the count depends on the clusters served: no other test may add any meanwhile
func TestSelectorsCostTheSameReviews(t *testing.T) {
	c := newClients(t)
	plugin := opStartPlugin(t, t, t.TempDir(), "reviewcost", kcp.KubeconfigPath, "--run-controller=false",
		"--authorization-webhook-cache-authorized-ttl=0", "--authorization-webhook-cache-unauthorized-ttl=0", "--authorization-stale-grace=0")
	opWaitStarted(t, plugin)
	client := opVWClient(t, plugin, nil)
	token := kcp.ConfigT(t, userContext).BearerToken

	mine, theirs := newVWOrg(t, c, "rcmine"), newVWOrg(t, c, "rctheirs")
	notFound := mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}
	mine.mountAll(t, []vwMount{{workspace: "mine", object: "a", labels: map[string]string{"customer": "acme"}, want: notFound}})
	theirs.mountAll(t, []vwMount{{workspace: "theirs", object: "a", labels: map[string]string{"customer": "bigbank"}, want: notFound}})
	grantWorkspaceReader(t, mine.path, hostileUser)
	waitKCPAllows(t, mine.cluster, true)

	list := func(query string) (reviews float64, body string) {
		t.Helper()
		before := scrapeReviews(t, plugin)
		resp := do(t, client, http.MethodGet, plugin.VirtualWorkspaceURL+vwPrefix+"*"+vwResourcePath+"?"+query, token, "")
		require.Equal(t, http.StatusOK, resp.code, "%s: %s", query, resp.body)
		return scrapeReviews(t, plugin) - before, resp.body
	}
	// The plugin serves both orgs' WorkspaceMounts (as the admin sees them).
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		resp := do(t, client, http.MethodGet, plugin.VirtualWorkspaceURL+vwPrefix+theirs.cluster.String()+vwResourcePath, kcp.ConfigT(t, adminContext).BearerToken, "")
		return resp.code == http.StatusOK && strings.Contains(resp.body, `"name":"theirs"`), resp.body
	}, vwConvergeTimeout, 100*time.Millisecond, "the plugin serves %s", theirs.path)

	for _, extra := range []string{"", "&limit=1"} {
		matching, body := list("labelSelector=" + url.QueryEscape("customer=bigbank") + extra)
		require.NotContains(t, body, `"name":"theirs"`, "the user does not see the other org's WorkspaceMount")
		notMatching, _ := list("labelSelector=" + url.QueryEscape("customer=nobody") + extra)
		t.Logf("at * with %q: %v reviews for a selector matching only another tenant's object, %v for one matching nothing", extra, matching, notMatching)
		require.Positive(t, notMatching, "each list asks kcp (no answer kept)")
		require.InDelta(t, notMatching, matching, 0, "the reviews a list costs do not depend on what the user cannot see")
	}
}

// scrapeReviews is the plugin's workspacemounts_authorization_reviews_total, all results.
func scrapeReviews(t *testing.T, plugin *framework.Plugin) float64 {
	t.Helper()
	m, err := framework.ScrapeMetrics(context.Background(), opHTTP, plugin.MetricsURL+"/metrics")
	require.NoError(t, err)
	return m.Value(reviewsMetric, nil)
}
