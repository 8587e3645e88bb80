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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for name, PEM-encoded with its key.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// secretDir is a directory laid out as the kubelet mounts a Secret: each
// file a symlink into ..data, itself a symlink to the current version.
type secretDir struct {
	dir     string
	version int
}

func (s *secretDir) write(t *testing.T, files map[string][]byte) {
	t.Helper()
	s.version++
	versionDir := fmt.Sprintf("..v%d", s.version)
	require.NoError(t, os.Mkdir(filepath.Join(s.dir, versionDir), 0o700))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(s.dir, versionDir, name), content, 0o600))
		if _, err := os.Lstat(filepath.Join(s.dir, name)); os.IsNotExist(err) {
			require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(s.dir, name)))
		}
	}
	require.NoError(t, os.Symlink(versionDir, filepath.Join(s.dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(s.dir, "..data_tmp"), filepath.Join(s.dir, "..data")))
}

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
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	servingCert, servingKey := serverCA.issue(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	pair, err := tls.X509KeyPair(servingCert, servingKey)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.cert)

	var connections atomic.Int32
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients, MinVersion: tls.VersionTLS12}
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

	secret := &secretDir{dir: t.TempDir()}
	files := func(user string) map[string][]byte {
		cert, key := clientCA.issue(t, user, x509.ExtKeyUsageClientAuth)
		return map[string][]byte{
			"kubeconfig": []byte(fmt.Sprintf(kubeconfigTemplate, server.URL)),
			"ca.crt":     serverCA.pem, "tls.crt": cert, "tls.key": key,
		}
	}
	secret.write(t, files("alice"))
	loader, err := Load(filepath.Join(secret.dir, "kubeconfig"), "")
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

	secret.write(t, files("bob"))
	require.True(t, loader.Reload(ctx))
	require.Eventually(t, func() bool { return connections.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"the old credentials' connection is closed")
	require.Equal(t, "bob", whoAmI())

	broken := files("carol")
	broken["tls.key"] = []byte("not a key")
	secret.write(t, broken)
	require.False(t, loader.Reload(ctx), "a broken key is not switched to")
	require.Equal(t, "bob", whoAmI())

	secret.write(t, files("dave"))
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
