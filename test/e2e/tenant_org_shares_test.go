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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// orgSharesChildren is how many child workspaces of one org hold a
	// ServiceAccount each, opening orgSharesAttempts watches at *.
	orgSharesChildren, orgSharesAttempts = 5, 3
	// orgSharesPerUser and orgSharesTotal are the plugin's
	// --max-watches-per-user and --max-watches: the children, were each a
	// tenant of its own, would take them all.
	orgSharesPerUser, orgSharesTotal = 2, orgSharesChildren * 2
)

// TestTenantSharesByOrg is issue 40's "a tenant is its org" for the
// virtual workspace's shares: the ServiceAccounts of 5 child workspaces of
// one org open 3 watches each at *; together they hold the org's share, 2
// watches, not 5 x 2 = --max-watches; a ServiceAccount of another org then
// gets its watch.
func TestTenantSharesByOrg(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	plugin := opStartPlugin(t, t, t.TempDir(), "orgshares", kcp.KubeconfigPath, "--run-controller=false",
		fmt.Sprint("--max-watches=", orgSharesTotal), fmt.Sprint("--max-watches-per-user=", orgSharesPerUser))
	org, other := newVWOrg(t, c, "orgshares"), newVWOrg(t, c, "orgsharesother")
	base := kcp.BaseConfigT(t, "base")
	children := make([]vwOrg, orgSharesChildren)
	for i := range children {
		name := fmt.Sprint("child-", i)
		cluster, _ := framework.CreateWorkspace(t, base, org.path, name)
		children[i] = vwOrg{c: c, name: name, path: org.path.Join(name), cluster: cluster}
	}
	tokens := make([]string, len(children))
	for i, child := range children {
		tokens[i] = serviceAccountTokens(t, child, "watcher", 1)[0]
	}
	otherToken := serviceAccountTokens(t, other, "watcher", 1)[0]
	opWaitStarted(t, plugin)

	client := opVWClient(t, plugin, nil)
	// The plugin knows every child's LogicalCluster (and so its path) once
	// kcp-admin may list in it: a cluster it does not know is denied.
	admin := kcp.ConfigT(t, adminContext).BearerToken
	for _, child := range children {
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			code, body, err := opGet(client, plugin.VirtualWorkspaceURL+vwPrefix+child.cluster.String()+vwResourcePath, admin)
			return err == nil && code == http.StatusOK, fmt.Sprint(code, " ", body, " ", err)
		}, vwConvergeTimeout, 200*time.Millisecond, "the plugin serving %s", child.path)
	}

	client.Timeout = 0 // watches stay open until the test ends
	url := plugin.VirtualWorkspaceURL + vwPrefix + "*" + vwResourcePath + "?watch=true&timeoutSeconds=300"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the watches

	codes := openWatches(ctx, t, client, url, tokens, orgSharesAttempts)
	t.Logf("%d child workspaces of one org, %d watches at * each: %v", orgSharesChildren, orgSharesAttempts, codes)
	require.Equal(t, http.StatusOK, openWatch(ctx, t, client, url, otherToken),
		"a ServiceAccount of another org gets its watch: the org's children did not take --max-watches%s", opLogs(plugin))
	require.Equal(t, map[int]int{
		http.StatusOK:              orgSharesPerUser,
		http.StatusTooManyRequests: orgSharesChildren*orgSharesAttempts - orgSharesPerUser,
	}, codes, "one org's share for the ServiceAccounts of all its workspaces%s", opLogs(plugin))
}
