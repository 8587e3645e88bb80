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
	"bytes"
	"crypto/x509"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

func TestShardedPKI(t *testing.T) {
	t.Parallel()

	p, err := newShardedPKI(filepath.Join(t.TempDir(), "pki"), []string{"user-1", "user-2"})
	require.NoError(t, err)

	serving := readCert(t, p.ServingCertFile)
	_, err = serving.Verify(x509.VerifyOptions{Roots: readCA(t, p.ServingCAFile), DNSName: "127.0.0.1"})
	require.NoError(t, err, "the serving certificate is for 127.0.0.1, by the serving CA")
	require.NoError(t, serving.VerifyHostname("localhost"))

	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	admin := readCert(t, p.AdminCertFile)
	_, err = admin.Verify(x509.VerifyOptions{Roots: readCA(t, p.ClientCAFile), KeyUsages: clientAuth})
	require.NoError(t, err)
	require.Equal(t, AdminUser, admin.Subject.CommonName)
	require.ElementsMatch(t, []string{"system:kcp:admin", "system:masters"}, admin.Subject.Organization)

	proxyClient := readCert(t, p.ProxyClientCertFile)
	_, err = proxyClient.Verify(x509.VerifyOptions{Roots: readCA(t, p.RequestHeaderCAFile), KeyUsages: clientAuth})
	require.NoError(t, err, "the front-proxy's client certificate is by the request-header CA")
	require.Equal(t, FrontProxyClientName, proxyClient.Subject.CommonName)
	_, err = proxyClient.Verify(x509.VerifyOptions{Roots: readCA(t, p.ClientCAFile), KeyUsages: clientAuth})
	require.Error(t, err, "and not by the client CA")

	for _, pair := range [][2]string{
		{p.AdminCertFile, p.AdminKeyFile},
		{p.ProxyClientCertFile, p.ProxyClientKeyFile},
		{p.logicalClusterAdminCertFile, p.logicalClusterAdminKeyFile},
		{p.externalLogicalClusterAdminCertFile, p.externalLogicalClusterAdminKeyFile},
	} {
		_, err := rest.HTTPClientFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: pair[0], KeyFile: pair[1], CAFile: p.ServingCAFile}})
		require.NoError(t, err, "client-go loads %s", pair[0])
	}

	_, err = keyutil.PrivateKeyFromFile(p.ServiceAccountKeyFile)
	require.NoError(t, err)
	keys, err := keyutil.PublicKeysFromFile(p.ServiceAccountPublicKeyFile)
	require.NoError(t, err)
	require.Len(t, keys, 1)

	tokens, err := os.ReadFile(p.TokenFile)
	require.NoError(t, err)
	reader := csv.NewReader(bytes.NewReader(tokens))
	reader.FieldsPerRecord = -1
	records, err := reader.ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{p.Tokens[AdminUser], AdminUser, AdminUser, "system:kcp:admin,system:masters"},
		{p.Tokens["user-1"], "user-1", "user-1"},
		{p.Tokens["user-2"], "user-2", "user-2"},
	}, records)
	require.Len(t, p.Tokens, 3)
	require.NotEqual(t, p.Tokens["user-1"], p.Tokens["user-2"])
	require.Len(t, p.Tokens["user-1"], 32)
}

func TestShardedOptionsComplete(t *testing.T) {
	t.Parallel()

	binary := fakeKCP(t, "exit 0")
	binaries := ShardedOptions{KCPBinary: binary, CacheServerBinary: binary, FrontProxyBinary: binary}

	o := binaries
	require.NoError(t, o.complete())
	require.Equal(t, []string{"shard-2"}, o.Shards)
	require.Equal(t, []string{"user-1", "user-2"}, o.Users)

	for name, change := range map[string]func(*ShardedOptions){
		`shard "root" is there twice`:  func(o *ShardedOptions) { o.Shards = []string{"root"} },
		`shard "b" is there twice`:     func(o *ShardedOptions) { o.Shards = []string{"a", "b", "b"} },
		`shard "Shard_2"`:              func(o *ShardedOptions) { o.Shards = []string{"Shard_2"} },
		`user "kcp-admin"`:             func(o *ShardedOptions) { o.Users = []string{AdminUser} },
		`user "a,b"`:                   func(o *ShardedOptions) { o.Users = []string{"a,b"} },
		`user "u" is there twice`:      func(o *ShardedOptions) { o.Users = []string{"u", "u"} },
		`service mapping "a/b"`:        func(o *ShardedOptions) { o.ServiceMappings = []ServiceMapping{{Name: "a/b"}} },
		`cache-server binary`:          func(o *ShardedOptions) { o.CacheServerBinary = filepath.Join(t.TempDir(), "none") },
		`kcp-front-proxy binary: stat`: func(o *ShardedOptions) { o.FrontProxyBinary = filepath.Join(t.TempDir(), "none") },
	} {
		o := binaries
		change(&o)
		require.ErrorContains(t, o.complete(), name)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "a.kubeconfig")
	contexts := map[string]*rest.Config{
		"cert":  {Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAFile: "/ca.crt", CertFile: "/a.crt", KeyFile: "/a.key"}},
		"token": {Host: "https://127.0.0.1:2/clusters/root", BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAFile: "/ca.crt"}},
	}
	require.ErrorContains(t, writeKubeconfig(path, contexts, "other"), `the current context "other"`)
	require.NoError(t, writeKubeconfig(path, contexts, "token"))

	raw, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	require.Equal(t, "token", raw.CurrentContext)
	for name, want := range contexts {
		require.Equal(t, &clientcmdapi.Context{Cluster: name, AuthInfo: name, LocationOfOrigin: path, Extensions: map[string]runtime.Object{}}, raw.Contexts[name])
		require.Equal(t, want.Host, raw.Clusters[name].Server)
		require.Equal(t, want.CAFile, raw.Clusters[name].CertificateAuthority)
		user := raw.AuthInfos[name]
		require.Equal(t, []string{want.CertFile, want.KeyFile, want.BearerToken}, []string{user.ClientCertificate, user.ClientKey, user.Token})
	}
}

func TestWriteMappingFile(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	s := &ShardedServer{
		PKI: &ShardedPKI{ServingCAFile: "/serving-ca.crt", ProxyClientCertFile: "/proxy.crt", ProxyClientKeyFile: "/proxy.key"},
		opts: ShardedOptions{ServiceMappings: []ServiceMapping{
			{Name: "workspacemounts", Backend: "https://127.0.0.1:3"},
			{Name: "other", Backend: "https://127.0.0.1:4", BackendCAFile: "/other-ca.crt"},
		}},
		shards: []*Shard{{Server: &Server{BaseURL: "https://127.0.0.1:1"}, Name: RootShard}},
	}
	path := filepath.Join(dir, "mapping.yaml")
	require.NoError(t, writeMappingFile(path, s.frontProxyMappings()))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var mappings []map[string]string
	require.NoError(t, yaml.Unmarshal(data, &mappings))
	entry := func(path, backend, ca string) map[string]string {
		return map[string]string{"path": path, "backend": backend, "backend_server_ca": ca, "proxy_client_cert": "/proxy.crt", "proxy_client_key": "/proxy.key"}
	}
	require.Equal(t, []map[string]string{
		entry("/services/workspacemounts/", "https://127.0.0.1:3", "/serving-ca.crt"),
		entry("/services/other/", "https://127.0.0.1:4", "/other-ca.crt"),
		entry("/services/", "https://127.0.0.1:1", "/serving-ca.crt"),
		entry("/clusters/", "https://127.0.0.1:1", "/serving-ca.crt"),
	}, mappings)
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	certs, err := cert.ParseCertsPEM(data)
	require.NoError(t, err)
	require.Len(t, certs, 1)
	return certs[0]
}

func readCA(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, path))
	return pool
}

// TestStartShardedEarlyExit: a process that exits at start fails
// StartSharded with its log's tail; the given root directory stays with
// what was written for the processes.
func TestStartShardedEarlyExit(t *testing.T) {
	t.Parallel()

	binary := fakeKCP(t, `echo "the log says why"; exit 3`)
	dir := t.TempDir()
	_, err := StartSharded(t.Context(), ShardedOptions{KCPBinary: binary, CacheServerBinary: binary, FrontProxyBinary: binary, RootDir: dir})
	require.ErrorContains(t, err, "cache-server exited before it became ready")
	require.ErrorContains(t, err, "the log says why")
	require.ErrorContains(t, err, "exit status 3")
	require.ErrorContains(t, err, "kept for inspection: "+dir)
	for _, file := range []string{"pki/admin.crt", "kubeconfigs/admin.kubeconfig", "kubeconfigs/root-shard.kubeconfig", "front-proxy-mapping.yaml", "cache-server.log"} {
		require.FileExists(t, filepath.Join(dir, file))
	}
}

// TestStartShardedRetriesTakenPorts: a port taken meanwhile makes
// StartSharded try again with new ports, in a new root directory.
func TestStartShardedRetriesTakenPorts(t *testing.T) {
	t.Parallel()

	runs := filepath.Join(t.TempDir(), "runs")
	// (--help: whether the cache server takes --client-ca-file, asked first.)
	binary := fakeKCP(t, `[ "$1" = --help ] && exit 0; echo "$PWD" >> `+runs+`; echo "listen tcp 127.0.0.1:1234: bind: address already in use"; exit 1`)
	_, err := StartSharded(t.Context(), ShardedOptions{KCPBinary: binary, CacheServerBinary: binary, FrontProxyBinary: binary})
	require.ErrorIs(t, err, errPortInUse)
	data, err := os.ReadFile(runs)
	require.NoError(t, err)
	dirs := strings.Fields(string(data))
	require.Len(t, dirs, startAttempts)
	require.NotEqual(t, dirs[0], dirs[1])
	for _, dir := range dirs {
		require.NoDirExists(t, filepath.Dir(dir), "the root directory of a failed attempt is removed")
	}
}
