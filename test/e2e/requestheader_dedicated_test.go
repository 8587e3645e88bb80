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
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/test/framework"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
)

// TestRequestHeaderDedicatedCA: `workspacemounts start
// --requestheader-dedicated-ca` against the e2e kcp takes X-Remote-* headers
// from a client certificate of its request-header CA that has no CommonName
// (as kcp-dev/helm-charts' kcp chart issues the front-proxy's): the user is
// authenticated and kcp is asked (200 or 403, never 401); without a user, or
// from a certificate of another CA, 401; the start logs the warning once.
// Without the flag, server_test.go's TestServerRequestHeaderDedicatedCA
// shows the same certificate refused.
func TestRequestHeaderDedicatedCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, caFile := opRequestHeaderCA(t, dir, "dedicated-front-proxy-ca")
	p := opStartPlugin(t, t, dir, "dedicated-ca", kcp.KubeconfigPath,
		append([]string{"--run-controller=false", "--requestheader-dedicated-ca"}, framework.RequestHeaderArgs(caFile)...)...)
	opWaitStarted(t, p)

	get := func(t *testing.T, kp *framework.KeyPair, user string) int {
		t.Helper()
		client := opVWClient(t, p, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: kp.CertPEM, KeyData: kp.KeyPEM}})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.VirtualWorkspaceURL+vwPrefix+"root"+vwResourcePath, http.NoBody)
		require.NoError(t, err)
		if user != "" {
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	frontProxy, err := ca.ClientCertWithoutCommonName("kcp-front-proxy")
	require.NoError(t, err)
	require.Empty(t, frontProxy.Cert.Subject.CommonName)
	other, err := framework.NewCA("another-ca")
	require.NoError(t, err)
	stranger, err := other.ClientCertWithoutCommonName("kcp-front-proxy")
	require.NoError(t, err)

	// Authenticated, the user gets what kcp's SubjectAccessReview says in
	// root: a list or a denial, never 401.
	require.Contains(t, []int{http.StatusOK, http.StatusForbidden}, get(t, frontProxy, "dedicated-ca-user"),
		"the front-proxy's certificate without a CN authenticates its X-Remote-User%s", opLogs(p))
	require.Equal(t, http.StatusUnauthorized, get(t, frontProxy, ""), "the front-proxy's certificate without a user%s", opLogs(p))
	require.Equal(t, http.StatusUnauthorized, get(t, stranger, "dedicated-ca-user"), "a certificate of another CA%s", opLogs(p))
	require.Equal(t, 1, countLogLines(t, p, apiserver.RequestHeaderDedicatedCAWarning), "the warning, once (log %s)", p.LogPath)
}
