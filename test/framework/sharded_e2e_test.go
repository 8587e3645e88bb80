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

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/doctor"
)

// TestShardedServer starts a two-shard kcp and checks what the multi-shard
// tests rely on: both Shards in root, a workspace placed on shard-2 (and its
// child back on root) served by path through the front-proxy, the shared
// admin credentials listing Workspaces across clusters on each shard
// directly, user tokens through the front-proxy, a service mapping to a
// backend of the test, and shard-2 stopped and started again. Slow (make
// test-sharded, make test-slow): make test's TestSharded starts the same
// sharded kcp and relies on every one of these.
//
//nolint:paralleltest // alone: it measures the start-up and the memory of the processes
func TestShardedServer(t *testing.T) {
	SkipUnlessSlow(t, "make test-sharded")
	backendPort, err := FreePort(t.Context())
	require.NoError(t, err)
	began := time.Now()
	s := StartShardedT(t, ShardedOptions{
		FeatureGates:    "WorkspaceMounts=true",
		ServiceMappings: []ServiceMapping{{Name: "echo", Backend: "https://127.0.0.1:" + strconv.Itoa(backendPort)}},
	})
	t.Logf("started from scratch in %s", time.Since(began).Round(time.Millisecond))
	logMemory(t, s)

	proxy, err := kcpclientset.NewForConfig(s.FrontProxyConfig())
	require.NoError(t, err)

	shards, err := proxy.Cluster(RootPath).CoreV1alpha1().Shards().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	names := make([]string, 0, len(shards.Items))
	for _, shard := range shards.Items {
		names = append(names, shard.Name)
		require.Equal(t, shard.Name, shard.Labels["name"], "kcp labels each Shard with its name")
		require.Equal(t, s.Shard(shard.Name).BaseURL, shard.Spec.BaseURL)
	}
	require.ElementsMatch(t, []string{RootShard, "shard-2"}, names)

	// root (root shard) > parent (shard-2) > child (root shard).
	parent := UniqueName("parent")
	parentCluster, _ := s.CreateWorkspaceOnShard(t, RootPath, parent, "shard-2")
	childCluster, _ := s.CreateWorkspaceOnShard(t, RootPath.Join(parent), "child", RootShard)

	identity := APIExportIdentityHash(t, s.FrontProxyConfig(), RootPath, tenancyv1alpha1.SchemeGroupVersion.Group)
	listWorkspacesAs := func(ctx context.Context, cfg *rest.Config) ([]string, error) {
		cfg = clients.WithWildcardIdentities(cfg, map[string]string{tenancyv1alpha1.SchemeGroupVersion.Group: identity})
		client, err := kcpclientset.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		list, err := client.TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{}) // in all clusters
		if err != nil {
			return nil, err
		}
		var workspaces []string
		for _, ws := range list.Items {
			workspaces = append(workspaces, logicalcluster.From(&ws).Path().Join(ws.Name).String())
		}
		return workspaces, nil
	}
	listWorkspaces := func(ctx context.Context, shard string) ([]string, error) {
		return listWorkspacesAs(ctx, s.AdminConfig(s.Shard(shard).BaseURL))
	}
	// A Workspace object is stored with its parent's logical cluster.
	onRoot, err := listWorkspaces(t.Context(), RootShard)
	require.NoError(t, err)
	require.Contains(t, onRoot, "root:"+parent)
	onShard2, err := listWorkspaces(t.Context(), "shard-2")
	require.NoError(t, err)
	require.Equal(t, []string{parentCluster.Path().Join("child").String()}, onShard2)
	t.Logf("Workspaces on the root shard: %v; on shard-2: %v (child's cluster %s)", onRoot, onShard2, childCluster)
	// kcp's own admin.kubeconfig of a shard works there too.
	own, err := s.Shard("shard-2").BaseConfig("shard-base")
	require.NoError(t, err)
	withOwn, err := listWorkspacesAs(t.Context(), own)
	require.NoError(t, err)
	require.Equal(t, onShard2, withOwn)

	checkUserTokens(t, s)
	checkServiceMapping(t, s, backendPort)

	shard2 := s.Shard("shard-2")
	require.NoError(t, shard2.StopProcess())
	_, err = listWorkspaces(t.Context(), "shard-2")
	require.Error(t, err, "shard-2 is down")
	_, err = proxy.Cluster(RootPath.Join(parent)).TenancyV1alpha1().Workspaces().Get(t.Context(), "child", metav1.GetOptions{})
	require.Error(t, err, "the front-proxy cannot reach %s on shard-2", parent)

	require.NoError(t, shard2.StartAgain(t.Context()))
	t.Logf("shard-2 ready again after %s", shard2.ReadyAfter.Round(time.Millisecond))
	require.Equal(t, childCluster, WaitForWorkspacePath(t, s.FrontProxyConfig(), RootPath.Join(parent).Join("child")))
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		workspaces, err := listWorkspaces(t.Context(), "shard-2")
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(workspaces, onShard2), fmt.Sprintf("shard-2 has the Workspaces %v", workspaces)
	}, WaitTimeout, pollInterval, "the Workspaces on shard-2 after its restart")
	require.NoError(t, s.CheckRunning())
	logMemory(t, s)
}

// addShardEnv makes TestShardedServerAddShard run: it takes another 55s
// (make test-sharded sets it).
const addShardEnv = "WORKSPACEMOUNTS_E2E_ADD_SHARD"

// TestShardedServerAddShard starts the root shard alone and adds shard-2
// at run time: its Shard object, a workspace placed on it, and its context
// in the admin kubeconfig.
//
//nolint:paralleltest // alone, as TestShardedServer
func TestShardedServerAddShard(t *testing.T) {
	if os.Getenv(addShardEnv) == "" {
		t.Skipf("set %s=1 (make test-sharded) to run it", addShardEnv)
	}
	s := StartShardedT(t, ShardedOptions{Shards: []string{}})
	require.Len(t, s.Shards(), 1)

	began := time.Now()
	shard, err := s.AddShard(t.Context(), "shard-2")
	require.NoError(t, err)
	t.Logf("shard-2 added in %s", time.Since(began).Round(time.Millisecond))
	_, err = s.AddShard(t.Context(), "shard-2")
	require.ErrorContains(t, err, `shard "shard-2" is there twice`)

	s.CreateWorkspaceOnShard(t, RootPath, UniqueName("on-shard-2"), shard.Name)

	raw, err := clientcmd.LoadFromFile(s.AdminKubeconfigPath)
	require.NoError(t, err)
	require.Equal(t, shard.BaseURL, raw.Clusters["shard-2-base"].Server)
	require.Equal(t, s.FrontProxyURL+"/clusters/root", raw.Clusters[raw.CurrentContext].Server)
	require.NoError(t, s.CheckRunning())
	logMemory(t, s)
}

// checkUserTokens: the users' tokens are known to the front-proxy and to
// the shards behind it (403, not 401, for a user without rights on Shards),
// a made-up one is not.
func checkUserTokens(t *testing.T, s *ShardedServer) {
	t.Helper()

	cfg, err := s.UserConfig("user-1")
	require.NoError(t, err)
	for token, want := range map[string]func(error) bool{cfg.BearerToken: apierrors.IsForbidden, "made-up": apierrors.IsUnauthorized} {
		cfg.BearerToken = token
		client, err := kcpclientset.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = client.Cluster(RootPath).CoreV1alpha1().Shards().List(t.Context(), metav1.ListOptions{})
		require.True(t, want(err), "listing Shards in root with token %q: %v", token, err)
	}
}

// checkServiceMapping: the front-proxy sends /services/echo/ to a backend
// of the test, with its client certificate and the user in X-Remote-*
// headers, system:masters dropped.
func checkServiceMapping(t *testing.T, s *ShardedServer, port int) {
	t.Helper()

	serving, err := s.PKI.ServingCA.ServingCert("127.0.0.1")
	require.NoError(t, err)
	pair, err := serving.TLSCertificate()
	require.NoError(t, err)
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s %v", r.TLS.PeerCertificates[0].Subject.CommonName, r.URL.Path, r.Header.Get("X-Remote-User"), slices.Sorted(slices.Values(r.Header.Values("X-Remote-Group"))))
	}))
	backend.Listener, err = (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	backend.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    s.PKI.RequestHeaderCA.Pool(),
		MinVersion:   tls.VersionTLS12,
	}
	backend.StartTLS()
	t.Cleanup(backend.Close)

	client, err := rest.HTTPClientFor(s.FrontProxyConfig())
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.FrontProxyURL+"/services/echo/clusters/root/x", http.NoBody)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, FrontProxyClientName+" /services/echo/clusters/root/x "+AdminUser+" [system:authenticated system:kcp:admin]", string(body))

	// Identity headers a client sends: kcp-front-proxy v0.32.1 and later
	// delete them first; earlier ones add their own beside them, so the
	// client's group reaches the backend (the hole docs/compatibility.md
	// tells production users to close with v0.32.1).
	release, err := s.FrontProxyRelease(t.Context())
	require.NoError(t, err, "which kcp-front-proxy runs")
	req.Header.Set("X-Remote-User", "intruder")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err = client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	want := "[system:authenticated system:kcp:admin]"
	if !release.AtLeast(doctor.StripsIdentityHeaders) {
		want = "[system:authenticated system:kcp:admin system:masters]"
	}
	require.Equal(t, FrontProxyClientName+" /services/echo/clusters/root/x "+AdminUser+" "+want, string(body),
		"kcp-front-proxy %s with a client's X-Remote-User and X-Remote-Group (stripped from %s on)", release, doctor.StripsIdentityHeaders)
	t.Logf("kcp-front-proxy %s: a client's X-Remote-Group reaches the backend: %t", release, !release.AtLeast(doctor.StripsIdentityHeaders))
}

// logMemory logs the memory of every process of s and their sum.
func logMemory(t *testing.T, s *ShardedServer) {
	t.Helper()

	memory, err := s.Memory()
	require.NoError(t, err)
	var total Memory
	for _, p := range s.Processes() {
		m := memory[p.Name()]
		t.Logf("%s: RSS %s, peak %s", p.Name(), MiB(m.RSS), MiB(m.Peak))
		total.RSS += m.RSS
		total.Peak += m.Peak
	}
	t.Logf("all processes: RSS %s, peaks summed %s", MiB(total.RSS), MiB(total.Peak))
}
