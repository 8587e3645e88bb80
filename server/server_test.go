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

package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"

	"github.com/workspacemounts/workspacemounts/pkg/shards"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// kubeconfigFor writes a kubeconfig reaching server with a token.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kcp, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: kcp, user: u}}]
current-context: c
`, server)), 0o600))
	return path
}

func freeAddress(t *testing.T) string {
	t.Helper()
	listener, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	return listener.Addr().String()
}

func newServer(t *testing.T, o *Options) *Server {
	t.Helper()
	completed, err := o.Complete()
	require.NoError(t, err)
	config, err := NewConfig(completed)
	require.NoError(t, err)
	s, err := New(config.Complete())
	require.NoError(t, err)
	return s
}

func partNames(s *Server) []string {
	names := make([]string, 0, len(s.parts))
	for _, p := range s.parts {
		names = append(names, p.name)
	}
	return names
}

// TestNewInstallsWhatTheOptionsAskFor: each part once, in its start order,
// and only those the options ask for; one shard and many differ only in
// where the shards come from; nothing is written before Run.
func TestNewInstallsWhatTheOptionsAskFor(t *testing.T) {
	t.Parallel()
	base := func() *Options {
		o := NewOptions()
		o.Kubeconfig = kubeconfigFor(t, "https://127.0.0.1:1/clusters/root")
		o.VirtualWorkspace.SecureServing.ServerCert.CertDirectory = t.TempDir()
		return o
	}
	o := base()
	s := newServer(t, o)
	require.Equal(t, []string{"metrics", "kubeconfig-reloader", "kcp-contact", "workspacemounts-virtual-workspace", "workspacemounts", "shards"}, partNames(s))
	require.Equal(t, "https://127.0.0.1:1", s.ClientConfig.Host, "the shard base URL")
	require.Nil(t, s.RootKcpSharedInformerFactory, "one shard, fixed: no Shard objects followed")
	require.Equal(t, []shards.Shard{{Name: "", BaseURL: "https://127.0.0.1:1"}}, withoutConfigs(listShards(t, s)), "the one unnamed shard")
	require.NotNil(t, s.LeaseClusterClient)
	require.NotNil(t, s.store, "the shard joins the virtual workspace's store")
	entries, err := os.ReadDir(o.VirtualWorkspace.SecureServing.ServerCert.CertDirectory)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written before Run: a refused start writes nothing")

	o = base()
	o.RunController = false
	o.MetricsBindAddress = "0"
	o.VirtualWorkspace.AuthenticationKubeconfig = o.Kubeconfig
	s = newServer(t, o)
	require.Equal(t, []string{"kubeconfig-reloader", "kubeconfig-reloader", "kcp-contact", "workspacemounts-virtual-workspace", "shards"}, partNames(s))
	require.Nil(t, s.LeaseClusterClient)

	o = base()
	o.RunVirtualWorkspace = false
	o.LeaderElection.Enabled = false
	s = newServer(t, o)
	require.Equal(t, []string{"metrics", "kubeconfig-reloader", "kcp-contact", "workspacemounts", "shards"}, partNames(s))
	require.Nil(t, s.LeaseClusterClient)
	require.Nil(t, s.Authorizer)
	require.Nil(t, s.store)

	// A sharded kcp: the same parts, root's clients, the Shards in root
	// followed; no shard's clients before they are found.
	o = base()
	o.RootKubeconfig, o.ShardsKubeconfig, o.Kubeconfig = o.Kubeconfig, kubeconfigFor(t, "https://127.0.0.1:2"), ""
	s = newServer(t, o)
	require.Equal(t, []string{"metrics", "kubeconfig-reloader", "kubeconfig-reloader", "kcp-contact", "workspacemounts-virtual-workspace", "workspacemounts", "shards"},
		partNames(s))
	require.NotNil(t, s.RootKcpSharedInformerFactory, "the Shard objects in root")
	require.NotNil(t, s.store, "the shards join the virtual workspace's store")
	require.Equal(t, "https://127.0.0.1:1", s.ClientConfig.Host, "root's base URL")
	require.NotNil(t, s.LeaseClusterClient, "one Lease, in root")

	// --kubeconfig with --all-shards: the same, one kubeconfig reaching
	// root and, with its credentials, every shard; its reloader runs once.
	o = base()
	o.AllShards = true
	s = newServer(t, o)
	require.Equal(t, []string{"metrics", "kubeconfig-reloader", "kcp-contact", "workspacemounts-virtual-workspace", "workspacemounts", "shards"},
		partNames(s))
	require.NotNil(t, s.RootKcpSharedInformerFactory, "the Shard objects in root")
	require.Same(t, s.KubeconfigLoader, s.ShardsLoader, "--kubeconfig's credentials for every shard")
	require.Equal(t, "https://127.0.0.1:1", s.ClientConfig.Host, "root's base URL")
	require.NotNil(t, s.LeaseClusterClient, "one Lease, in root")

	o = base()
	o.WorkspaceWorkers = 0
	_, err = o.Complete()
	require.ErrorContains(t, err, "--workspace-workers")
}

// TestKCPOperatorKubeconfig: the kubeconfig of a kcp-operator Kubeconfig
// object (contexts default at /clusters/<workspace>, base and shard-base,
// default current) reaches the shard's base URL whatever workspace its
// current context targets, and in any context --context names.
func TestKCPOperatorKubeconfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workspace logicalcluster.Path
		context   string
		allShards bool
	}{
		{workspace: core.RootCluster.Path()},
		{workspace: logicalcluster.NewPath("root:org:team")},
		{workspace: logicalcluster.NewPath("root:org"), context: "base"},
		{workspace: logicalcluster.NewPath("root:org"), context: "shard-base", allShards: true},
		{workspace: core.RootCluster.Path(), allShards: true},
	} {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, framework.WriteKCPOperatorKubeconfig(path, "https://127.0.0.1:1/", tc.workspace, "workspacemounts", &rest.Config{BearerToken: "t"}))
		o := NewOptions()
		o.Kubeconfig, o.Context, o.AllShards = path, tc.context, tc.allShards
		o.VirtualWorkspace.SecureServing.ServerCert.CertDirectory = t.TempDir()
		s := newServer(t, o)
		require.Equal(t, "https://127.0.0.1:1", s.ClientConfig.Host, "%+v", tc)
		require.Equal(t, "https://127.0.0.1:1/clusters/root", s.TokenReviewConfig.Host, "%+v: tokens are reviewed in root", tc)
		if !tc.allShards {
			require.Equal(t, []shards.Shard{{Name: "", BaseURL: "https://127.0.0.1:1"}}, withoutConfigs(listShards(t, s)), "%+v", tc)
		}
	}
}

func listShards(t *testing.T, s *Server) []shards.Shard {
	t.Helper()
	found, err := s.ListShards(t.Context())
	require.NoError(t, err)
	return found
}

func withoutConfigs(found []shards.Shard) []shards.Shard {
	for i := range found {
		found[i].Config = nil
	}
	return found
}

// TestRunWhileKCPIsAway: the process is alive and says why it is not ready
// while kcp does not answer, and stops when asked.
func TestRunWhileKCPIsAway(t *testing.T) {
	t.Parallel()
	t.Run("one shard", func(t *testing.T) {
		t.Parallel()
		o := NewOptions()
		o.Kubeconfig = kubeconfigFor(t, "https://127.0.0.1:1")
		runWhileKCPIsAway(t, o)
	})
	t.Run("sharded", func(t *testing.T) {
		t.Parallel()
		o := NewOptions()
		o.RootKubeconfig, o.ShardsKubeconfig = kubeconfigFor(t, "https://127.0.0.1:1"), kubeconfigFor(t, "https://127.0.0.1:1")
		runWhileKCPIsAway(t, o)
	})
}

func runWhileKCPIsAway(t *testing.T, o *Options) {
	t.Helper()
	o.MetricsBindAddress = freeAddress(t)
	vwAddress := freeAddress(t)
	_, port, err := net.SplitHostPort(vwAddress)
	require.NoError(t, err)
	_, err = fmt.Sscan(port, &o.VirtualWorkspace.SecureServing.BindPort)
	require.NoError(t, err)
	o.VirtualWorkspace.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.VirtualWorkspace.SecureServing.ServerCert.CertDirectory = t.TempDir()
	s := newServer(t, o)

	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	get := func(path string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.MetricsBindAddress+path, http.NoBody)
		if err != nil {
			return 0, "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	require.Eventually(t, func() bool {
		code, _, err := get("/livez")
		return err == nil && code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "/livez answers while kcp is away")
	code, body, err := get("/readyz?verbose")
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "[-]caches-synced failed")
	require.EqualError(t, s.ready(), "waiting for kcp to answer")
	code, body, err = get("/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "workspacemounts_")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
}
