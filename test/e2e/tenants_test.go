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
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// tenantsFlooder is the ServiceAccount whose tokens flood the plugin.
	tenantsFlooder = "flooder"
	// tenantsTokens is how many tokens of it flood at once.
	tenantsTokens = 20
	// tenantsAlone and tenantsFlood are how long the honest user lists
	// alone, then beside the flood.
	tenantsAlone, tenantsFlood = 8 * time.Second, 20 * time.Second
	// tenantsHonestPause is the honest user's pause between lists.
	tenantsHonestPause = 100 * time.Millisecond
)

// TestTenants is issue 25's two tenants, against a real kcp and a plugin
// process of its own: 20 tokens of one ServiceAccount flood lists at * and
// at their workspace while an honest user lists, who must get no error (their
// p50/p99 before and during are printed); then the plugin's way to kcp is
// cut, and a review that fails is 503 with a generic message, for an
// existing cluster and a made-up one alike.
func TestTenants(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	dir := t.TempDir()

	// The plugin reaches kcp through a proxy the test can cut, and
	// authenticates client certificates of a CA of the test's (without kcp).
	proxy := startCuttableProxy(t, kcp.BaseURL)
	ca, err := framework.NewCA("tenants-ca")
	require.NoError(t, err)
	caFile := filepath.Join(dir, "client-ca.pem")
	require.NoError(t, ca.WriteCertFile(caFile))
	plugin := opStartPlugin(t, t, dir, "tenants", proxiedKubeconfig(t, dir, proxy.addr), "--run-controller=false", "--client-ca-file="+caFile)
	opWaitStarted(t, plugin)

	honestOrg, flooderOrg := newVWOrg(t, c, "thonest"), newVWOrg(t, c, "tflooder")
	honestOrg.mountAll(t, []vwMount{{workspace: "honest-a", object: "a", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	flooderOrg.mountAll(t, []vwMount{{workspace: "flooder-a", object: "a", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	grantWorkspaceReader(t, honestOrg.path, hostileUser)
	flooderName := "system:serviceaccount:default:" + tenantsFlooder
	grantWorkspaceReader(t, flooderOrg.path, flooderName)
	tokens := serviceAccountTokens(t, flooderOrg, tenantsFlooder, tenantsTokens)
	honestToken := kcp.ConfigT(t, userContext).BearerToken
	waitKCPAllows(t, honestOrg.cluster, true)

	client := opVWClient(t, plugin, nil)
	client.Timeout = 30 * time.Second
	get := func(path, token string) (int, string, error) {
		return opGet(client, plugin.VirtualWorkspaceURL+path, token)
	}
	honestPaths := []string{vwPrefix + "*" + vwResourcePath, vwPrefix + honestOrg.cluster.String() + vwResourcePath}
	flooderPaths := []string{vwPrefix + "*" + vwResourcePath, vwPrefix + flooderOrg.cluster.String() + vwResourcePath}
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		for _, p := range append(honestPaths, flooderPaths...) {
			token := honestToken
			if strings.Contains(p, flooderOrg.cluster.String()) {
				token = tokens[0]
			}
			code, body, err := get(p, token)
			if err != nil || code != http.StatusOK || !strings.Contains(body, "-a\"") {
				return false, p + ": " + excerpt(body)
			}
		}
		return true, ""
	}, vwConvergeTimeout, 200*time.Millisecond, "the plugin serves both tenants their mounts%s", opLogs(plugin))

	t.Run("20 tokens of one ServiceAccount against an honest user", func(t *testing.T) { //nolint:paralleltest // it measures latency, then the next cuts kcp
		// honest lists in turn at * and in its workspace until stop, timing each.
		honest := func(stop <-chan struct{}) ([]time.Duration, []string) {
			var took []time.Duration
			var failures []string
			for i := 0; ; i++ {
				select {
				case <-stop:
					return took, failures
				case <-time.After(tenantsHonestPause):
				}
				began := time.Now()
				code, body, err := get(honestPaths[i%2], honestToken)
				if err != nil || code != http.StatusOK {
					failures = append(failures, honestPaths[i%2]+": "+excerpt(body)+errString(err))
					continue
				}
				took = append(took, time.Since(began))
			}
		}
		alone := make(chan struct{})
		time.AfterFunc(tenantsAlone, func() { close(alone) })
		before, failedBefore := honest(alone)

		stop := make(chan struct{})
		var lock sync.Mutex
		codes := map[int]int{}
		var flood sync.WaitGroup
		for i := range tenantsTokens {
			flood.Go(func() {
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					code, _, err := get(flooderPaths[j%2], tokens[i])
					if err != nil {
						code = -1
					}
					lock.Lock()
					codes[code]++
					lock.Unlock()
				}
			})
		}
		time.AfterFunc(tenantsFlood, func() { close(stop) })
		during, failedDuring := honest(stop)
		flood.Wait()

		t.Logf("honest user alone: %d lists, p50 %s, p99 %s, max %s", len(before), percentile(before, 50), percentile(before, 99), percentile(before, 100))
		t.Logf("honest user beside %d tokens of one ServiceAccount: %d lists, p50 %s, p99 %s, max %s", tenantsTokens, len(during), percentile(during, 50), percentile(during, 99), percentile(during, 100))
		t.Logf("the flood's answers by status code (-1: no answer): %v", codes)
		require.NoError(t, plugin.CheckRunning(), "the plugin died under the flood%s", opLogs(plugin))
		require.Empty(t, failedBefore, "the honest user's errors alone")
		require.Empty(t, failedDuring, "the honest user's errors beside the flood")
		require.NotZero(t, codes[http.StatusOK], "the flood was served")
	})

	t.Run("a review that fails is 503 without detail", func(t *testing.T) { //nolint:paralleltest // it cuts the plugin's way to kcp, after the flood
		// A client certificate: authenticated without kcp. The groups differ
		// from the token's, so kcp was never asked about this identity.
		cert, err := ca.ClientCert(hostileUser, "tenants-cert")
		require.NoError(t, err)
		certClient := opVWClient(t, plugin, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: cert.CertPEM, KeyData: cert.KeyPEM}})
		proxy.cut()

		answers := map[string]string{}
		for _, cluster := range []string{honestOrg.cluster.String(), flooderOrg.cluster.String(), "madeup" + strings.ToLower(framework.UniqueName("x"))} {
			code, body, err := opGet(certClient, plugin.VirtualWorkspaceURL+vwPrefix+cluster+vwResourcePath, "")
			require.NoError(t, err)
			t.Logf("%s: %d %s", cluster, code, excerpt(body))
			require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", cluster, body)
			for _, detail := range []string{proxy.addr, "dial tcp", "connection refused", "subjectaccessreviews", cluster} {
				require.NotContains(t, body, detail, "the answer for %s tells %q", cluster, detail)
			}
			answers[cluster] = body
		}
		var distinct []string
		for _, body := range answers {
			if len(distinct) == 0 || distinct[0] != body {
				distinct = append(distinct, body)
			}
		}
		require.Len(t, distinct, 1, "one answer for every cluster, existing or not: %v", answers)
		logs := plugin.LogTail(200)
		require.Contains(t, logs, "Authorization failed", "the detail is in the plugin's log")
	})
}

// serviceAccountTokens creates the ServiceAccount in org's default namespace
// and n tokens of it (TokenRequest: each its own credential id).
func serviceAccountTokens(t *testing.T, org vwOrg, name string, n int) []string {
	t.Helper()
	client, err := kcpkubernetesclientset.NewForConfig(kcp.BaseConfigT(t, "base"))
	require.NoError(t, err)
	accounts := client.Cluster(org.path).CoreV1().ServiceAccounts("default")
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		_, err := accounts.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err == nil, errString(err)
	}, vwConvergeTimeout, 200*time.Millisecond, "creating ServiceAccount %s", name)
	tokens := make([]string, n)
	expiration := int64(3600)
	for i := range tokens {
		req, err := accounts.CreateToken(t.Context(), name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
		require.NoError(t, err, "a token of %s", name)
		tokens[i] = req.Status.Token
	}
	return tokens
}

// percentile is the p-th percentile of took (100: the maximum).
func percentile(took []time.Duration, p int) time.Duration {
	if len(took) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), took...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// proxiedKubeconfig is kcp's admin.kubeconfig with every server reached
// through addr instead.
func proxiedKubeconfig(t *testing.T, dir, addr string) string {
	t.Helper()
	config, err := clientcmd.LoadFromFile(kcp.KubeconfigPath)
	require.NoError(t, err)
	for _, cluster := range config.Clusters {
		u, err := url.Parse(cluster.Server)
		require.NoError(t, err)
		u.Host = addr
		cluster.Server = u.String()
	}
	path := filepath.Join(dir, "proxied.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*config, path))
	return path
}

// cuttableProxy forwards TCP connections on 127.0.0.1 to kcp until cut:
// then it closes them and its listener, so that the plugin's way to kcp
// fails as a shard that is down (connection refused).
type cuttableProxy struct {
	listener net.Listener
	addr     string

	lock  sync.Mutex
	conns []net.Conn
	isCut bool
}

func startCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	listener, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cuttableProxy{listener: listener, addr: listener.Addr().String()}
	go func() {
		for {
			in, err := listener.Accept()
			if err != nil {
				return
			}
			out, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(context.Background(), "tcp", u.Host)
			if err != nil {
				_ = in.Close()
				continue
			}
			if !p.track(in, out) {
				continue
			}
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// track keeps the connections to close when cut, or closes them if it is.
func (p *cuttableProxy) track(conns ...net.Conn) bool {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.isCut {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	p.conns = append(p.conns, conns...)
	return true
}

func (p *cuttableProxy) cut() {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.isCut {
		return
	}
	p.isCut = true
	if err := p.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
}
