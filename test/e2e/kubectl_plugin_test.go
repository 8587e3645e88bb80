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
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/kubectl-workspacemounts")

// TestKubectlPlugin runs the built kubectl plugin (bin/kubectl-workspacemounts)
// with a kubeconfig whose context is an org workspace of the test, as a kcp
// user's after kubectl ws: tree (problems only, and -A) and why (by name and
// by path) against golden files, get (the virtual workspace's table, through
// kcp's front-proxy, and --server at the plugin's own listener), and the
// error for a context that is not kcp's.
//
// The org mounts four Workspaces in four states (standardMounts) and holds
// a workspace team with one mount Initializing.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	binary, err := framework.KubectlPluginBinary()
	require.NoError(t, err, "the kubectl plugin (run `make build`, or set KUBECTL_WORKSPACEMOUNTS_BINARY)")
	c := newClients(t)
	org := newVWOrg(t, c, "kubectl-plugin")
	// The org's mounts are created first: kcp and the controller take them
	// while the team workspace is made; then both are waited for.
	orgMounts := standardMounts(kcp.BaseURL + "/clusters/" + org.cluster.String())
	for _, m := range orgMounts {
		org.mount(t, m)
	}
	teamCluster, _ := framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), org.path, "team")
	team := vwOrg{c: c, name: "team", path: org.path.Join("team"), cluster: teamCluster}
	installKubeClusters(t, team.path)
	for _, m := range orgMounts {
		c.waitForMount(t, org.path, m.workspace, m.want)
	}
	org.waitServed(t, orgMounts)
	team.mountAll(t, []vwMount{{
		workspace: "deep", object: "deep-cluster", status: map[string]interface{}{"phase": "Initializing"},
		want: mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady},
	}})
	plugin := kubectlPlugin{t: t, binary: binary, kubeconfig: writeWorkspaceKubeconfig(t, org.path), org: org.path,
		clusters: []logicalcluster.Name{org.cluster, team.cluster}}

	// The goldens and get first, in parallel; then the watches see team:deep flip.
	t.Run("read", func(t *testing.T) { //nolint:paralleltest // before the flip that watch makes; its subtests run in parallel
		plugin := plugin
		plugin.t = t
		readOutputs(t, plugin, org, team)
	})

	t.Run("watch", func(t *testing.T) { //nolint:paralleltest // after read: it flips team:deep
		plugin := plugin
		plugin.t = t
		why := plugin.start("why", "-w", team.path.Join("deep").String())
		get := plugin.start("get", "-w", "--server", kcp.BaseURL+vwPrefix+team.path.String())
		why.waitFor(t, 20*time.Second, func(stdout string) (bool, string) {
			return strings.Contains(stdout, "Verdict:       the mount is not ready"), "the first report"
		})
		notReady := regexp.MustCompile(`(?m)^deep +` + regexp.QuoteMeta(team.path.Join("deep").String()) + ` +KubeCluster +deep-cluster +Initializing +false `)
		get.waitFor(t, 20*time.Second, func(stdout string) (bool, string) {
			return notReady.MatchString(stdout), "the list's row"
		})
		c.setMountStatus(t, team.path, kubeClusters, "deep-cluster", map[string]interface{}{"phase": "Ready", "URL": "https://mount.example.com/deep"})
		why.waitFor(t, 20*time.Second, func(stdout string) (bool, string) {
			return strings.Contains(stdout, "Verdict:       the mount is ready"), "a report after the flip to Ready"
		})
		ready := regexp.MustCompile(`(?m)^deep +\S+ +KubeCluster +deep-cluster +Ready +true `)
		get.waitFor(t, 20*time.Second, func(stdout string) (bool, string) {
			return ready.MatchString(stdout), "a row after the flip to Ready"
		})
	})
}

// readOutputs compares tree and why with the golden files, and checks get.
func readOutputs(t *testing.T, plugin kubectlPlugin, org, team vwOrg) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{golden: "tree.golden", args: []string{"tree"}},
		{golden: "tree-all.golden", args: []string{"tree", "-A"}},
		{golden: "why-connecting.golden", args: []string{"why", "connecting"}},
		{golden: "why-missing.golden", args: []string{"why", "missing"}},
		{golden: "why-deep.golden", args: []string{"why", org.path.Join("team").Join("deep").String()}},
		{golden: "why-team.golden", args: []string{"why", "team"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			p := plugin
			p.t = t
			p.eventuallyGolden(tc.golden, tc.args...)
		})
	}

	// The events why shows are the controller's regarding the Workspace (the
	// goldens leave their rows out): kcp takes why's field selector, and
	// events named alike, another controller's or of another UID, are not
	// shown. missing's first status is an event; connecting's, only not ready
	// yet, is none.
	t.Run("why events", func(t *testing.T) {
		t.Parallel()
		plugin := plugin
		plugin.t = t
		ctx := context.Background()
		ws, err := org.c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(ctx, "missing", metav1.GetOptions{})
		require.NoError(t, err)
		kube, err := kcpkubernetesclientset.NewForConfig(kcp.BaseConfigT(t, "base"))
		require.NoError(t, err)
		for i, forged := range []struct {
			uid        types.UID
			controller string
		}{{ws.UID, "someone-else"}, {"an-older-missing", workspacemounts.EventReportingController}} {
			_, err := kube.Cluster(org.path).CoreV1().Events(metav1.NamespaceDefault).Create(ctx, &corev1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("missing.forged-%d", i)},
				InvolvedObject:      corev1.ObjectReference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "missing", UID: forged.uid},
				Type:                corev1.EventTypeWarning,
				Reason:              "Forged",
				Message:             "not the controller's event of this Workspace",
				ReportingController: forged.controller,
				ReportingInstance:   "forger",
				Action:              "Forge",
				EventTime:           metav1.NewMicroTime(time.Now()),
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		event := regexp.MustCompile(`(?m)^  Warning +MountObjectNotFound +.* workspacemounts\.io/controller +`)
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			stdout, stderr, err := plugin.run("why", "missing")
			return err == nil && event.MatchString(stdout), fmt.Sprintf("%v: %s%s", err, stdout, stderr)
		}, 20*time.Second, 500*time.Millisecond)
		stdout := plugin.ok("why", "missing")
		require.NotContains(t, stdout, "Forged", stdout)
	})

	t.Run("get", func(t *testing.T) {
		t.Parallel()
		plugin := plugin
		plugin.t = t
		out := plugin.ok("get")
		require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE"}, header(out), out)
		require.Equal(t, []string{"connecting", "missing", "no-url", "ready"}, column(tableRows(t, out), "NAME"), out)
		require.Equal(t, "workspacemount.workspacemounts.io/deep\n", plugin.ok("get", "deep", "-o", "name", "--server", kcp.BaseURL+vwPrefix+team.path.String()))
		// --all: every cluster the user may see, the team's mount among them.
		require.Contains(t, plugin.ok("get", "--all", "--field-selector", "status.workspacePath="+team.path.Join("deep").String(), "-o", "name"), "workspacemount.workspacemounts.io/deep")
		// --server: the plugin's own listener, the cluster from the context.
		out = plugin.ok("get", "--server", virtualWorkspaceURL+"/services/workspacemounts", "--certificate-authority", vwCAFile(), "--no-headers")
		require.Len(t, lines(out), 4, out)
	})

	t.Run("not kcp", func(t *testing.T) {
		t.Parallel()
		plugin := plugin
		plugin.t = t
		_, stderr, err := plugin.run("get", "--context", "not-kcp")
		require.Error(t, err)
		require.Contains(t, stderr, "is not a kcp workspace URL (https://<host>/clusters/<workspace path>); use --server https://<front-proxy>/services/workspacemounts/clusters/<workspace path>")
	})
}

// start starts the plugin in the background (why -w, get -w); it is stopped
// when the test ends at the latest.
func (p kubectlPlugin) start(args ...string) *background {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cmd := exec.CommandContext(ctx, p.binary, append([]string{"--kubeconfig", p.kubeconfig, "--request-timeout", "0"}, args...)...)
	cmd.Env = []string{"HOME=" + p.t.TempDir(), "PATH=/usr/bin:/bin"}
	cmd.WaitDelay = 5 * time.Second
	return startBackground(p.t, cmd, cancel)
}

// writeWorkspaceKubeconfig writes a kubeconfig with kcp-admin's credentials
// whose current context, workspace, is the workspace at path (the server
// <kcp>/clusters/<path>, as kubectl ws leaves it), and a context not-kcp at
// kcp's base URL.
func writeWorkspaceKubeconfig(t *testing.T, path logicalcluster.Path) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(kcp.KubeconfigPath)
	require.NoError(t, err)
	base, ok := admin.Contexts["base"]
	require.True(t, ok, "context base in %s", kcp.KubeconfigPath)
	cluster := admin.Clusters[base.Cluster].DeepCopy()
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["admin"] = admin.AuthInfos[base.AuthInfo].DeepCopy()
	cfg.Clusters["not-kcp"] = cluster.DeepCopy()
	cluster.Server = kcp.BaseURL + "/clusters/" + path.String()
	cfg.Clusters["workspace"] = cluster
	cfg.Contexts["workspace"] = &clientcmdapi.Context{Cluster: "workspace", AuthInfo: "admin"}
	cfg.Contexts["not-kcp"] = &clientcmdapi.Context{Cluster: "not-kcp", AuthInfo: "admin"}
	cfg.CurrentContext = "workspace"
	file := filepath.Join(t.TempDir(), "workspace.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, file))
	return file
}

// kubectlPlugin runs the plugin's binary with a kubeconfig.
type kubectlPlugin struct {
	t          *testing.T
	binary     string
	kubeconfig string
	// org is replaced by ORG in the outputs compared with golden files, the
	// logical clusters of the test by CLUSTER.
	org      logicalcluster.Path
	clusters []logicalcluster.Name
}

func (p kubectlPlugin) run(args ...string) (stdout, stderr string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.binary, append([]string{"--kubeconfig", p.kubeconfig, "--request-timeout", "30s"}, args...)...)
	home := p.t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func (p kubectlPlugin) ok(args ...string) string {
	p.t.Helper()
	stdout, stderr, err := p.run(args...)
	require.NoError(p.t, err, "kubectl-workspacemounts %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	return stdout
}

// varying matches what changes from run to run: times (RFC 3339) and ages
// as kubectl prints them (5s, 2m3s, 90m, 26h, 5m (x2 over 10m)).
var (
	rfc3339 = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b`)
	age     = regexp.MustCompile(`\b(\d+[smhdy])+\b( \(x\d+ over (\d+[smhdy])+\))?`)
	// treePrefix is the tree's drawing before a Workspace's name.
	treePrefix = regexp.MustCompile(`^[ │├└─]*`)
)

// normalize makes an output comparable: the org's name is ORG, the test's
// logical clusters CLUSTER, times and ages are <time> and <age>, runs of
// blanks after the tree's drawing one space (column widths follow the
// values), and the rows of the parts another part of the plugin fills
// over time (the transitions, the availability, the events) and of kcp's
// conditions (which differ by kcp release) are left out, not compared
// (checkTransitions checks what must hold of the transitions).
func (p kubectlPlugin) normalize(out string) string {
	out = strings.ReplaceAll(out, p.org.String(), "root:ORG")
	for _, c := range p.clusters {
		out = strings.ReplaceAll(out, c.String(), "CLUSTER")
	}
	out = rfc3339.ReplaceAllString(out, "<time>")
	var b strings.Builder
	skipping := false
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if skipping && strings.HasPrefix(line, "  ") {
			continue
		}
		skipping = false
		line = age.ReplaceAllString(line, "<age>")
		prefix := treePrefix.FindString(line)
		line = prefix + strings.Join(strings.Fields(line[len(prefix):]), " ")
		switch {
		case strings.HasPrefix(line, "Transitions (oldest first):"), strings.HasPrefix(line, "Events:"),
			strings.HasPrefix(line, "kcp conditions:"): // kcp's own, which differ by release
			skipping = true
			line += " <rows>"
		case strings.HasPrefix(line, "Availability:"):
			line = "Availability: <as served>"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// eventuallyGolden runs the plugin until its normalized output is the
// golden file's (kcp's phase of a Workspace may lag behind the mount's), or
// writes the file with -update.
func (p kubectlPlugin) eventuallyGolden(golden string, args ...string) {
	p.t.Helper()
	path := filepath.Join("testdata", "kubectl-workspacemounts", golden)
	var got string
	if *updateGolden {
		time.Sleep(5 * time.Second) // kcp's phases settle
		got = p.normalize(p.ok(args...))
		require.NoError(p.t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(p.t, err, "run with -update to write it")
	kcptestinghelpers.Eventually(p.t, func() (bool, string) {
		stdout, stderr, err := p.run(args...)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, stderr)
		}
		got = p.normalize(stdout)
		p.checkTransitions(stdout)
		return got == string(want), fmt.Sprintf("kubectl-workspacemounts %s, normalized:\n%s\nwant (%s):\n%s", strings.Join(args, " "), got, path, want)
	}, 20*time.Second, 500*time.Millisecond)
}

// checkTransitions: what why shows of status.transitions, when the virtual
// workspace serves any, ends with the current phase.
func (p kubectlPlugin) checkTransitions(out string) {
	p.t.Helper()
	phase := regexp.MustCompile(`(?m)^Phase:\s+(\S+)$`).FindStringSubmatch(out)
	rows := regexp.MustCompile(`(?m)^Transitions \(oldest first\):\n((?: {2}.*\n)+)`).FindStringSubmatch(out)
	if phase == nil || rows == nil || strings.TrimSpace(rows[1]) == "<none>" {
		return
	}
	all := strings.Split(strings.TrimRight(rows[1], "\n"), "\n")
	last := strings.Fields(all[len(all)-1]) // TIME AGE PHASE READY REASON
	require.GreaterOrEqual(p.t, len(last), 4, out)
	require.Equal(p.t, phase[1], last[2], "the last transition is the current phase:\n%s", out)
}
