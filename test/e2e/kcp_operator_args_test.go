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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// operatorProxyNames are the common names kcp-operator's
	// --requestheader-allowed-names lets assert a user: its FrontProxy's
	// and its RootShard's built-in proxy's client certificates.
	operatorFrontProxy, operatorRootShardProxy = "kcp-front-proxy", "kcp-root-shard-proxy"
	// operatorPluginUser is the user of the Kubeconfig object the
	// VirtualWorkspace's --kubeconfig comes from.
	operatorPluginUser = "workspacemounts"
)

// operatorPlugin is a plugin process started with exactly the arguments
// kcp-operator generates for a VirtualWorkspace (framework.KCPOperatorArgs),
// and clients presenting a proxy's certificate of the request-header CA.
type operatorPlugin struct {
	plugin *framework.Plugin
	// proxies present the client certificate of kcp-front-proxy and of
	// kcp-root-shard-proxy, as kcp-operator's PKI issues them.
	proxies map[string]*http.Client
}

// startOperatorPlugin starts `workspacemounts start` with
// framework.KCPOperatorArgs(files, logLevel, extraArgs...) and, as more of
// spec.extraArgs, the listeners on free ports of 127.0.0.1 (the operator's
// 0.0.0.0:6443 is not the test's to take, and the metrics listener's
// default 127.0.0.1:8080 may be another plugin's) and --run-controller=false
// (the kcp's own plugin writes the annotations; this one only serves).
// servingCA is the CA of files' serving certificate; requestHeaderCA signs
// the proxies' certificates.
func startOperatorPlugin(t, owner *testing.T, name string, files framework.KCPOperatorFiles, servingCA string, requestHeaderCA *framework.CA,
	logLevel int, extraArgs ...string,
) *operatorPlugin {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	vwPort, err := framework.FreePort(t.Context())
	require.NoError(t, err)
	metricsPort, err := framework.FreePort(t.Context())
	require.NoError(t, err)
	extraArgs = append(extraArgs, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(vwPort),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort), "--run-controller=false")
	p := &operatorPlugin{plugin: framework.StartPluginT(t, owner, framework.PluginOptions{
		Binary:        opBinary(t),
		Name:          name,
		Args:          framework.KCPOperatorArgs(files, logLevel, extraArgs...),
		SecurePort:    vwPort,
		MetricsPort:   metricsPort,
		ServingCAFile: servingCA,
		WorkDir:       dir,
		LogPath:       filepath.Join(dir, name+".log"),
	})}
	p.proxies = map[string]*http.Client{}
	for _, cn := range []string{operatorFrontProxy, operatorRootShardProxy} {
		cert, err := requestHeaderCA.ClientCert(cn)
		require.NoError(t, err)
		p.proxies[cn] = opVWClient(t, p.plugin, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: cert.CertPEM, KeyData: cert.KeyPEM}})
		p.proxies[cn].Timeout = 30 * time.Second
	}
	return p
}

// list lists WorkspaceMounts at cluster through proxy's certificate as user
// in groups, as the front-proxy forwards a request: the items, or why not.
func (p *operatorPlugin) list(t *testing.T, proxy, cluster, user string, groups ...string) ([]shardedItem, int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.plugin.VirtualWorkspaceURL+vwPrefix+cluster+vwResourcePath, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", user)
	for _, g := range groups {
		req.Header.Add("X-Remote-Group", g)
	}
	resp, err := p.proxies[proxy].Do(req)
	if err != nil {
		return nil, 0, err.Error()
	}
	defer resp.Body.Close()
	var list struct {
		Items []shardedItem `json:"items"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, resp.Status
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, resp.StatusCode, err.Error()
	}
	return list.Items, resp.StatusCode, ""
}

// TestKCPOperatorArguments starts the plugin with exactly the arguments
// kcp-operator generates for a VirtualWorkspace with spec.command
// (framework.KCPOperatorArgs) against the shared kcp, with files as the
// operator mounts them: its CAs and serving certificate, and --kubeconfig in
// the shape of a Kubeconfig object targeting the shard (contexts default at
// /clusters/root, base and shard-base; kcp's shard admin). Tenants list
// their WorkspaceMounts through the request-header path, as a front-proxy
// of either allowed name forwards them. The sharded case, a RootShard
// target with --all-shards, runs on TestSharded's kcp
// (testKCPOperatorArgumentsSharded).
func TestKCPOperatorArguments(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ca := func(name string) (*framework.CA, string) {
			ca, err := framework.NewCA(name)
			require.NoError(t, err)
			file := filepath.Join(dir, name+".crt")
			require.NoError(t, ca.WriteCertFile(file))
			return ca, file
		}
		_, clientCAFile := ca("client-ca")
		servingCA, servingCAFile := ca("server-ca")
		requestHeaderCA, requestHeaderCAFile := ca("requestheader-client-ca")
		serving, err := servingCA.ServingCert("127.0.0.1", "localhost")
		require.NoError(t, err)
		files := framework.KCPOperatorFiles{
			ClientCAFile:        clientCAFile,
			ServingCertFile:     filepath.Join(dir, "server.crt"),
			ServingKeyFile:      filepath.Join(dir, "server.key"),
			RequestHeaderCAFile: requestHeaderCAFile,
			Kubeconfig:          filepath.Join(dir, "kubeconfig"),
		}
		require.NoError(t, serving.WriteFiles(files.ServingCertFile, files.ServingKeyFile))
		shardAdmin, err := kcp.Config("shard-base")
		require.NoError(t, err)
		require.NoError(t, framework.WriteKCPOperatorKubeconfig(files.Kubeconfig, kcp.BaseURL, framework.RootPath, operatorPluginUser, shardAdmin))
		began := time.Now()
		p := startOperatorPlugin(t, t, "operator-args-single", files, servingCAFile, requestHeaderCA, 0)

		c := newClients(t)
		org, other := newVWOrg(t, c, "opargs"), newVWOrg(t, c, "opargs-other")
		mounts := standardMounts("https://mount.example.com/clusters/ready")
		org.mountAll(t, mounts)
		other.mountAll(t, mounts[:1])
		tenant := framework.UniqueName("opargs-tenant")
		grantWorkspaceReader(t, org.path, tenant)
		opWaitStarted(t, p.plugin)
		t.Logf("the plugin with kcp-operator's arguments is ready after %s", time.Since(began).Round(time.Millisecond))

		want := make([]string, 0, len(mounts))
		for _, m := range mounts {
			want = append(want, fmt.Sprintf("%s %s %s", m.workspace, org.path.Join(m.workspace), m.want.phase))
		}
		sort.Strings(want)
		for _, proxy := range []string{operatorFrontProxy, operatorRootShardProxy} {
			for _, cluster := range []string{org.path.String(), org.cluster.String(), "*"} {
				kcptestinghelpers.Eventually(t, func() (bool, string) {
					items, _, reason := p.list(t, proxy, cluster, tenant, "system:authenticated")
					if reason != "" {
						return false, reason
					}
					got := make([]string, 0, len(items))
					for _, item := range items {
						got = append(got, fmt.Sprintf("%s %s %s", item.Metadata.Name, item.Status.WorkspacePath, item.Status.Phase))
					}
					sort.Strings(got)
					return equalStrings(got, want), fmt.Sprintf("got %q, want %q", got, want)
				}, vwConvergeTimeout, 200*time.Millisecond, "%s lists %s as %s through %s%s", p.plugin.Name, cluster, tenant, proxy, opLogs(p.plugin))
			}
		}
		_, code, _ := p.list(t, operatorFrontProxy, other.path.String(), tenant, "system:authenticated")
		require.Equal(t, http.StatusForbidden, code, "another org, not granted")
	})
}

// testKCPOperatorArgumentsSharded starts the plugin with exactly the
// arguments kcp-operator generates for a VirtualWorkspace targeting the
// RootShard (target.rootShardRef: a cache server referenced, so
// --cache-kubeconfig; -v=2 of spec.logging) and --all-shards as
// spec.extraArgs, with the files of the sharded kcp's PKI as the operator
// mounts them and --kubeconfig a Kubeconfig object's targeting the
// RootShard (contexts default at /clusters/root, base and shard-base; the
// admin's client certificate of the client CA every shard trusts), and
// lists through the request-header path: the admin, as the front-proxy
// forwards it, sees the WorkspaceMounts of every shard, the tenant of
// shard-2 its own. p was started before the scenario's first steps
// (startKCPOperatorShardedPlugin), so that its start-up overlaps them.
func testKCPOperatorArgumentsSharded(t *testing.T, e *shardedEnv, sc *shardedScenario, p *operatorPlugin) {
	t.Helper()
	var exited error
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if exited = p.plugin.CheckRunning(); exited != nil {
			return true, ""
		}
		return shardsSyncedBy(t, e.s, p.plugin)
	}, shardedReadyTimeout, 500*time.Millisecond, "%s serves every shard%s", p.plugin.Name, opLogs(p.plugin))
	require.NoError(t, exited, "%s", opLogs(p.plugin))
	t.Logf("the plugin with kcp-operator's arguments has synced every shard %s after its start", time.Since(p.plugin.Started).Round(time.Millisecond))

	for _, tc := range []struct {
		user   string
		groups []string
		want   []shardedMount
	}{
		// The front-proxy passes the admin on without system:masters.
		{user: framework.AdminUser, groups: []string{"system:kcp:admin", "system:authenticated"}, want: sc.all()},
		{user: shardedTenant, groups: []string{"system:authenticated"}, want: sc.in(sc.team)},
	} {
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			items, _, reason := p.list(t, operatorFrontProxy, "*", tc.user, tc.groups...)
			if reason != "" {
				return false, reason
			}
			got := byPath(items)
			shards := map[string]bool{}
			for _, m := range tc.want {
				item, found := got[m.path()]
				if !found {
					return false, fmt.Sprintf("%s not listed in %v", m.path(), items)
				}
				if wrong := m.check(item); wrong != "" {
					return false, wrong
				}
				shards[item.Status.Shard] = true
			}
			if tc.user != framework.AdminUser && len(items) != len(tc.want) {
				return false, fmt.Sprintf("%d items, want %d: %v", len(items), len(tc.want), items)
			}
			if tc.user == framework.AdminUser && len(shards) != len(e.s.Shards()) {
				return false, fmt.Sprintf("items of the shards %v, want every shard", shards)
			}
			return true, ""
		}, vwConvergeTimeout, 200*time.Millisecond, "%s lists * as %s%s", p.plugin.Name, tc.user, opLogs(p.plugin))
	}
	_, code, _ := p.list(t, operatorRootShardProxy, sc.orgRoot.path.String(), shardedTenant, "system:authenticated")
	require.Equal(t, http.StatusForbidden, code, "an org of the root shard, not granted to %s", shardedTenant)
	// Not left to watch the shards through the steps that stop one.
	require.NoError(t, p.plugin.Stop())
}

// startKCPOperatorShardedPlugin starts the plugin of
// testKCPOperatorArgumentsSharded on e's sharded kcp, for the rest of t.
func startKCPOperatorShardedPlugin(t *testing.T, e *shardedEnv) *operatorPlugin {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, framework.WriteKCPOperatorKubeconfig(kubeconfig, e.s.Shard(framework.RootShard).BaseURL, logicalcluster.NewPath("root"),
		operatorPluginUser, e.s.AdminConfig("")))
	return startOperatorPlugin(t, t, "operator-args-sharded", e.s.KCPOperatorFiles(kubeconfig), e.s.PKI.ServingCAFile, e.s.PKI.RequestHeaderCA, 2,
		"--all-shards")
}
