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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

const (
	// resilienceLongOutage is how long kcp is paused, and then stopped,
	// with framework.SlowEnv (make test-slow): issue 8's 2 minutes, long
	// enough for client-go's reflector backoff to reach its 30s cap.
	resilienceLongOutage = 2 * time.Minute
	// resilienceShortOutage is the same in make test: past
	// resilienceLeaseGone by a list, so that every check of an outage has
	// samples to check.
	resilienceShortOutage = resilienceLeaseGone + resilienceListEvery
	// resilienceListEvery is how often the virtual workspace is listed during an outage.
	resilienceListEvery = 10 * time.Second
	// resilienceSettle is how long after kcp stopped answering the last
	// answers (already on their way) may still move the last-contact gauge.
	resilienceSettle = 5 * time.Second
	// resilienceLeaseGone is how long into an outage no replica may lead any
	// more: the Lease, last renewed at most a retry period (2s) before the
	// outage, expires for the other replicas after the default lease duration
	// (15s); the leader must have stopped writing by then (its renew
	// deadline, 10s, is meant for that).
	resilienceLeaseGone = 20 * time.Second
	// resilienceDownFor is how long the replicas run before kcp first starts.
	resilienceDownFor = 10 * time.Second
	// resilienceReadyTimeout bounds how long after kcp is ready a replica
	// waiting for it is ready (its backoff between tries included).
	resilienceReadyTimeout = 2 * time.Minute
	// resilienceConvergeTimeout bounds how long after kcp is back the
	// annotations and the virtual workspaces show every change: a reflector's
	// backoff (up to 30s after a long outage), a lease expiry (15s), a
	// retry period and the reconciles, with a margin.
	resilienceConvergeTimeout = 2 * time.Minute
	// resilienceWriteTimeout bounds how long right after kcp's start a write
	// to a mount object is tried again (the CRD may not be served at once).
	resilienceWriteTimeout = time.Minute
	// resilienceProgressEvery is how often a wait for convergence logs what is missing.
	resilienceProgressEvery = 15 * time.Second
	// resilienceFresh is how old the last-contact gauge may be while kcp answers.
	resilienceFresh = 30 * time.Second

	// resilienceUser is the user of the test's client certificate, in group
	// system:masters: kcp allows it everything, so the virtual workspace's
	// SubjectAccessReviews allow it too.
	resilienceUser = "resilience-admin"

	resilienceLeaderMetric  = "workspacemounts_leader"
	resilienceContactMetric = "workspacemounts_kcp_last_contact_timestamp_seconds"
	resiliencePatchesMetric = "workspacemounts_annotation_patches_total"
)

// resilienceOutage is how long kcp is paused, and then stopped.
func resilienceOutage() time.Duration {
	if framework.Slow() {
		return resilienceLongOutage
	}
	return resilienceShortOutage
}

// resilienceMounts are the mounted Workspaces of TestResilience; each mounts
// the KubeCluster of the same name.
var resilienceMounts = []string{"m-0", "m-1", "m-2", "m-3", "probe"}

// resilienceEnv is a kcp of TestResilience's own, stopped, started, paused,
// and two plugin replicas with the default leader election.
type resilienceEnv struct {
	parent *testing.T // TestResilience's t, whose end stops the replicas
	kcp    *framework.Server
	// c uses the shard-base context, whose token survives kcp's restarts
	// (root and base get a new one on each) to change mount objects and read
	// Workspaces.
	c       clients
	org     logicalcluster.Path
	cluster logicalcluster.Name
	url     string // the URL the Ready mount objects carry

	replicas []*framework.Plugin
	names    []string
	pids     []int
	// vw are clients of the replicas' virtual workspaces with the test's
	// client certificate: no TokenReview, so they authenticate while kcp is down.
	vw []*http.Client

	// objects is the status phase of each existing mount object, by name;
	// want is what each Workspace must show.
	objects map[string]string
	want    map[string]mountState
}

// TestResilience is issue 8's "stays up when kcp does not", end to end, with
// two replicas and the default leader election: they start before kcp and
// become ready once it is; kcp restarts once and three times in a row, is
// paused (SIGSTOP) and stopped, each for 2 minutes with framework.SlowEnv
// (make test-slow) and for 30 seconds in make test; throughout, the
// processes stay the same, the virtual workspaces answer lists from what
// they know, the last-contact gauge stops and moves again, and afterwards
// every mount object change is on the Workspaces, exactly one replica leads
// and it writes.
func TestResilience(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := &resilienceEnv{parent: t, objects: map[string]string{}, want: map[string]mountState{}}

	// The client certificate authenticates at the virtual workspace without kcp.
	dir := t.TempDir()
	ca, err := framework.NewCA("resilience-ca")
	require.NoError(t, err)
	caFile := filepath.Join(dir, "client-ca.pem")
	require.NoError(t, ca.WriteCertFile(caFile))
	clientCert, err := ca.ClientCert(resilienceUser, "system:masters")
	require.NoError(t, err)

	// kcp stops within seconds of SIGTERM only if it ends the replicas'
	// watches itself: by default (0) it waits for them until its
	// --request-timeout (60s), past the framework's 20s before SIGKILL. Not
	// a plugin flag: the plugin's are the defaults.
	s, err := framework.Start(t.Context(), framework.Options{ExtraArgs: []string{"--shutdown-watch-termination-grace-period=5s"}})
	require.NoError(t, err, "starting kcp")
	e.kcp = s
	t.Logf("kcp at %s ready after %s, root directory %s", s.BaseURL, s.ReadyAfter.Round(time.Millisecond), s.RootDir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kcp (%v): last lines of its log:\n%s", s.CheckRunning(), s.LogTail(30))
			e.keepLogs(t)
		}
		framework.ReportKCPStop(t, "kcp", s.Stop())
	})
	e.c = newClientsFor(t, s.BaseConfigT(t, "shard-base"))

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"started before kcp", func(t *testing.T) {
			e.startedBeforeKCP(t, dir, caFile, clientCert)
		}},
		{"restart once", e.restartOnce},
		{"restart three times", e.restartThreeTimes},
		{"paused", e.paused},
		{"stopped", e.stopped},
	}
	for _, step := range steps {
		stepBegan := time.Now()
		passed := t.Run(step.name, step.run)
		t.Logf("%q took %s (%s in all)", step.name, time.Since(stepBegan).Round(time.Second), time.Since(began).Round(time.Second))
		if !passed {
			// The next step starts from whatever this one left, as long as
			// there is something to start from.
			if err := e.broken(); err != nil {
				t.Fatalf("%q failed, and the later steps cannot run: %v", step.name, err)
			}
		}
	}
}

// broken tells why the later steps cannot run: kcp or a replica is not
// running, or the replicas were not all set up.
func (e *resilienceEnv) broken() error {
	if err := e.kcp.CheckRunning(); err != nil {
		return err
	}
	if len(e.vw) != 2 || e.org.Empty() {
		return errors.New("the replicas and the mounts were not set up")
	}
	for i, p := range e.replicas {
		if err := p.CheckRunning(); err != nil {
			return fmt.Errorf("%s: %w", e.names[i], err)
		}
	}
	return nil
}

// startedBeforeKCP: kcp is stopped once it has written admin.kubeconfig; the
// two replicas started meanwhile wait for it, up and not ready; once it is
// started again, both become ready, one leads, and it writes.
func (e *resilienceEnv) startedBeforeKCP(t *testing.T, dir, caFile string, clientCert *framework.KeyPair) {
	require.NoError(t, e.kcp.StopProcess())

	// Default flags, leader election on; the test's client CA, and a stale
	// grace (5 minutes) longer than an outage, not the default's.
	for i := range 2 {
		name := fmt.Sprintf("replica-%d", i)
		workDir := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(workDir, 0o755))
		p, err := framework.StartPlugin(t.Context(), framework.PluginOptions{
			Kubeconfig: e.kcp.KubeconfigPath,
			WorkDir:    workDir,
			ExtraArgs:  []string{"--client-ca-file=" + caFile, "--authorization-stale-grace=5m"},
		})
		require.NoError(t, err, "starting %s", name)
		e.replicas, e.names, e.pids = append(e.replicas, p), append(e.names, name), append(e.pids, p.Pid())
		t.Logf("%s: pid %d, metrics %s, virtual workspace %s, log %s", name, p.Pid(), p.MetricsURL, p.VirtualWorkspaceURL, p.LogPath)
	}
	// On the whole test, whose kcp cleanup came first, so that they run before it.
	e.parent.Cleanup(func() {
		for i, p := range e.replicas {
			if e.parent.Failed() {
				p.PrintLogTail(os.Stderr, 40)
			}
			if err := p.Stop(); err != nil {
				e.parent.Logf("stopping %s: %v", e.names[i], err)
			}
		}
	})

	deadline := time.Now().Add(resilienceDownFor)
	answered := make([]string, len(e.replicas))
	for time.Now().Before(deadline) {
		for i, p := range e.replicas {
			require.NoError(t, p.CheckRunning(), "%s while kcp is down", e.names[i])
			code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz", "")
			switch {
			case err != nil:
				answered[i] = "no answer: " + err.Error()
			case code == http.StatusOK:
				t.Fatalf("%s: /readyz is 200 while kcp has never been reached", e.names[i])
			default:
				answered[i] = fmt.Sprintf("%d: %s", code, strings.TrimSpace(body))
			}
		}
		time.Sleep(time.Second)
	}
	for i := range e.replicas {
		t.Logf("%s after %s without kcp: running, /readyz %s", e.names[i], resilienceDownFor, excerpt(answered[i]))
	}

	require.NoError(t, e.kcp.StartAgain(t.Context()), "starting kcp again")
	kcpReady := time.Now()
	t.Logf("kcp started again on %s, ready after %s", e.kcp.BaseURL, e.kcp.ReadyAfter.Round(time.Millisecond))
	for i, p := range e.replicas {
		var exited error
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			if exited = p.CheckRunning(); exited != nil {
				return true, ""
			}
			code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz", "")
			if err != nil {
				return false, err.Error()
			}
			return code == http.StatusOK, fmt.Sprintf("/readyz %d: %s", code, strings.TrimSpace(body))
		}, resilienceReadyTimeout, 200*time.Millisecond, "%s ready after kcp", e.names[i])
		require.NoError(t, exited, e.names[i])
		t.Logf("%s ready %s after kcp", e.names[i], time.Since(kcpReady).Round(time.Millisecond))
		client, err := rest.HTTPClientFor(&rest.Config{Host: p.VirtualWorkspaceURL, TLSClientConfig: rest.TLSClientConfig{
			CAFile: p.CAFile, CertData: clientCert.CertPEM, KeyData: clientCert.KeyPEM,
		}})
		require.NoError(t, err)
		client.Timeout = 10 * time.Second
		e.vw = append(e.vw, client)
	}

	// The mounts: a KubeCluster kind served first (kcp v0.28.1 panics on a
	// Workspace mounting an unserved kind), four in different states and one
	// missing, and a probe to see who writes.
	// As kcp-admin, whose token is new since this start: kcp's initializers
	// need a Workspace's creator, which the shard admin is not.
	cfg := e.kcp.BaseConfigT(t, "base")
	admin := newClientsFor(t, cfg)
	name := framework.UniqueName("resilience")
	e.cluster, _ = framework.CreateWorkspace(t, cfg, framework.RootPath, name)
	e.org = framework.RootPath.Join(name)
	e.url = e.kcp.BaseURL + "/clusters/" + e.org.String()
	framework.InstallCRD(t, cfg, e.org, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	for name, phase := range map[string]string{"m-0": "Connecting", "m-1": "Ready", "m-2": "Initializing", "probe": "Connecting"} {
		e.createObject(t, name, phase)
	}
	e.want["m-3"] = resilienceNotFound
	for _, ws := range resilienceMounts {
		admin.createMountedWorkspace(t, e.org, ws, kubeClusters.ref(ws))
	}
	e.waitConverged(t, "after the first start", resilienceConvergeTimeout)
	e.checkLeaderWrites(t)
}

// restartOnce: kcp stopped (SIGTERM) and started again; mount objects
// changed right before the stop and right after the start.
func (e *resilienceEnv) restartOnce(t *testing.T) {
	e.setPhase(t, "m-0", "Ready")
	e.deleteObject(t, "m-1")
	e.restart(t)
	e.setPhase(t, "m-2", "Connecting")
	e.createObject(t, "m-3", "Ready")
	e.waitConverged(t, "after the restart", resilienceConvergeTimeout)
	e.checkSame(t)
	e.checkLeaderWrites(t)
}

// restartThreeTimes: three restarts in a row, mount objects changed right
// before each stop and right after each start.
func (e *resilienceEnv) restartThreeTimes(t *testing.T) {
	e.flip(t, "m-0")
	e.restart(t)
	e.createObject(t, "m-1", "Initializing")
	e.flip(t, "m-2")
	e.restart(t)
	e.flip(t, "m-3")
	e.flip(t, "m-1")
	e.restart(t)
	e.deleteObject(t, "m-0")
	e.flip(t, "m-2")
	e.waitConverged(t, "after three restarts", resilienceConvergeTimeout)
	e.checkSame(t)
	e.checkLeaderWrites(t)
}

// paused: kcp stopped with SIGSTOP for resilienceOutage, then SIGCONT.
func (e *resilienceEnv) paused(t *testing.T) {
	e.outage(t, "paused", e.kcp.Pause, e.kcp.Resume)
	e.flip(t, "m-1")
	e.deleteObject(t, "m-2")
	e.createObject(t, "m-0", "Connecting")
	e.waitConverged(t, "after the pause", resilienceConvergeTimeout)
	e.checkSame(t)
	e.checkLeaderWrites(t)
}

// stopped: kcp stopped (SIGTERM) for resilienceOutage, then started again; a
// change right before the stop and more right after the start.
func (e *resilienceEnv) stopped(t *testing.T) {
	e.flip(t, "m-3")
	e.outage(t, "stopped", e.kcp.StopProcess, func() error { return e.kcp.StartAgain(t.Context()) })
	e.createObject(t, "m-2", "Ready")
	e.flip(t, "m-1")
	e.waitConverged(t, "after the stop", resilienceConvergeTimeout)
	e.checkSame(t)
	e.checkLeaderWrites(t)
}

// restart stops kcp (SIGTERM) and starts it again on the same address.
func (e *resilienceEnv) restart(t *testing.T) {
	t.Helper()
	began := time.Now()
	require.NoError(t, e.kcp.StopProcess(), "stopping kcp")
	stopped := time.Now()
	require.NoError(t, e.kcp.StartAgain(t.Context()), "starting kcp again")
	t.Logf("kcp restarted: stopped in %s, ready %s later", stopped.Sub(began).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
}

// resilienceSample is what one replica showed at one moment of an outage.
type resilienceSample struct {
	at      time.Duration // since the outage began
	contact float64       // the last-contact gauge
	leader  float64
	readyz  string
}

// outage takes kcp away with down, keeps it away for resilienceOutage while
// listing both virtual workspaces every resilienceListEvery (each list must
// answer what was converged before) and sampling the replicas' metrics, and
// brings it back with up. The last-contact gauge must stop moving (after
// resilienceSettle) at no later than the outage's start, no replica may lead
// after resilienceLeaseGone, and the gauge must move again once kcp is back.
func (e *resilienceEnv) outage(t *testing.T, what string, down, up func() error) {
	t.Helper()
	e.waitServed(t, "before kcp is "+what, resilienceConvergeTimeout)
	for i := range e.replicas {
		contact := e.metric(t, i, resilienceContactMetric)
		require.Less(t, time.Since(unixTime(contact)), resilienceFresh, "%s: %s while kcp answers", e.names[i], resilienceContactMetric)
	}

	require.NoError(t, down(), "kcp %s", what)
	wentAway := time.Now()
	t.Logf("kcp %s", what)
	away := true
	defer func() {
		if away { // the loop failed: the later steps need kcp
			if err := up(); err != nil {
				t.Errorf("kcp back after being %s: %v", what, err)
			}
		}
	}()
	samples := make([][]resilienceSample, len(e.replicas))
	lists := 0
	for tick := time.Duration(0); tick <= resilienceOutage(); tick += resilienceListEvery {
		time.Sleep(time.Until(wentAway.Add(tick)))
		for i, p := range e.replicas {
			require.NoError(t, p.CheckRunning(), "%s while kcp is %s", e.names[i], what)
			got, err := e.vwList(i)
			require.NoError(t, err, "%s: list at * %s after kcp was %s", e.names[i], time.Since(wentAway).Round(time.Second), what)
			require.Equal(t, e.wantStrings(), got, "%s: list at * %s after kcp was %s", e.names[i], time.Since(wentAway).Round(time.Second), what)
			lists++
			m := e.scrape(t, i)
			sample := resilienceSample{at: time.Since(wentAway), readyz: "no answer"}
			var found bool
			sample.contact, found = m.Sum(resilienceContactMetric, nil)
			require.True(t, found, "%s has no %s", e.names[i], resilienceContactMetric)
			sample.leader, _ = m.Sum(resilienceLeaderMetric, nil)
			if code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz", ""); err == nil {
				sample.readyz = fmt.Sprintf("%d %s", code, excerpt(strings.TrimSpace(body)))
			}
			samples[i] = append(samples[i], sample)
		}
	}
	away = false
	require.NoError(t, up(), "kcp back after being %s", what)
	back := time.Now()
	t.Logf("kcp back after %s %s; %d lists at * answered meanwhile", back.Sub(wentAway).Round(time.Second), what, lists)

	for i, replica := range samples {
		var settled []float64
		for _, s := range replica {
			t.Logf("%s at +%s: last contact %s before kcp went away, leader %v, /readyz %s",
				e.names[i], s.at.Round(time.Second), wentAway.Sub(unixTime(s.contact)).Round(time.Millisecond), s.leader, s.readyz)
			if s.at >= resilienceSettle {
				settled = append(settled, s.contact)
				assert.LessOrEqual(t, unixTime(s.contact), wentAway.Add(time.Second), "%s: %s at +%s is after kcp was %s", e.names[i], resilienceContactMetric, s.at.Round(time.Second), what)
			}
			if s.at >= resilienceLeaseGone {
				assert.Zero(t, s.leader, "%s: %s at +%s, while kcp is %s and no Lease can be renewed", e.names[i], resilienceLeaderMetric, s.at.Round(time.Second), what)
			}
		}
		require.NotEmpty(t, settled)
		for _, v := range settled {
			if !assert.InDelta(t, settled[0], v, 0, "%s: %s moved while kcp was %s: %v", e.names[i], resilienceContactMetric, what, settled) {
				break
			}
		}
	}
	for i := range e.replicas {
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			contact := e.metric(t, i, resilienceContactMetric)
			return !unixTime(contact).Before(back.Add(-time.Second)), fmt.Sprintf("%s is %s before kcp was back", resilienceContactMetric, back.Sub(unixTime(contact)).Round(time.Millisecond))
		}, resilienceConvergeTimeout, time.Second, "%s: the last-contact gauge moves once kcp is back", e.names[i])
	}
}

// createObject creates the KubeCluster name, marked as a mount object, with
// status phase, and what its Workspace must show. Right after kcp's start,
// it is tried again.
func (e *resilienceEnv) createObject(t *testing.T, name, phase string) {
	t.Helper()
	resource := e.c.dynamic.Cluster(e.org).Resource(kubeClusters.gvr)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kubeClusters.gvr.GroupVersion().String(),
		"kind":       kubeClusters.kind,
		"metadata": map[string]interface{}{
			"name":        name,
			"annotations": map[string]interface{}{mount.IsMountAnnotationKey: mount.IsMountAnnotationValue},
		},
		"spec": map[string]interface{}{},
	}}
	e.write(t, "creating KubeCluster "+name, func(ctx context.Context) error {
		_, err := resource.Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	e.objects[name] = ""
	e.setPhase(t, name, phase)
}

// setPhase sets the status phase of the KubeCluster name (with a URL for Ready).
func (e *resilienceEnv) setPhase(t *testing.T, name, phase string) {
	t.Helper()
	status := map[string]interface{}{"phase": phase}
	want := mountState{phase: mount.Phase(phase), reason: mount.ReasonMountNotReady}
	if phase == "Ready" {
		status["URL"] = e.url
		want = mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: e.url}
	}
	resource := e.c.dynamic.Cluster(e.org).Resource(kubeClusters.gvr)
	e.write(t, fmt.Sprintf("setting the phase of KubeCluster %s to %s", name, phase), func(ctx context.Context) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := resource.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			obj.Object["status"] = status
			_, err = resource.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
			return err
		})
	})
	e.objects[name], e.want[name] = phase, want
}

// flip moves the KubeCluster name to the next phase of Connecting,
// Initializing, Ready, Unknown.
func (e *resilienceEnv) flip(t *testing.T, name string) {
	t.Helper()
	phases := []string{"Connecting", "Initializing", "Ready", "Unknown"}
	current, exists := e.objects[name]
	require.True(t, exists, "KubeCluster %s to flip does not exist", name)
	next := phases[0]
	for i, phase := range phases {
		if phase == current {
			next = phases[(i+1)%len(phases)]
		}
	}
	e.setPhase(t, name, next)
}

// deleteObject deletes the KubeCluster name: its Workspace must show NotFound.
func (e *resilienceEnv) deleteObject(t *testing.T, name string) {
	t.Helper()
	resource := e.c.dynamic.Cluster(e.org).Resource(kubeClusters.gvr)
	e.write(t, "deleting KubeCluster "+name, func(ctx context.Context) error {
		return resource.Delete(ctx, name, metav1.DeleteOptions{})
	})
	delete(e.objects, name)
	e.want[name] = resilienceNotFound
}

var resilienceNotFound = mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}

// write runs a write to kcp, tried again for resilienceWriteTimeout: right
// after kcp's start the KubeCluster resource may not be served yet.
func (e *resilienceEnv) write(t *testing.T, what string, write func(context.Context) error) {
	t.Helper()
	began := time.Now()
	tries := 0
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		tries++
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := write(ctx); err != nil {
			return false, err.Error()
		}
		return true, ""
	}, resilienceWriteTimeout, 200*time.Millisecond, what)
	if tries > 1 {
		t.Logf("%s: done after %d tries in %s", what, tries, time.Since(began).Round(time.Millisecond))
	}
}

// waitConverged waits until every Workspace shows what its mount object
// says, and both virtual workspaces serve that. Every resilienceProgressEvery
// it logs what is still missing.
func (e *resilienceEnv) waitConverged(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	began := time.Now()
	logged := began
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		e.checkRunning(t)
		list, err := e.c.kcp.Cluster(e.org).TenancyV1alpha1().Workspaces().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		wrong := e.wrong(list.Items)
		if len(wrong) > 0 && time.Since(logged) >= resilienceProgressEvery {
			logged = time.Now()
			t.Logf("the Workspaces %s, after %s: %s", what, time.Since(began).Round(time.Second), strings.Join(wrong, "; "))
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	}, timeout, 200*time.Millisecond, "the Workspaces %s", what)
	t.Logf("the Workspaces show every change %s %s after the wait began", what, time.Since(began).Round(time.Millisecond))
	e.waitServed(t, what, timeout)
}

// wrong tells which Workspaces do not show what their mount objects say, and how.
func (e *resilienceEnv) wrong(workspaces []tenancyv1alpha1.Workspace) []string {
	var wrong []string
	seen := map[string]bool{}
	for i := range workspaces {
		ws := &workspaces[i]
		seen[ws.Name] = true
		want, ok := e.want[ws.Name]
		if !ok {
			continue
		}
		status, found := mount.StatusOf(ws.Annotations)
		got := mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}
		switch {
		case !found:
			wrong = append(wrong, ws.Name+": no readable status annotation")
		case ws.Annotations[mount.PhaseAnnotationKey] != string(status.Phase):
			wrong = append(wrong, fmt.Sprintf("%s: %s is %q, the status says %s", ws.Name, mount.PhaseAnnotationKey, ws.Annotations[mount.PhaseAnnotationKey], status.Phase))
		case got != want:
			wrong = append(wrong, fmt.Sprintf("%s: %s, want %s", ws.Name, got, want))
		}
	}
	for name := range e.want {
		if !seen[name] {
			wrong = append(wrong, name+": no such Workspace")
		}
	}
	sort.Strings(wrong)
	return wrong
}

// waitServed waits until both virtual workspaces list at * what the
// Workspaces must show.
func (e *resilienceEnv) waitServed(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	want := e.wantStrings()
	for i := range e.replicas {
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			got, err := e.vwList(i)
			if err != nil {
				return false, err.Error()
			}
			return equalStrings(got, want), fmt.Sprintf("got %q, want %q", got, want)
		}, timeout, 200*time.Millisecond, "%s: the virtual workspace %s", e.names[i], what)
	}
}

// vwList lists the WorkspaceMounts at * from replica i's virtual workspace
// with the client certificate, and returns those of the org as
// "name phase ready reason url", sorted.
func (e *resilienceEnv) vwList(i int) ([]string, error) {
	url := e.replicas[i].VirtualWorkspaceURL + vwPrefix + "*" + vwResourcePath
	code, body, err := opGet(e.vw[i], url, "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d: %s", url, code, excerpt(body))
	}
	list := &wsmv1alpha1.WorkspaceMountList{}
	if err := json.Unmarshal([]byte(body), list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	got := []string{}
	for _, item := range list.Items {
		if logicalcluster.Name(item.Annotations[logicalcluster.AnnotationKey]) == e.cluster {
			got = append(got, resilienceString(item.Name, mountState{phase: mount.Phase(item.Status.Phase), ready: item.Status.Ready, reason: item.Status.Reason, url: item.Status.URL}))
		}
	}
	sort.Strings(got)
	return got, nil
}

// wantStrings is want as vwList returns it.
func (e *resilienceEnv) wantStrings() []string {
	want := make([]string, 0, len(e.want))
	for name, state := range e.want {
		want = append(want, resilienceString(name, state))
	}
	sort.Strings(want)
	return want
}

func resilienceString(name string, s mountState) string {
	return fmt.Sprintf("%s %s %t %s %s", name, s.phase, s.ready, s.reason, s.url)
}

// checkRunning fails the test if a replica has exited.
func (e *resilienceEnv) checkRunning(t *testing.T) {
	t.Helper()
	for i, p := range e.replicas {
		if err := p.CheckRunning(); err != nil {
			t.Fatalf("%s: %v", e.names[i], err)
		}
	}
}

// checkSame: both replicas are the processes started first, still running.
func (e *resilienceEnv) checkSame(t *testing.T) {
	t.Helper()
	e.checkRunning(t)
	for i, p := range e.replicas {
		require.Equal(t, e.pids[i], p.Pid(), "%s's pid", e.names[i])
	}
}

// checkLeaderWrites waits until exactly one replica leads, flips the probe's
// mount object, and checks that the leader patched its Workspace and the
// other replica patched nothing.
func (e *resilienceEnv) checkLeaderWrites(t *testing.T) {
	t.Helper()
	leader := e.waitOneLeader(t)
	before := e.patches(t)
	e.flip(t, "probe")
	e.waitConverged(t, "after the probe's flip", resilienceConvergeTimeout)
	after := e.patches(t)
	require.Equal(t, leader, e.waitOneLeader(t), "the leader while the probe flipped")
	for i := range e.replicas {
		if i == leader {
			require.Greater(t, after[i], before[i], "%s (the leader): applied annotation patches for the probe's flip", e.names[i])
		} else {
			require.InDelta(t, before[i], after[i], 0, "%s (not the leader): applied annotation patches", e.names[i])
		}
	}
	t.Logf("%s leads and writes (%v applied patches for the probe's flip)", e.names[leader], after[leader]-before[leader])
}

// waitOneLeader waits until exactly one replica's workspacemounts_leader is 1
// and the other's 0, and returns the leader.
func (e *resilienceEnv) waitOneLeader(t *testing.T) int {
	t.Helper()
	leader := -1
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		e.checkRunning(t)
		leader = -1
		var values []string
		leaders := 0
		for i := range e.replicas {
			m, err := framework.ScrapeMetrics(t.Context(), opHTTP, e.replicas[i].MetricsURL+"/metrics")
			if err != nil {
				return false, err.Error()
			}
			v, found := m.Sum(resilienceLeaderMetric, nil)
			if !found {
				return false, e.names[i] + " has no " + resilienceLeaderMetric
			}
			values = append(values, fmt.Sprintf("%s=%v", e.names[i], v))
			switch v {
			case 1:
				leaders++
				leader = i
			case 0:
			default:
				return false, fmt.Sprintf("%s: %s is %v", e.names[i], resilienceLeaderMetric, v)
			}
		}
		return leaders == 1, fmt.Sprintf("%s: %s", resilienceLeaderMetric, strings.Join(values, ", "))
	}, resilienceConvergeTimeout, 500*time.Millisecond, "exactly one leader")
	return leader
}

// patches is each replica's count of applied annotation patches.
func (e *resilienceEnv) patches(t *testing.T) []float64 {
	t.Helper()
	counts := make([]float64, len(e.replicas))
	for i := range e.replicas {
		counts[i], _ = e.scrape(t, i).Sum(resiliencePatchesMetric, map[string]string{"result": "applied"})
	}
	return counts
}

// scrape reads replica i's /metrics.
func (e *resilienceEnv) scrape(t *testing.T, i int) framework.Metrics {
	t.Helper()
	m, err := framework.ScrapeMetrics(t.Context(), opHTTP, e.replicas[i].MetricsURL+"/metrics")
	require.NoError(t, err, "%s's metrics", e.names[i])
	return m
}

// metric is the value of a metric of replica i, which must have it.
func (e *resilienceEnv) metric(t *testing.T, i int, name string) float64 {
	t.Helper()
	v, found := e.scrape(t, i).Sum(name, nil)
	require.True(t, found, "%s has no %s", e.names[i], name)
	return v
}

// keepLogs copies the logs of kcp and the replicas, which go with their
// temporary directories, to a directory that stays.
func (e *resilienceEnv) keepLogs(t *testing.T) {
	dir, err := os.MkdirTemp("", "resilience-logs-")
	if err != nil {
		t.Logf("keeping the logs: %v", err)
		return
	}
	logs := map[string]string{"kcp.log": e.kcp.LogPath}
	for i, p := range e.replicas {
		logs[e.names[i]+".log"] = p.LogPath
	}
	for name, path := range logs {
		data, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o600)
		}
		if err != nil {
			t.Logf("keeping %s: %v", path, err)
		}
	}
	t.Logf("the logs of kcp and the replicas are kept in %s", dir)
}

// newClientsFor is newClients for a base config of any kcp.
func newClientsFor(t *testing.T, cfg *rest.Config) clients {
	t.Helper()
	kcpClient, err := kcpclientset.NewForConfig(cfg)
	require.NoError(t, err)
	dynamicClient, err := kcpdynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return clients{kcp: kcpClient, dynamic: dynamicClient}
}

// unixTime is a gauge of unix seconds as a time.
func unixTime(seconds float64) time.Time {
	whole, frac := math.Modf(seconds)
	return time.Unix(int64(whole), int64(frac*1e9))
}
