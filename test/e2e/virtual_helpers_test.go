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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// kubectlTimeout bounds one kubectl run.
	kubectlTimeout = time.Minute
	// vwConvergeTimeout bounds how long the virtual workspace may lag behind
	// the Workspace annotations (one informer event).
	vwConvergeTimeout = 30 * time.Second
	// vwPrefix is where the virtual workspace is served, on both routes.
	vwPrefix = "/services/workspacemounts/clusters/"
	// vwResourcePath is the WorkspaceMount collection below a cluster.
	vwResourcePath = "/apis/workspacemounts.io/v1alpha1/workspacemounts"
)

// Contexts of kcp's admin.kubeconfig, and of the direct kubeconfig written from it.
const (
	adminContext = "root" // kcp-admin, group system:kcp:admin
	userContext  = "user" // the "user" battery's non-admin user
)

// vwRoute is one way to reach the virtual workspace with kubectl.
type vwRoute struct {
	name string
	// base is the URL without a path.
	base string
	// kubeconfig has the contexts adminContext and userContext, and trusts base's serving certificate.
	kubeconfig string
}

// server is the --server of a cluster segment (a logical cluster name, a workspace path or *).
func (r vwRoute) server(cluster string) string {
	return r.base + vwPrefix + cluster
}

// vwRoutes returns the two routes: the plugin's own listener (with a
// kubeconfig written for it, trusting its self-signed certificate), and kcp's
// mini-proxy (kcp's own admin.kubeconfig, as a user would use it).
func vwRoutes(t *testing.T) []vwRoute {
	t.Helper()
	return []vwRoute{
		{name: "direct", base: virtualWorkspaceURL, kubeconfig: writeDirectKubeconfig(t)},
		{name: "kcp", base: kcp.BaseURL, kubeconfig: kcp.KubeconfigPath},
	}
}

// writeDirectKubeconfig writes a kubeconfig with the credentials of
// admin.kubeconfig's contexts root and user, and a cluster at the plugin's
// listener whose CA is its self-signed certificate.
func writeDirectKubeconfig(t *testing.T) string {
	t.Helper()
	return writePluginKubeconfig(t, virtualWorkspaceURL, vwCAFile())
}

// writePluginKubeconfig writes a kubeconfig with the credentials of
// admin.kubeconfig's contexts root and user, and a cluster at a plugin's
// listener url whose CA is caFile.
func writePluginKubeconfig(t *testing.T, url, caFile string) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(kcp.KubeconfigPath)
	require.NoError(t, err)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["workspacemounts"] = &clientcmdapi.Cluster{
		Server:               url,
		CertificateAuthority: caFile,
	}
	for _, name := range []string{adminContext, userContext} {
		kcpContext, ok := admin.Contexts[name]
		require.True(t, ok, "context %q in %s", name, kcp.KubeconfigPath)
		authInfo, ok := admin.AuthInfos[kcpContext.AuthInfo]
		require.True(t, ok, "user %q in %s", kcpContext.AuthInfo, kcp.KubeconfigPath)
		cfg.AuthInfos[name] = authInfo.DeepCopy()
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "workspacemounts", AuthInfo: name}
	}
	cfg.CurrentContext = adminContext
	path := filepath.Join(t.TempDir(), "workspacemounts.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// vwCAFile is the plugin's self-signed serving certificate, its own CA.
func vwCAFile() string {
	return filepath.Join(virtualWorkspaceCertDir, "workspacemounts.crt")
}

// kubectl runs the kubectl binary against the virtual workspace through one
// route, as one context of the route's kubeconfig.
type kubectl struct {
	t       *testing.T
	route   vwRoute
	context string
	// cacheDir keeps the discovery cache to the test.
	cacheDir string
}

func newKubectl(t *testing.T, route vwRoute, context string) kubectl {
	t.Helper()
	return kubectl{t: t, route: route, context: context, cacheDir: t.TempDir()}
}

// as returns the same kubectl as another context.
func (k kubectl) as(context string) kubectl {
	k.context = context
	return k
}

// kubectlResult is what one kubectl run printed.
type kubectlResult struct {
	args           []string
	stdout, stderr string
	err            error
}

func (r kubectlResult) String() string {
	return fmt.Sprintf("kubectl %s: err=%v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.err, r.stdout, r.stderr)
}

func (k kubectl) command(ctx context.Context, server string, args ...string) *exec.Cmd {
	full := append([]string{
		"--kubeconfig", k.route.kubeconfig,
		"--context", k.context,
		"--server", server,
		"--cache-dir", k.cacheDir,
		"--request-timeout", "30s",
	}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", full...)
	cmd.Env = []string{"HOME=" + k.cacheDir, "PATH=/usr/bin:/bin"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs kubectl in a cluster segment and returns its output.
func (k kubectl) run(cluster string, args ...string) kubectlResult {
	k.t.Helper()
	return k.runServer(k.route.server(cluster), "["+k.route.name+" "+k.context+" "+cluster+"]", args...)
}

// runServer runs kubectl with a --server of its own; label names the run in messages.
func (k kubectl) runServer(server, label string, args ...string) kubectlResult {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := k.command(ctx, server, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (after %s)", err, kubectlTimeout)
	}
	return kubectlResult{args: append([]string{label}, args...), stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// ok runs kubectl, requires it to succeed, and returns its stdout.
func (k kubectl) ok(cluster string, args ...string) string {
	k.t.Helper()
	r := k.run(cluster, args...)
	require.NoError(k.t, r.err, "%s", r)
	return r.stdout
}

// fails runs kubectl, requires it to fail, and returns its stderr.
func (k kubectl) fails(cluster string, args ...string) string {
	k.t.Helper()
	r := k.run(cluster, args...)
	require.Error(k.t, r.err, "%s", r)
	return r.stderr
}

// eventually runs kubectl until check accepts its result.
func (k kubectl) eventually(cluster string, check func(kubectlResult) (bool, string), args ...string) kubectlResult {
	k.t.Helper()
	var last kubectlResult
	kcptestinghelpers.Eventually(k.t, func() (bool, string) {
		last = k.run(cluster, args...)
		done, reason := check(last)
		return done, fmt.Sprintf("%s\n%s", reason, last)
	}, vwConvergeTimeout, 200*time.Millisecond)
	return last
}

// background is a kubectl process running until stopped, such as a watch.
type background struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	done   chan struct{}

	lock   sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
}

// start starts kubectl in the background; it is stopped when the test ends at the latest.
func (k kubectl) start(cluster string, args ...string) *background {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	return startBackground(k.t, k.command(ctx, k.route.server(cluster), args...), cancel)
}

// startBackground starts cmd, made with a context that cancel ends, in the
// background, its output kept; it is stopped when the test ends at the latest.
func startBackground(t *testing.T, cmd *exec.Cmd, cancel context.CancelFunc) *background {
	t.Helper()
	b := &background{cmd: cmd, cancel: cancel, done: make(chan struct{})}
	b.cmd.Stdout = lockedWriter{&b.lock, &b.stdout}
	b.cmd.Stderr = lockedWriter{&b.lock, &b.stderr}
	require.NoError(t, b.cmd.Start())
	go func() {
		_ = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(b.stop)
	return b
}

type lockedWriter struct {
	lock *sync.Mutex
	w    io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.lock.Lock()
	defer w.lock.Unlock()
	return w.w.Write(p)
}

// output returns what the process printed so far.
func (b *background) output() (stdout, stderr string) {
	b.lock.Lock()
	defer b.lock.Unlock()
	return b.stdout.String(), b.stderr.String()
}

// exited tells whether the process has ended.
func (b *background) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// waitFor waits until check accepts the stdout so far, failing the test if
// the process ends first or timeout passes.
func (b *background) waitFor(t *testing.T, timeout time.Duration, check func(stdout string) (bool, string)) {
	t.Helper()
	var ended string
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		stdout, stderr := b.output()
		done, reason := check(stdout)
		why := fmt.Sprintf("%s\nstdout:\n%s\nstderr:\n%s", reason, stdout, stderr)
		if !done && b.exited() {
			ended = why // stop waiting: nothing more will come
			return true, ""
		}
		return done, why
	}, timeout, 100*time.Millisecond)
	require.Empty(t, ended, "kubectl ended")
}

// stop kills the process and waits for it.
func (b *background) stop() {
	b.cancel()
	<-b.done
}

// tableRows parses kubectl's table output by the columns of its header line,
// so that empty cells (such as an empty URL) stay in their column.
func tableRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	header := lines[0]
	starts := regexp.MustCompile(`\S+`).FindAllStringIndex(header, -1)
	require.NotEmpty(t, starts, "no header in %q", out)
	var rows []map[string]string
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		row := map[string]string{}
		for i, start := range starts {
			name := header[start[0]:start[1]]
			from, to := start[0], len(line)
			if i+1 < len(starts) {
				to = min(starts[i+1][0], len(line))
			}
			if from < len(line) {
				row[name] = strings.TrimSpace(line[from:to])
			} else {
				row[name] = ""
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// header returns the column names of kubectl's table output.
func header(out string) []string {
	first, _, _ := strings.Cut(out, "\n")
	return strings.Fields(first)
}

// column returns one column of table rows, sorted.
func column(rows []map[string]string, name string) []string {
	values := make([]string, 0, len(rows))
	for _, row := range rows {
		values = append(values, row[name])
	}
	sort.Strings(values)
	return values
}

// rowsByName indexes table rows by their NAME.
func rowsByName(rows []map[string]string) map[string]map[string]string {
	byName := map[string]map[string]string{}
	for _, row := range rows {
		byName[row["NAME"]] = row
	}
	return byName
}

// lines returns the non-empty lines of out, sorted, with blanks squeezed.
func lines(out string) []string {
	var result []string
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		if line := strings.Join(strings.Fields(scanner.Text()), " "); line != "" {
			result = append(result, line)
		}
	}
	sort.Strings(result)
	return result
}

// vwOrg is an org workspace of one test, with the KubeCluster mount kind.
type vwOrg struct {
	c       clients
	name    string
	path    logicalcluster.Path
	cluster logicalcluster.Name
}

// newVWOrg creates root:<unique name> and installs the KubeCluster CRD in it.
func newVWOrg(t *testing.T, c clients, prefix string) vwOrg {
	t.Helper()
	name := framework.UniqueName(prefix)
	cluster, _ := framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), framework.RootPath, name)
	path := framework.RootPath.Join(name)
	installKubeClusters(t, path)
	return vwOrg{c: c, name: name, path: path, cluster: cluster}
}

// vwMount is a mounted Workspace and its KubeCluster.
type vwMount struct {
	workspace string
	labels    map[string]string
	// object is the KubeCluster's name; it is not created if status is nil.
	object string
	status map[string]interface{}
	want   mountState
}

// mount creates the mount object (unless its status is nil) and the mounted Workspace.
func (o vwOrg) mount(t *testing.T, m vwMount) {
	t.Helper()
	if m.status != nil {
		o.c.createMountObject(t, o.path, kubeClusters, m.object, m.status)
	}
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: m.workspace, Labels: m.labels},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: kubeClusters.ref(m.object)}},
	}
	_, err := o.c.kcp.Cluster(o.path).TenancyV1alpha1().Workspaces().Create(context.Background(), ws, metav1.CreateOptions{})
	require.NoError(t, err, "creating mounted workspace %s in %s", m.workspace, o.path)
}

// mountAll mounts every one of mounts and waits until the controller has
// written the expected state on each, and the virtual workspace serves it.
func (o vwOrg) mountAll(t *testing.T, mounts []vwMount) {
	t.Helper()
	for _, m := range mounts {
		o.mount(t, m)
	}
	for _, m := range mounts {
		o.c.waitForMount(t, o.path, m.workspace, m.want)
	}
	o.waitServed(t, mounts)
}

// waitServed waits until the virtual workspace lists exactly mounts in the
// org, each in its expected phase (the Workspace informer of the plugin may
// lag a moment behind the annotations).
func (o vwOrg) waitServed(t *testing.T, mounts []vwMount) {
	t.Helper()
	want := make([]string, 0, len(mounts))
	for _, m := range mounts {
		want = append(want, fmt.Sprintf("%s %s %t %s", m.workspace, m.want.phase, m.want.ready, m.want.reason))
	}
	sort.Strings(want)
	k := newKubectl(t, vwRoute{name: "direct", base: virtualWorkspaceURL, kubeconfig: writeDirectKubeconfig(t)}, adminContext)
	k.eventually(o.cluster.String(), func(r kubectlResult) (bool, string) {
		if r.err != nil {
			return false, r.err.Error()
		}
		got := lines(r.stdout)
		return equalStrings(got, want), fmt.Sprintf("got %q, want %q", got, want)
	}, "get", "workspacemounts", "--no-headers", "-o", "custom-columns=N:.metadata.name,P:.status.phase,R:.status.ready,REASON:.status.reason")
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// standardMounts are four mounts in four states, with labels.
func standardMounts(url string) []vwMount {
	return []vwMount{
		{
			workspace: "ready", labels: map[string]string{"env": "prod", "tier": "gold"}, object: "ready-cluster",
			status: map[string]interface{}{"phase": "Ready", "URL": url},
			want:   mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url},
		},
		{
			workspace: "connecting", labels: map[string]string{"env": "dev"}, object: "connecting-cluster",
			status: map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
				map[string]interface{}{"type": "AgentConnected", "status": "False", "reason": "NoHeartbeat", "message": "the agent has not connected yet", "lastTransitionTime": "2026-01-02T03:04:05Z"},
			}},
			want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady},
		},
		{
			workspace: "no-url", labels: map[string]string{"env": "prod"}, object: "no-url-cluster",
			status: map[string]interface{}{"phase": "Ready"},
			want:   mountState{phase: mount.PhaseReady, reason: mount.ReasonMountURLMissing},
		},
		{
			workspace: "missing", object: "missing-cluster",
			want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound},
		},
	}
}

// rawClient is an HTTP client to a route's base URL that trusts its serving
// certificate, with the credentials of a context of admin.kubeconfig, or none
// for an empty context.
func rawClient(t *testing.T, route vwRoute, context string) *http.Client {
	t.Helper()
	var cfg *rest.Config
	if route.base == virtualWorkspaceURL {
		cfg = &rest.Config{Host: virtualWorkspaceURL, TLSClientConfig: rest.TLSClientConfig{CAFile: vwCAFile()}}
		if context != "" {
			cfg.BearerToken = kcp.ConfigT(t, context).BearerToken
		}
	} else {
		cfg = kcp.BaseConfigT(t, adminContext)
		if context != "" {
			cfg = kcp.BaseConfigT(t, context)
		} else {
			cfg = rest.AnonymousClientConfig(cfg)
		}
	}
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	client.Timeout = 30 * time.Second
	return client
}

// rawResponse is a status code and body.
type rawResponse struct {
	code int
	body string
	// location is the Location header of a redirect.
	location string
}

// do sends one request with an optional bearer token (which replaces the client's).
func do(t *testing.T, client *http.Client, method, url, token, body string) rawResponse {
	t.Helper()
	return doAccepting(t, client, method, url, token, body, "application/json")
}

// doAccepting is do with an Accept header of its own.
func doAccepting(t *testing.T, client *http.Client, method, url, token, body, accept string) rawResponse {
	t.Helper()
	var reader io.Reader = http.NoBody
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, reader)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil && !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	return rawResponse{code: resp.StatusCode, body: string(data), location: resp.Header.Get("Location")}
}
