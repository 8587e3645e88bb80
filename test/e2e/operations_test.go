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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Leader election timing of the replicas of TestOperationsReplicas: short, so
// that a takeover after a crash takes seconds.
const (
	opLeaseDuration = 6 * time.Second
	opRenewDeadline = 4 * time.Second
	opRetryPeriod   = 1 * time.Second
)

const (
	// opStartupTimeout bounds how long a replica may take to serve /readyz 200.
	opStartupTimeout = 90 * time.Second
	// opMetricsTimeout bounds how long the metrics may lag behind the Workspaces.
	opMetricsTimeout = 30 * time.Second
	// opTakeoverTimeout bounds a takeover after the leader was killed: the
	// lease duration, a retry period with jitter and a margin.
	opTakeoverTimeout = 20 * time.Second
	// opStopTimeout bounds how long a replica may take to exit on SIGTERM.
	opStopTimeout = 10 * time.Second
	// opMounts is how many mounted Workspaces the replicas watch.
	opMounts = 3
)

// opEnv is a private kcp with an org workspace serving KubeClusters.
type opEnv struct {
	kcp        *framework.Server
	c          clients
	kube       kcpkubernetesclientset.ClusterInterface
	org        logicalcluster.Path
	leaseID    string
	dir        string // the replicas' logs and certificates
	adminToken string // kcp-admin's bearer token (context "root" of admin.kubeconfig)
}

func (e *opEnv) mountNames() []string {
	names := make([]string, opMounts)
	for i := range names {
		names[i] = fmt.Sprintf("mounted-%d", i)
	}
	return names
}

// objectName is the KubeCluster mounted by Workspace name.
func (e *opEnv) objectName(workspace string) string {
	return strings.Replace(workspace, "mounted-", "cluster-", 1)
}

// leaseHolder returns the holderIdentity of the replicas' Lease in root/default,
// "" when released, or an error (e.g. not found).
func (e *opEnv) leaseHolder() (string, error) {
	lease, err := e.kube.Cluster(logicalcluster.NewPath("root")).CoordinationV1().Leases("default").Get(context.Background(), e.leaseID, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// start starts a replica with the test's leader election flags.
func (e *opEnv) start(t, owner *testing.T, name string) *framework.Plugin {
	t.Helper()
	return opStartPlugin(t, owner, e.dir, name, e.kcp.KubeconfigPath,
		"--leader-election-id", e.leaseID,
		"--leader-election-lease-duration", opLeaseDuration.String(),
		"--leader-election-renew-deadline", opRenewDeadline.String(),
		"--leader-election-retry-period", opRetryPeriod.String(),
	)
}

// opStartup is what watching a replica start up saw.
type opStartup struct {
	listenerAfter time.Duration // first HTTP answer on the metrics listener
	readyAfter    time.Duration // first /readyz 200
	notReady      int           // /readyz answers other than 200 before that
	firstNotReady string
}

// opWaitStarted polls /livez and /readyz of p from the moment it started, every
// 20ms: /livez must be 200 as soon as the listener answers, /readyz must
// become 200, and until then name the caches-synced check.
func opWaitStarted(t *testing.T, p *framework.Plugin) opStartup {
	t.Helper()
	var s opStartup
	listening := false
	var lastErr error
	deadline := p.Started.Add(opStartupTimeout)
	for {
		if p.CheckRunning() != nil {
			t.Fatalf("%s exited during start-up (%v)%s", p.Name, p.ExitErr(), opLogs(p))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz not 200 within %s of the start (listener answered: %t, last error: %v, not-ready answers: %d)%s",
				p.Name, opStartupTimeout, listening, lastErr, s.notReady, opLogs(p))
		}
		code, body, err := opGet(opHTTP, p.MetricsURL+"/livez", "")
		if err != nil {
			lastErr = err
			if listening {
				t.Fatalf("%s: /livez failed after the listener had answered: %v%s", p.Name, err, opLogs(p))
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if !listening {
			listening = true
			s.listenerAfter = time.Since(p.Started)
		}
		if code != http.StatusOK {
			t.Fatalf("%s: /livez is %d, want 200 as soon as the listener answers: %s%s", p.Name, code, body, opLogs(p))
		}
		code, body, err = opGet(opHTTP, p.MetricsURL+"/readyz", "")
		require.NoError(t, err, "%s: /readyz after /livez answered", p.Name)
		if code == http.StatusOK {
			s.readyAfter = time.Since(p.Started)
			break
		}
		if s.notReady == 0 {
			s.firstNotReady = strings.TrimSpace(body)
		}
		s.notReady++
		if !strings.Contains(body, "caches-synced") {
			t.Fatalf("%s: /readyz is %d without naming the caches-synced check: %q%s", p.Name, code, body, opLogs(p))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.notReady > 0 {
		t.Logf("%s: metrics listener after %s, /livez 200 from then on; /readyz answered %d times not ready (first: %q), 200 after %s",
			p.Name, s.listenerAfter.Round(time.Millisecond), s.notReady, s.firstNotReady, s.readyAfter.Round(time.Millisecond))
	} else {
		t.Logf("%s: metrics listener after %s, /readyz already 200 at its first answer (the caches synced before the first probe), after %s",
			p.Name, s.listenerAfter.Round(time.Millisecond), s.readyAfter.Round(time.Millisecond))
	}
	// The detailed form lists the check as passed.
	code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz?verbose", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "[+]caches-synced ok", "/readyz?verbose of %s", p.Name)
	code, body, err = opGet(opHTTP, p.MetricsURL+"/healthz", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "/healthz of %s: %s", p.Name, body)
	return s
}

// opWaitMetrics scrapes p until check accepts a scrape.
func opWaitMetrics(t *testing.T, p *framework.Plugin, what string, timeout time.Duration, check func(framework.Metrics) (bool, string)) framework.Metrics {
	t.Helper()
	var last framework.Metrics
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		m, err := p.ScrapeMetrics(context.Background())
		if err != nil {
			return false, err.Error()
		}
		last = m
		return check(m)
	}, timeout, 200*time.Millisecond, "%s%s", fmt.Sprintf("%s: %s", p.Name, what), opLogs(p))
	return last
}

// opLeader is the workspacemounts_leader gauge, or an error if p does not export it.
func opLeader(m framework.Metrics) (float64, error) {
	v, found := m.Sum("workspacemounts_leader", nil)
	if !found {
		return 0, errors.New("no workspacemounts_leader series")
	}
	return v, nil
}

// opWaitLeader waits until p's workspacemounts_leader gauge is want.
func opWaitLeader(t *testing.T, p *framework.Plugin, want float64, timeout time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	opWaitMetrics(t, p, fmt.Sprintf("workspacemounts_leader == %v", want), timeout, func(m framework.Metrics) (bool, string) {
		v, err := opLeader(m)
		if err != nil {
			return false, err.Error()
		}
		return v == want, fmt.Sprintf("workspacemounts_leader is %v", v)
	})
	return time.Since(began)
}

// opVWURL is the WorkspaceMount collection of a cluster at p's own virtual workspace listener.
func opVWURL(p *framework.Plugin, cluster logicalcluster.Path) string {
	return p.VirtualWorkspaceURL + "/services/workspacemounts/clusters/" + cluster.String() + "/apis/workspacemounts.io/v1alpha1/workspacemounts"
}

// opVWClient is an HTTPS client to p's virtual workspace listener, trusting its
// self-signed certificate, with the credentials of creds (nil: none).
func opVWClient(t *testing.T, p *framework.Plugin, creds *rest.Config) *http.Client {
	t.Helper()
	cfg := &rest.Config{}
	if creds != nil {
		cfg = rest.CopyConfig(creds)
	}
	cfg.Host = p.VirtualWorkspaceURL
	cfg.TLSClientConfig.CAFile = p.CAFile
	cfg.TLSClientConfig.CAData = nil
	cfg.TLSClientConfig.Insecure = false
	cfg.TLSClientConfig.ServerName = ""
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	client.Timeout = 10 * time.Second
	return client
}

// vwList lists the WorkspaceMounts of a cluster through p's own virtual
// workspace listener, as kcp-admin (bearer token).
func (e *opEnv) vwList(t *testing.T, p *framework.Plugin, cluster logicalcluster.Path) (int, *wsmv1alpha1.WorkspaceMountList, string) {
	t.Helper()
	url := opVWURL(p, cluster)
	code, body, err := opGet(opVWClient(t, p, nil), url, e.adminToken)
	require.NoError(t, err, "GET %s", url)
	if code != http.StatusOK {
		return code, nil, body
	}
	list := &wsmv1alpha1.WorkspaceMountList{}
	require.NoError(t, json.Unmarshal([]byte(body), list), "GET %s: %s", url, body)
	return code, list, body
}

// TestOperationsReplicas runs the plugin binary as an operator would, two
// and then three replicas against one private kcp: start-up health, the
// metrics following the Workspaces, a takeover after the leader is killed,
// and a graceful stop that hands the lease over at once.
func TestOperationsReplicas(t *testing.T) {
	t.Parallel()
	opBinary(t)
	began := time.Now()
	// Before the replicas' cleanups, so that it is removed after they logged and stopped.
	dir := t.TempDir()
	s := framework.StartT(t, framework.Options{})
	cfg := s.BaseConfigT(t, "base")
	kcpClient, err := kcpclientset.NewForConfig(cfg)
	require.NoError(t, err)
	dynamicClient, err := kcpdynamic.NewForConfig(cfg)
	require.NoError(t, err)
	kubeClient, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	e := &opEnv{
		kcp:        s,
		c:          clients{kcp: kcpClient, dynamic: dynamicClient},
		kube:       kubeClient,
		leaseID:    framework.UniqueName("workspacemounts-e2e"),
		dir:        dir,
		adminToken: s.ConfigT(t, "root").BearerToken,
	}
	require.NotEmpty(t, e.adminToken, "the root context of %s has no bearer token", s.KubeconfigPath)

	// StartPluginT logs the last lines of each replica's log if the test fails.
	var a, b, c *framework.Plugin
	var holderA, holderB string

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"readiness", func(st *testing.T) {
			a = e.start(st, t, "replica-a")
			opWaitStarted(st, a)
		}},

		{"metrics", func(st *testing.T) {
			org := framework.UniqueName("ops")
			framework.CreateWorkspace(st, cfg, framework.RootPath, org)
			e.org = framework.RootPath.Join(org)
			framework.InstallCRD(st, cfg, e.org, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
			for _, ws := range e.mountNames() {
				e.c.createMountObject(st, e.org, kubeClusters, e.objectName(ws), map[string]interface{}{"phase": "Connecting"})
			}
			for _, ws := range e.mountNames() {
				e.c.createMountedWorkspace(st, e.org, ws, kubeClusters.ref(e.objectName(ws)))
			}
			for _, ws := range e.mountNames() {
				e.c.waitForMount(st, e.org, ws, mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
			}

			connecting := opLabels("kind", "KubeCluster", "phase", "Connecting")
			ready := opLabels("kind", "KubeCluster", "phase", "Ready")
			toReady := opLabels("from", "Connecting", "to", "Ready")
			m := opWaitMetrics(st, a, "metrics of the Connecting mounts", opMetricsTimeout, func(m framework.Metrics) (bool, string) {
				got := []string{}
				ok := true
				check := func(name string, cond bool, value float64) {
					got = append(got, fmt.Sprintf("%s=%v", name, value))
					ok = ok && cond
				}
				v := m.Value("workspacemounts_mounted_workspaces", connecting)
				check(`mounted_workspaces{Connecting}`, v == opMounts, v)
				v, _ = opLeader(m)
				check("leader", v == 1, v)
				v = m.Value("workqueue_adds_total", opLabels("name", "workspacemounts-workspaces"))
				check(`workqueue_adds_total{workspacemounts-workspaces}`, v > 0, v)
				v = m.Value("workspacemounts_mount_kinds_watched", nil)
				check("mount_kinds_watched", v >= 1, v)
				// KubeCluster is a CRD in one cluster: a pair with its full-object informer.
				v = m.Value("workspacemounts_cluster_mount_informers", nil)
				check("cluster_mount_informers", v >= 1, v)
				v = m.Value("workspacemounts_cluster_mount_informers_over_limit", nil)
				check("cluster_mount_informers_over_limit", v == 0, v)
				return ok, strings.Join(got, ", ")
			})
			before := m.Value("workspacemounts_phase_transitions_total", toReady)

			url := e.kcp.BaseURL + "/clusters/" + e.org.String()
			for _, ws := range e.mountNames() {
				e.c.setMountStatus(st, e.org, kubeClusters, e.objectName(ws), map[string]interface{}{"phase": "Ready", "URL": url})
			}
			m = opWaitMetrics(st, a, "metrics of the Ready mounts", opMetricsTimeout, func(m framework.Metrics) (bool, string) {
				r := m.Value("workspacemounts_mounted_workspaces", ready)
				rw := m.Value("workspacemounts_ready_workspaces", opLabels("kind", "KubeCluster"))
				cn := m.Value("workspacemounts_mounted_workspaces", connecting)
				tr := m.Value("workspacemounts_phase_transitions_total", toReady) - before
				return r == opMounts && rw == opMounts && cn == 0 && tr == opMounts,
					fmt.Sprintf("mounted_workspaces{Ready}=%v ready_workspaces=%v mounted_workspaces{Connecting}=%v phase_transitions_total{Connecting->Ready} grew by %v, want %d, %d, 0, %d",
						r, rw, cn, tr, opMounts, opMounts, opMounts)
			})
			applied := m.Value("workspacemounts_annotation_patches_total", opLabels("result", "applied"))
			require.GreaterOrEqual(st, applied, float64(2*opMounts), "annotation_patches_total{applied} after %d first statuses and %d flips", opMounts, opMounts)
			require.Positive(st, m.Value("workspacemounts_reconcile_total", opLabels("queue", "workspacemounts-workspaces", "result", "success")),
				"reconcile_total{workspacemounts-workspaces,success}")
			require.Positive(st, m.Value("workspacemounts_reconcile_total", opLabels("queue", "workspacemounts-mounts", "result", "success")),
				"reconcile_total{workspacemounts-mounts,success}")
			require.Positive(st, m.Value("workqueue_adds_total", opLabels("name", "workspacemounts-mounts")), "workqueue_adds_total{workspacemounts-mounts}")
			require.GreaterOrEqual(st, m.Value("workspacemounts_status_latency_seconds_count", nil), float64(opMounts), "status_latency_seconds_count after %d flips", opMounts)
			for _, ws := range e.mountNames() {
				e.c.waitForMount(st, e.org, ws, mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})
			}
		}},

		{"failover", func(st *testing.T) {
			kcptestinghelpers.Eventually(st, func() (bool, string) {
				h, err := e.leaseHolder()
				if err != nil {
					return false, err.Error()
				}
				holderA = h
				return h != "", "holderIdentity is empty"
			}, 10*time.Second, 200*time.Millisecond, "%s%s", "the Lease names replica-a", opLogs(a))
			require.Contains(st, opReadFile(st, a.LogPath), holderA, "replica-a's log names the identity holding the Lease")

			b = e.start(st, t, "replica-b")
			opWaitStarted(st, b)
			// Past a few retry periods, B still follows.
			time.Sleep(3 * opRetryPeriod)
			m, err := b.ScrapeMetrics(context.Background())
			require.NoError(st, err)
			v, err := opLeader(m)
			require.NoError(st, err, "replica-b")
			require.Zero(st, v, "replica-b's workspacemounts_leader while replica-a leads%s", opLogs(a, b))
			require.Zero(st, m.Value("workspacemounts_annotation_patches_total", nil), "replica-b patched Workspaces while following")

			// The follower serves the virtual workspace.
			kcptestinghelpers.Eventually(st, func() (bool, string) {
				code, list, body := e.vwList(st, b, e.org)
				if code != http.StatusOK {
					return false, fmt.Sprintf("%d: %s", code, body)
				}
				var got []string
				for _, item := range list.Items {
					got = append(got, item.Name+"="+item.Status.Phase)
				}
				sort.Strings(got)
				var want []string
				for _, ws := range e.mountNames() {
					want = append(want, ws+"=Ready")
				}
				return strings.Join(got, ",") == strings.Join(want, ","), fmt.Sprintf("got %v, want %v", got, want)
			}, 30*time.Second, 200*time.Millisecond, "%s%s", "replica-b's virtual workspace lists the mounted Workspaces", opLogs(b))
			// The plugin's own credentials (shard-base: a client certificate
			// of system:masters) are no bearer token: what does the virtual
			// workspace make of them? Reported, not asserted.
			shardBase := s.BaseConfigT(st, "shard-base")
			code, body, err := opGet(opVWClient(st, b, shardBase), opVWURL(b, e.org), "")
			require.NoError(st, err)
			st.Logf("replica-b's virtual workspace with shard-base's credentials (client certificate: %t, bearer token: %t): %d %.200s",
				len(shardBase.CertData) > 0 || shardBase.CertFile != "", shardBase.BearerToken != "", code, body)

			m, err = b.ScrapeMetrics(context.Background())
			require.NoError(st, err)
			requests := m.Value("apiserver_request_total", nil)
			require.Positive(st, requests, "replica-b's apiserver_request_total after virtual workspace requests")

			require.NoError(st, a.Signal(syscall.SIGKILL))
			killed := time.Now()
			select {
			case <-a.Exited():
			case <-time.After(5 * time.Second):
				st.Fatalf("replica-a did not die within 5s of SIGKILL")
			}
			opWaitLeader(st, b, 1, opTakeoverTimeout)
			st.Logf("replica-b leads %s after replica-a was killed (lease duration %s)", time.Since(killed).Round(time.Millisecond), opLeaseDuration)
			holderB, err = e.leaseHolder()
			require.NoError(st, err)
			require.NotEmpty(st, holderB)
			require.NotEqual(st, holderA, holderB, "the Lease's holderIdentity after the takeover")
			require.Contains(st, opReadFile(st, b.LogPath), holderB, "replica-b's log names the identity now holding the Lease")

			// Only replica-b can write the annotation now.
			e.c.setMountStatus(st, e.org, kubeClusters, e.objectName("mounted-0"), map[string]interface{}{"phase": "Connecting"})
			e.c.waitForMount(st, e.org, "mounted-0", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
			opWaitMetrics(st, b, "replica-b counted the Ready->Connecting transition", opMetricsTimeout, func(m framework.Metrics) (bool, string) {
				v := m.Value("workspacemounts_phase_transitions_total", opLabels("from", "Ready", "to", "Connecting"))
				return v >= 1, fmt.Sprintf("phase_transitions_total{Ready->Connecting}=%v", v)
			})
		}},

		{"graceful-stop", func(st *testing.T) {
			c = e.start(st, t, "replica-c")
			opWaitStarted(st, c)
			opWaitLeader(st, c, 0, 10*time.Second)

			require.NoError(st, b.Signal(syscall.SIGTERM))
			termed := time.Now()
			select {
			case <-b.Exited():
			case <-time.After(opStopTimeout):
				st.Fatalf("replica-b (the leader) did not exit within %s of SIGTERM%s", opStopTimeout, opLogs(b))
			}
			exitedAfter := time.Since(termed)
			require.Equal(st, 0, b.ExitCode(), "replica-b's exit code after SIGTERM (%v)%s", b.ExitErr(), opLogs(b))
			// Released: the Lease no longer names replica-b the moment it is gone.
			holder, err := e.leaseHolder()
			require.NoError(st, err)
			require.NotEqual(st, holderB, holder, "the Lease still names replica-b after it exited on SIGTERM: the lease was not released%s", opLogs(b))
			took := opWaitLeader(st, c, 1, opLeaseDuration)
			st.Logf("replica-b exited %s after SIGTERM (code 0); the Lease then named %q; replica-c led %s after that (lease duration %s)",
				exitedAfter.Round(time.Millisecond), holder, took.Round(time.Millisecond), opLeaseDuration)
			holderC, err := e.leaseHolder()
			require.NoError(st, err)
			require.NotEmpty(st, holderC)
			require.NotEqual(st, holderB, holderC)

			e.c.setMountStatus(st, e.org, kubeClusters, e.objectName("mounted-1"), map[string]interface{}{"phase": "Initializing"})
			e.c.waitForMount(st, e.org, "mounted-1", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
		}},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			t.FailNow()
		}
	}
	t.Logf("TestOperationsReplicas took %s (kcp start included)", time.Since(began).Round(time.Second))
}

// opReadFile returns the content of a file.
func opReadFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// opRun runs the binary with args, bounded, and returns its exit code and output.
func opRun(t *testing.T, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, opBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	err := cmd.Run()
	took = time.Since(began)
	require.NoError(t, ctx.Err(), "workspacemounts %s did not exit within 30s; stderr: %s", strings.Join(args, " "), errOut.String())
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		require.NoError(t, err, "running workspacemounts %s", strings.Join(args, " "))
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String(), took
}

// TestOperationsCommandLine checks what an operator sees on bad input, and
// the version and help commands. No kcp needed.
func TestOperationsCommandLine(t *testing.T) {
	t.Parallel()
	opBinary(t)

	oneLineError := func(t *testing.T, args []string, mentions ...string) {
		t.Helper()
		code, stdout, stderr, took := opRun(t, args...)
		cmdline := "workspacemounts " + strings.Join(args, " ")
		require.NotZero(t, code, "%s exited 0; stdout %q, stderr %q", cmdline, stdout, stderr)
		require.Less(t, took, 10*time.Second, "%s took %s to fail", cmdline, took)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		require.Len(t, lines, 1, "%s: want one line on stderr, got %q", cmdline, stderr)
		require.NotEmpty(t, lines[0], "%s: nothing on stderr", cmdline)
		for _, m := range mentions {
			require.Contains(t, lines[0], m, "%s: the error line", cmdline)
		}
		require.Empty(t, stdout, "%s: stdout", cmdline)
		t.Logf("%s: exit %d, %q", cmdline, code, lines[0])
	}
	t.Run("unknown flag", func(t *testing.T) {
		t.Parallel()
		oneLineError(t, []string{"start", "--nope"}, "--nope")
	})
	t.Run("missing kubeconfig file", func(t *testing.T) {
		t.Parallel()
		oneLineError(t, []string{"start", "--kubeconfig", "/does/not/exist"}, "--kubeconfig", "/does/not/exist")
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Parallel()
		oneLineError(t, []string{"start"}, "--kubeconfig")
	})
	t.Run("inconsistent leader election timing", func(t *testing.T) {
		t.Parallel()
		oneLineError(t, []string{"start", "--kubeconfig", "/does/not/exist", "--leader-election-lease-duration", "1s"}, "--leader-election-lease-duration")
	})
	t.Run("version", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr, _ := opRun(t, "version")
		require.Zero(t, code, "stderr: %s", stderr)
		require.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), 1, "version prints one line: %q", stdout)
		require.NotEmpty(t, strings.TrimSpace(stdout))
	})
	t.Run("help", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr, _ := opRun(t, "start", "--help")
		require.Zero(t, code, "stderr: %s", stderr)
		for _, flag := range []string{
			"--kubeconfig", "--context", // the kcp shard
			"--metrics-bind-address",                                                      // metrics and health
			"--leader-elect ", "--leader-election-id", "--leader-election-lease-duration", // leader election
			"--secure-port", "--bind-address", "--cert-dir", // virtual workspace serving
			"--run-controller", "--run-virtual-workspace",
		} {
			require.Contains(t, stdout, flag, "workspacemounts start --help")
		}
	})
}
