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
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestRefusalsCloseConnections: against a real kcp, and a plugin of its own
// with one watch per user, a request refused for its credential (a made-up
// bearer token: 401, from kcp's TokenReview, then from the failed-token
// cache) or for a share (the user's second watch: 429) ends its HTTP/1.1
// connection: the plugin closes it after the answer, as a tenant holding the
// connection sees.
func TestRefusalsCloseConnections(t *testing.T) {
	t.Parallel()
	plugin := opStartPlugin(t, t, t.TempDir(), "refusals", kcp.KubeconfigPath, "--run-controller=false", "--max-watches-per-user=1")
	opWaitStarted(t, plugin)
	token := kcp.ConfigT(t, userContext).BearerToken
	watch := vwPrefix + "*" + vwResourcePath + "?watch=true"

	// The user's one watch, open until the end.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := opVWClient(t, plugin, nil)
	client.Timeout = 0
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, plugin.VirtualWorkspaceURL+watch, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode, "the user's one watch%s", opLogs(plugin))

	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{name: "a made-up token", token: "made-up-token", code: http.StatusUnauthorized},
		{name: "the same token again, remembered as refused", token: "made-up-token", code: http.StatusUnauthorized},
		{name: "the user's second watch", token: token, code: http.StatusTooManyRequests},
	} {
		code, closed := refusedOverHTTP1(t, plugin, watch, tc.token)
		require.Equal(t, tc.code, code, tc.name)
		require.True(t, closed, "%s: the plugin closes the connection after the answer", tc.name)
	}
}

// refusedOverHTTP1 sends one GET of path with a bearer token on a connection
// of its own, reads the answer, and tells whether the plugin then closes the
// connection (within 5 s, the client holding it open).
func refusedOverHTTP1(t *testing.T, plugin *framework.Plugin, path, token string) (code int, closed bool) {
	t.Helper()
	caPEM, err := os.ReadFile(plugin.CAFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	base, err := url.Parse(plugin.VirtualWorkspaceURL)
	require.NoError(t, err)
	dialer := &tls.Dialer{Config: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, ServerName: base.Hostname()}}
	conn, err := dialer.DialContext(context.Background(), "tcp", base.Host)
	require.NoError(t, err)
	defer conn.Close()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, plugin.VirtualWorkspaceURL+path, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	require.NoError(t, req.Write(conn))
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, req)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = reader.ReadByte()
	return resp.StatusCode, errors.Is(err, io.EOF)
}
