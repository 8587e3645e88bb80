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
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	// tenantSharesAccounts is how many ServiceAccounts of one workspace
	// open watches at *, tenantSharesAttempts how many each.
	tenantSharesAccounts, tenantSharesAttempts = 8, 10
	// tenantSharesPerUser and tenantSharesTotal are the plugin's
	// --max-watches-per-user and --max-watches.
	tenantSharesPerUser, tenantSharesTotal = 10, 60
)

// TestTenantShares is issue 33's "many identities are many users" against
// a real kcp and a plugin process of its own: 8 ServiceAccounts of one
// workspace open 10 watches each at *; together they hold one tenant's
// share, 10 watches, and the other 70 are answered 429; a ServiceAccount
// of another workspace, another tenant, then gets its watch.
func TestTenantShares(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	plugin := opStartPlugin(t, t, t.TempDir(), "tenantshares", kcp.KubeconfigPath, "--run-controller=false",
		fmt.Sprint("--max-watches=", tenantSharesTotal), fmt.Sprint("--max-watches-per-user=", tenantSharesPerUser))
	tenant, other := newVWOrg(t, c, "tshares"), newVWOrg(t, c, "tsharesother")
	tokens := make([]string, tenantSharesAccounts)
	for i := range tokens {
		tokens[i] = serviceAccountTokens(t, tenant, fmt.Sprint("watcher-", i), 1)[0]
	}
	otherToken := serviceAccountTokens(t, other, "watcher-0", 1)[0] // the same name, another workspace
	opWaitStarted(t, plugin)

	client := opVWClient(t, plugin, nil)
	client.Timeout = 0 // watches stay open until the test ends
	url := plugin.VirtualWorkspaceURL + vwPrefix + "*" + vwResourcePath + "?watch=true&timeoutSeconds=300"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // ends the watches

	codes := openWatches(ctx, t, client, url, tokens, tenantSharesAttempts)
	t.Logf("%d ServiceAccounts of one workspace, %d watches at * each: %v", tenantSharesAccounts, tenantSharesAttempts, codes)
	require.Equal(t, map[int]int{
		http.StatusOK:              tenantSharesPerUser,
		http.StatusTooManyRequests: tenantSharesAccounts*tenantSharesAttempts - tenantSharesPerUser,
	}, codes, "one tenant's share for all its ServiceAccounts%s", opLogs(plugin))

	require.Equal(t, http.StatusOK, openWatch(ctx, t, client, url, otherToken),
		"a ServiceAccount of another workspace is another tenant, and the server's watches are not all taken%s", opLogs(plugin))
	require.Equal(t, http.StatusTooManyRequests, openWatch(ctx, t, client, url, tokens[0]), "the tenant's share is still full")
}

// openWatches opens attempts watches as each token at once and counts
// their status codes.
func openWatches(ctx context.Context, t *testing.T, client *http.Client, url string, tokens []string, attempts int) map[int]int {
	t.Helper()
	var lock sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for _, token := range tokens {
		for range attempts {
			wg.Go(func() {
				code := openWatch(ctx, t, client, url, token)
				lock.Lock()
				codes[code]++
				lock.Unlock()
			})
		}
	}
	wg.Wait()
	return codes
}

// openWatch opens a watch as the token and returns its status code: an
// accepted watch stays open, read in the background, until ctx ends.
func openWatch(ctx context.Context, t *testing.T, client *http.Client, url, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req) //nolint:bodyclose // closed here, or by the reading goroutine below
	if err != nil {
		t.Errorf("a watch at *: %v", err)
		return -1
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return resp.StatusCode
}
