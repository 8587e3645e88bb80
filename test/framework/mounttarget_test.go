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

package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// whoami posts a SelfSubjectReview to url with cert (none if nil) and
// headers, and returns the status code and body.
func whoami(t *testing.T, url string, roots *x509.CertPool, cert *KeyPair, headers http.Header) (int, []byte) {
	t.Helper()
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c, err := cert.TLSCertificate()
		require.NoError(t, err)
		config.Certificates = []tls.Certificate{c}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func TestMountTarget(t *testing.T) {
	t.Parallel()
	proxyCA, err := NewCA("mount-proxy-client-ca")
	require.NoError(t, err)
	otherCA, err := NewCA("someone-else")
	require.NoError(t, err)
	proxy, err := proxyCA.ClientCert(MountProxyClientName)
	require.NoError(t, err)
	wrongName, err := proxyCA.ClientCert("kcp-front-proxy")
	require.NoError(t, err)
	forged, err := otherCA.ClientCert(MountProxyClientName)
	require.NoError(t, err)
	serving, err := proxyCA.ServingCert("127.0.0.1")
	require.NoError(t, err)

	server := httptest.NewUnstartedServer(&mountTarget{proxyCAs: proxyCA.Pool(), proxyNames: []string{MountProxyClientName}})
	server.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	server.StartTLS()
	t.Cleanup(server.Close)
	roots := x509.NewCertPool()
	roots.AddCert(server.Certificate())

	for _, tc := range []struct {
		name     string
		cert     *KeyPair
		headers  http.Header
		wantCode int
		want     authenticationv1.UserInfo // with wantCode 201
		wantMsg  string                    // in the Status, otherwise
	}{
		{
			name: "kcp's mount proxy names the caller", cert: proxy,
			headers: http.Header{
				"X-Remote-User": {"alice"}, "X-Remote-Group": {"team-a", "system:authenticated"},
				"X-Remote-Extra-Authentication.kubernetes.io%2fcredential-Id": {"X509SHA256=ab"},
				"X-Kcp-Mount-Hops": {"1"},
			},
			wantCode: http.StatusCreated,
			want: authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a", "system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=ab"}}},
		},
		{
			name: "a bearer token is never an identity", cert: proxy,
			headers:  http.Header{"Authorization": {"Bearer admin-token"}, "X-Kcp-Mount-Hops": {"1"}},
			wantCode: http.StatusCreated,
			want:     authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		},
		{
			name: "below the hop limit", cert: proxy, headers: http.Header{"X-Remote-User": {"bob"}, "X-Kcp-Mount-Hops": {"2"}},
			wantCode: http.StatusCreated, want: authenticationv1.UserInfo{Username: "bob"},
		},
		{
			name: "without the hop header (kcp before v0.33)", cert: proxy, headers: http.Header{"X-Remote-User": {"bob"}},
			wantCode: http.StatusCreated, want: authenticationv1.UserInfo{Username: "bob"},
		},
		{
			name: "at the hop limit", cert: proxy, headers: http.Header{"X-Remote-User": {"bob"}, "X-Kcp-Mount-Hops": {"3"}},
			wantCode: http.StatusLoopDetected, wantMsg: "through 3 mount targets",
		},
		{
			name: "beyond the hop limit", cert: proxy, headers: http.Header{"X-Kcp-Mount-Hops": {"7"}},
			wantCode: http.StatusLoopDetected, wantMsg: "form a loop",
		},
		{
			name: "identity headers without a certificate", headers: http.Header{"X-Remote-User": {"admin"}, "X-Remote-Group": {"system:masters"}},
			wantCode: http.StatusUnauthorized, wantMsg: "no client certificate",
		},
		{
			name: "a bearer token without a certificate", headers: http.Header{"Authorization": {"Bearer admin-token"}},
			wantCode: http.StatusUnauthorized, wantMsg: "no client certificate",
		},
		{
			name: "a certificate of another CA with the proxy's name", cert: forged, headers: http.Header{"X-Remote-User": {"admin"}},
			wantCode: http.StatusUnauthorized, wantMsg: "not kcp's mount proxy's",
		},
		{
			name: "a certificate of the CA with another name", cert: wrongName, headers: http.Header{"X-Remote-User": {"admin"}},
			wantCode: http.StatusUnauthorized, wantMsg: `"kcp-front-proxy" is not kcp's mount proxy's`,
		},
		{
			name: "a serving certificate of the CA", cert: serving, headers: http.Header{"X-Remote-User": {"admin"}},
			wantCode: http.StatusUnauthorized, wantMsg: "not kcp's mount proxy's",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body := whoami(t, server.URL, roots, tc.cert, tc.headers)
			require.Equal(t, tc.wantCode, code, "%s", body)
			if tc.wantCode == http.StatusCreated {
				var review authenticationv1.SelfSubjectReview
				require.NoError(t, json.Unmarshal(body, &review))
				require.Equal(t, tc.want, review.Status.UserInfo)
				return
			}
			var status metav1.Status
			require.NoError(t, json.Unmarshal(body, &status), "%s", body)
			require.EqualValues(t, tc.wantCode, status.Code)
			require.Contains(t, status.Message, tc.wantMsg)
		})
	}
}

func TestParseMountProxyFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		help string
		want MountProxyFlags
	}{
		{name: "kcp v0.28.1", help: "      --miniproxy-mapping-file string   DEVELOPMENT ONLY.\n      --shard-client-cert-file string   Path to a client certificate file", want: MountProxyFlags{}},
		{
			name: "kcp v0.32.3",
			help: "      --mount-proxy-client-cert-file string   Path to a client certificate file (signed by the front-proxy requestheader CA)\n" +
				"      --mount-proxy-client-key-file string    Path to the key file for --mount-proxy-client-cert-file.",
			want: MountProxyFlags{ClientCert: true},
		},
		{
			name: "kcp's newer mount proxy",
			help: "      --mount-proxy-client-cert-file string\n      --mount-proxy-client-key-file string\n      --mount-proxy-server-ca-file string   CA bundle",
			want: MountProxyFlags{ClientCert: true, ServerCA: true},
		},
		{name: "named in another flag's help only", help: "      --foo string   unlike --mount-proxy-client-cert-file-ish things", want: MountProxyFlags{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, parseMountProxyFlags(tc.help))
		})
	}
}

// TestMountProvider starts one and asks it as kcp's mount proxy would, with
// the files it wrote for kcp.
func TestMountProvider(t *testing.T) {
	t.Parallel()
	p, err := StartMountProvider(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Stop()) })
	require.True(t, strings.HasPrefix(p.URL, "https://127.0.0.1:"), p.URL)

	caPEM, err := os.ReadFile(p.ServerCAFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	certPEM, err := os.ReadFile(p.ClientCertFile)
	require.NoError(t, err)
	keyPEM, err := os.ReadFile(p.ClientKeyFile)
	require.NoError(t, err)

	code, body := whoami(t, p.URL, roots, &KeyPair{CertPEM: certPEM, KeyPEM: keyPEM}, http.Header{"X-Remote-User": {"alice"}, "X-Kcp-Mount-Hops": {"1"}})
	require.Equal(t, http.StatusCreated, code, "%s", body)
	require.Contains(t, string(body), `"username":"alice"`)
	code, body = whoami(t, p.URL, roots, nil, http.Header{"X-Remote-User": {"alice"}})
	require.Equal(t, http.StatusUnauthorized, code, "%s", body)

	require.Empty(t, p.KCPArgs(MountProxyFlags{}))
	require.Equal(t, []string{"--mount-proxy-client-cert-file=" + p.ClientCertFile, "--mount-proxy-client-key-file=" + p.ClientKeyFile}, p.KCPArgs(MountProxyFlags{ClientCert: true}))
	require.Equal(t, []string{
		"--mount-proxy-client-cert-file=" + p.ClientCertFile, "--mount-proxy-client-key-file=" + p.ClientKeyFile,
		"--mount-proxy-server-ca-file=" + p.ServerCAFile,
	}, p.KCPArgs(MountProxyFlags{ClientCert: true, ServerCA: true}))
}
