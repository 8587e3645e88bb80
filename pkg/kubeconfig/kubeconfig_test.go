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

package kubeconfig

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const kubeconfigTemplate = `apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: %s
    certificate-authority: ca.crt
users:
- name: admin
  user:
    client-certificate: tls.crt
    client-key: tls.key
contexts:
- name: shard-base
  context: {cluster: kcp, user: admin}
current-context: shard-base
`

// TestLoaderFollowsRotatedCertificates: a client certificate swapped in a
// Secret-like directory is used from the next Reload on, over new
// connections; the old connections are closed, and a broken file keeps the
// last good credentials.
func TestLoaderFollowsRotatedCertificates(t *testing.T) {
	t.Parallel()
	serverCA, err := framework.NewCA("server-ca")
	require.NoError(t, err)
	clientCA, err := framework.NewCA("client-ca")
	require.NoError(t, err)
	serving, err := serverCA.ServingCert("127.0.0.1")
	require.NoError(t, err)
	pair, err := serving.TLSCertificate()
	require.NoError(t, err)

	var connections atomic.Int32
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool(), MinVersion: tls.VersionTLS12}
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			connections.Add(1)
		case http.StateClosed, http.StateHijacked:
			connections.Add(-1)
		}
	}
	server.StartTLS()
	t.Cleanup(server.Close)

	files := func(user string) map[string][]byte {
		client, err := clientCA.ClientCert(user)
		require.NoError(t, err)
		return map[string][]byte{
			"kubeconfig": []byte(fmt.Sprintf(kubeconfigTemplate, server.URL)),
			"ca.crt":     serverCA.CertPEM, "tls.crt": client.CertPEM, "tls.key": client.KeyPEM,
		}
	}
	secret, err := framework.NewSecretDir(t.TempDir(), files("alice"))
	require.NoError(t, err)
	loader, err := Load(secret.Path("kubeconfig"), "")
	require.NoError(t, err)
	client, err := rest.HTTPClientFor(loader.Config())
	require.NoError(t, err)
	whoAmI := func() string {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, server.URL, http.NoBody)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}

	ctx := context.Background()
	require.Equal(t, "alice", whoAmI())
	require.False(t, loader.Reload(ctx), "nothing changed")
	require.Equal(t, int32(1), connections.Load())

	require.NoError(t, secret.Update(files("bob")))
	require.True(t, loader.Reload(ctx))
	require.Eventually(t, func() bool { return connections.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"the old credentials' connection is closed")
	require.Equal(t, "bob", whoAmI())

	broken := files("carol")
	broken["tls.key"] = []byte("not a key")
	require.NoError(t, secret.Update(broken))
	require.False(t, loader.Reload(ctx), "a broken key is not switched to")
	require.Equal(t, "bob", whoAmI())

	require.NoError(t, secret.Update(files("dave")))
	require.True(t, loader.Reload(ctx))
	require.Equal(t, "dave", whoAmI())
}

// TestLoadRefusesWhatCannotBeRead: a missing or malformed kubeconfig, an
// unknown context or a missing certificate fail at once.
func TestLoadRefusesWhatCannotBeRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing"), "")
	require.ErrorContains(t, err, "no such file")

	malformed := filepath.Join(dir, "malformed")
	require.NoError(t, os.WriteFile(malformed, []byte("{not yaml"), 0o600))
	_, err = Load(malformed, "")
	require.Error(t, err)

	valid := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(valid, []byte(fmt.Sprintf(kubeconfigTemplate, "https://127.0.0.1:1")), 0o600))
	_, err = Load(valid, "other")
	require.ErrorContains(t, err, "other")
	_, err = Load(valid, "")
	require.ErrorContains(t, err, "ca.crt", "the files it names must be readable")
}

// TestLoaderFollowsAMovedServer: a kubeconfig whose server changed sends
// the clients built before to the new server; a token in it follows too.
// (clientcmd sends credentials only over TLS.)
func TestLoaderFollowsAMovedServer(t *testing.T) {
	t.Parallel()
	answer := func(name string) *httptest.Server {
		server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.Header.Get("Authorization")+" "+r.URL.Path)
		}))
		t.Cleanup(server.Close)
		return server
	}
	old, moved := answer("old"), answer("moved")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	write := func(server, token string) {
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kcp, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: admin, context: {cluster: kcp, user: admin}}]
current-context: admin
`, server, token)), 0o600))
	}
	write(old.URL, "one")
	loader, err := Load(path, "")
	require.NoError(t, err)
	client, err := rest.HTTPClientFor(loader.Config())
	require.NoError(t, err)
	get := func() string {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, old.URL+"/clusters/root", http.NoBody)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	require.Equal(t, "old Bearer one /clusters/root", get())
	write(moved.URL, "two")
	require.True(t, loader.Reload(context.Background()))
	require.Equal(t, "moved Bearer two /clusters/root", get())

	// The credentials alone (--shards-kubeconfig): each request goes to the
	// host it names, with the current credentials.
	shards, err := rest.HTTPClientFor(loader.CredentialsConfig())
	require.NoError(t, err)
	for _, server := range []*httptest.Server{old, moved} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, server.URL+"/clusters/root", http.NoBody)
		require.NoError(t, err)
		resp, err := shards.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Contains(t, string(body), " Bearer two /clusters/root")
		require.True(t, strings.HasPrefix(string(body), map[*httptest.Server]string{old: "old", moved: "moved"}[server]), "sent where it names: %s", body)
	}
}

// TestReloadIgnoresOtherContexts: kcp rewrites its admin.kubeconfig at every
// start, with new tokens for other contexts; the context in use did not
// change, so nothing is switched (and no watch is cut).
func TestReloadIgnoresOtherContexts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	write := func(ours, theirs string) {
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kcp, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: shard-admin, user: {token: %q}}, {name: admin, user: {token: %q}}]
contexts: [{name: shard-base, context: {cluster: kcp, user: shard-admin}}, {name: root, context: {cluster: kcp, user: admin}}]
current-context: root
`, ours, theirs)), 0o600))
	}
	write("ours", "theirs-1")
	loader, err := Load(path, "shard-base")
	require.NoError(t, err)
	ctx := context.Background()
	write("ours", "theirs-2")
	require.False(t, loader.Reload(ctx), "another context's token changed")
	write("ours-2", "theirs-2")
	require.True(t, loader.Reload(ctx), "our token changed")
}
