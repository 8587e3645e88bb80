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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// condType is the condition --workspace-condition keeps on every mounted Workspace.
	condType conditionsv1alpha1.ConditionType = "WorkspaceMountAvailable"
	// condSteadyFor is how long a steady state is watched for writes.
	condSteadyFor = 10 * time.Second
	// condSettle is how long after the last expected state is seen the
	// steady-state window starts (events of the last writes still on their way).
	condSettle = 2 * time.Second
	// condStartTimeout bounds how long a plugin takes to become ready.
	condStartTimeout = time.Minute

	condAnnotationPatches = "workspacemounts_annotation_patches_total"
	condStatusPatches     = "workspacemounts_workspace_status_patches_total"

	// condWorkspacesPath is an API path every workspace serves, to tell
	// whether kcp routes a workspace at all.
	condWorkspacesPath = "/apis/tenancy.kcp.io/v1alpha1/workspaces"
)

// condEnv is a kcp of the test's own and clients of it as kcp-admin.
type condEnv struct {
	kcp *framework.Server
	c   clients
	// http requests workspaces through kcp's own proxy (/clusters/<path>),
	// which routes a mounted workspace to its spec.URL and answers 503 for
	// an Unavailable one.
	http *http.Client
	dir  string
}

// newCondEnv starts a private kcp with featureGates ("" for kcp's defaults).
func newCondEnv(t *testing.T, featureGates string) *condEnv {
	t.Helper()
	t.Logf("starting a kcp of this test's own (feature gates %q)", featureGates)
	s := framework.StartT(t, framework.Options{FeatureGates: featureGates})
	cfg := s.BaseConfigT(t, "base")
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	client.Timeout = 10 * time.Second
	return &condEnv{kcp: s, c: newClientsFor(t, cfg), http: client, dir: t.TempDir()}
}

// startPlugin starts the plugin binary without leader election and with
// extra flags, waits until /readyz answers 200, and stops it when the test
// ends (printing its log's end if the test failed).
func (e *condEnv) startPlugin(t *testing.T, name string, extra ...string) *framework.Plugin {
	t.Helper()
	workDir := filepath.Join(e.dir, name)
	require.NoError(t, os.MkdirAll(workDir, 0o755))
	// -v=2 logs every conflict, with its key.
	args := append([]string{"--leader-elect=false", "-v=2"}, extra...)
	t.Logf("starting the plugin %q: workspacemounts start %s", name, strings.Join(args, " "))
	p := framework.StartPluginT(t, t, framework.PluginOptions{
		Name:       fmt.Sprintf("the plugin %q", name),
		Kubeconfig: e.kcp.KubeconfigPath,
		WorkDir:    workDir,
		ExtraArgs:  args,
	})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := p.CheckRunning(); err != nil {
			return false, err.Error()
		}
		code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz", "")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("/readyz: %d: %s", code, body)
	}, condStartTimeout, 200*time.Millisecond, "the plugin %q (log %s) becomes ready", name, p.LogPath)
	return p
}

// installDemoCRD installs hack/demo/kubeclusters-crd.yaml (KubeCluster,
// contrib.kcp.io) in cluster and waits until it is served there.
func (e *condEnv) installDemoCRD(t *testing.T, cluster logicalcluster.Path) {
	t.Helper()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "hack", "demo", "kubeclusters-crd.yaml"))
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd))
	require.Equal(t, kubeClusters.gvr.Group, crd.Spec.Group)
	require.Equal(t, kubeClusters.gvr.Resource, crd.Spec.Names.Plural)
	t.Logf("installing the KubeCluster CRD of hack/demo in %s and waiting until it is served", cluster)
	framework.InstallCRD(t, e.kcp.BaseConfigT(t, "base"), cluster, crd)
}

// createConfigMap creates a ConfigMap in the default namespace of cluster
// (and the namespace, if kcp has not) holding a value that exists nowhere
// else, and returns that value.
func (e *condEnv) createConfigMap(t *testing.T, cluster logicalcluster.Name, name string) string {
	t.Helper()
	cfg := e.kcp.BaseConfigT(t, "base")
	cfg.Host += cluster.Path().RequestPath()
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "creating the default namespace in %s", cluster)
	}
	value := framework.UniqueName("only-in-" + cluster.String())
	_, err = client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"where": value},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating ConfigMap default/%s in %s", name, cluster)
	return value
}

// get GETs /clusters/<path><apiPath> from kcp as kcp-admin, and returns the
// status code and (the start of) the body.
func (e *condEnv) get(path logicalcluster.Path, apiPath string) (int, string, error) {
	return opGet(e.http, e.kcp.BaseURL+path.RequestPath()+apiPath, "")
}

// waitGet waits until GET /clusters/<path><apiPath> answers code with a body
// containing contains.
func (e *condEnv) waitGet(t *testing.T, path logicalcluster.Path, apiPath string, code int, contains string) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		got, body, err := e.get(path, apiPath)
		if err != nil {
			return false, err.Error()
		}
		return got == code && strings.Contains(body, contains), fmt.Sprintf("%d: %s", got, excerpt(body))
	}, convergeTimeout, 100*time.Millisecond, "GET /clusters/%s%s answers %d with %q", path, apiPath, code, contains)
	t.Logf("GET /clusters/%s%s: %d", path, apiPath, code)
}

// condWant is what a test expects of a Workspace.
type condWant struct {
	phase corev1alpha1.LogicalClusterPhaseType
	// status of the WorkspaceMountAvailable condition; "" means there must be none.
	status   corev1.ConditionStatus
	reason   string
	severity conditionsv1alpha1.ConditionSeverity
	// inTree is the status of kcp's WorkspaceMountReady; "" means there must be none.
	inTree       corev1.ConditionStatus
	inTreeReason string
	// url is spec.URL, unless nil.
	url *string
}

func (w condWant) String() string {
	s := fmt.Sprintf("phase=%s %s=%s", w.phase, condType, condOrNone(w.status))
	if w.status != "" {
		s += fmt.Sprintf(" (%s, severity %q)", w.reason, w.severity)
	}
	s += fmt.Sprintf(" %s=%s", tenancyv1alpha1.MountConditionReady, condOrNone(w.inTree))
	if w.inTreeReason != "" {
		s += " (" + w.inTreeReason + ")"
	}
	if w.url != nil {
		s += fmt.Sprintf(" spec.URL=%q", *w.url)
	}
	return s
}

func condOrNone(s corev1.ConditionStatus) string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// condition returns the condition of type t of ws, or nil.
func condition(ws *tenancyv1alpha1.Workspace, t conditionsv1alpha1.ConditionType) *conditionsv1alpha1.Condition {
	for i := range ws.Status.Conditions {
		if ws.Status.Conditions[i].Type == t {
			return &ws.Status.Conditions[i]
		}
	}
	return nil
}

// mismatch tells how ws differs from w, "" if it does not.
func (w condWant) mismatch(ws *tenancyv1alpha1.Workspace) string {
	var diffs []string
	if ws.Status.Phase != w.phase {
		diffs = append(diffs, fmt.Sprintf("phase %q", ws.Status.Phase))
	}
	check := func(t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason string, severity *conditionsv1alpha1.ConditionSeverity) {
		c := condition(ws, t)
		switch {
		case c == nil && status == "":
		case c == nil:
			diffs = append(diffs, fmt.Sprintf("no %s condition", t))
		case status == "":
			diffs = append(diffs, fmt.Sprintf("%s=%s (%s: %s), want none", t, c.Status, c.Reason, c.Message))
		case c.Status != status || (reason != "" && c.Reason != reason) || (severity != nil && c.Severity != *severity):
			diffs = append(diffs, fmt.Sprintf("%s=%s (%s, severity %q: %s)", t, c.Status, c.Reason, c.Severity, c.Message))
		}
	}
	check(condType, w.status, w.reason, &w.severity)
	check(tenancyv1alpha1.MountConditionReady, w.inTree, w.inTreeReason, nil)
	if w.url != nil && ws.Spec.URL != *w.url {
		diffs = append(diffs, fmt.Sprintf("spec.URL %q", ws.Spec.URL))
	}
	return strings.Join(diffs, ", ")
}

// waitWorkspace waits until Workspace name in cluster is as wanted, and returns it.
func (e *condEnv) waitWorkspace(t *testing.T, cluster logicalcluster.Path, name string, want condWant) *tenancyv1alpha1.Workspace {
	t.Helper()
	var ws *tenancyv1alpha1.Workspace
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		var err error
		ws, err = e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		diff := want.mismatch(ws)
		return diff == "", fmt.Sprintf("got %s; want %s", diff, want)
	}, convergeTimeout, 100*time.Millisecond, "workspace %s", cluster.Join(name))
	t.Logf("workspace %s: %s", cluster.Join(name), want)
	return ws
}

// annotate sets (or, with "", removes) an annotation of a Workspace.
func (e *condEnv) annotate(t *testing.T, cluster logicalcluster.Path, name, key, value string) {
	t.Helper()
	workspaces := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ws, err := workspaces.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if value == "" {
			delete(ws.Annotations, key)
		} else {
			if ws.Annotations == nil {
				ws.Annotations = map[string]string{}
			}
			ws.Annotations[key] = value
		}
		_, err = workspaces.Update(context.Background(), ws, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "annotating workspace %s", cluster.Join(name))
}

// condWorkspace names a Workspace.
type condWorkspace struct {
	cluster logicalcluster.Path
	name    string
}

func (w condWorkspace) String() string { return w.cluster.Join(w.name).String() }

// condWrites is what a steady state is checked with: the plugin's patch
// counters and the Workspaces' resourceVersions.
type condWrites struct {
	annotation, status int
	versions           map[string]string
}

func (e *condEnv) writes(t *testing.T, p *framework.Plugin, workspaces []condWorkspace) condWrites {
	t.Helper()
	m, err := framework.ScrapeMetrics(context.Background(), opHTTP, p.MetricsURL+"/metrics")
	require.NoError(t, err)
	// A counter without any series yet (no patch of that kind) is not in
	// the exposition at all: 0.
	w := condWrites{versions: map[string]string{}}
	annotation, _ := m.Sum(condAnnotationPatches, nil)
	status, _ := m.Sum(condStatusPatches, nil)
	w.annotation, w.status = int(annotation), int(status)
	for _, ws := range workspaces {
		got, err := e.c.kcp.Cluster(ws.cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), ws.name, metav1.GetOptions{})
		require.NoError(t, err)
		w.versions[ws.String()] = got.ResourceVersion
	}
	return w
}

// requireSteady requires that over condSteadyFor the plugin patches nothing
// (neither counter moves) and no Workspace of workspaces changes (its
// resourceVersion stays: nothing else writes either, no loop with kcp's
// controllers), and that no patch of the plugin ever failed, nor conflicted
// but those counted by the metrics named in conflictsAllowed.
func (e *condEnv) requireSteady(t *testing.T, p *framework.Plugin, workspaces []condWorkspace, conflictsAllowed ...string) {
	t.Helper()
	time.Sleep(condSettle)
	before := e.writes(t, p, workspaces)
	t.Logf("watching %d workspaces and the plugin's patches for %s (so far: %d annotation patches, %d status patches)",
		len(workspaces), condSteadyFor, before.annotation, before.status)
	time.Sleep(condSteadyFor)
	after := e.writes(t, p, workspaces)
	require.Equal(t, before.annotation, after.annotation, "%s moved at steady state", condAnnotationPatches)
	require.Equal(t, before.status, after.status, "%s moved at steady state", condStatusPatches)
	require.Equal(t, before.versions, after.versions, "a Workspace changed at steady state (resourceVersions)")
	e.requireNoFailedPatches(t, p, conflictsAllowed...)
}

// requireNoFailedPatches requires that no patch of the plugin failed, and
// none conflicted but those counted by the metrics named in
// conflictsAllowed (with another writer of the same Workspaces a conflict is
// a matter of timing, and retried from kcp's version); it logs the
// conflicts, with their keys.
func (e *condEnv) requireNoFailedPatches(t *testing.T, p *framework.Plugin, conflictsAllowed ...string) {
	t.Helper()
	m, err := framework.ScrapeMetrics(context.Background(), opHTTP, p.MetricsURL+"/metrics")
	require.NoError(t, err)
	for _, name := range []string{condAnnotationPatches, condStatusPatches} {
		conflicts, _ := m.Sum(name, map[string]string{"result": "conflict"})
		errs, _ := m.Sum(name, map[string]string{"result": "error"})
		applied, _ := m.Sum(name, map[string]string{"result": "applied"})
		t.Logf("%s: applied %v, conflict %v, error %v", name, applied, conflicts, errs)
		if conflicts > 0 {
			t.Logf("the plugin's conflicts:\n%s", condLogLines(t, p, "conflict"))
		}
		if !slices.Contains(conflictsAllowed, name) {
			require.Zero(t, conflicts, "%s{result=conflict}", name)
		}
		require.Zero(t, errs, "%s{result=error}", name)
	}
}

// TestWorkspaceConditionAndURL is issue 9 on kcp v0.28.1 without its
// WorkspaceMounts gate, as kcp's own test/e2e/mounts does it with the gate:
// the plugin with --workspace-condition and --workspace-url routes a mounted
// workspace to another workspace, kcp's proxy answers 503 while the mount is
// not ready (Connecting, deleted) and lets traffic through again when it is;
// a legacy-annotation mount whose object is not ready and one of a kind
// nobody serves end Unavailable too (the latter legacy, as kcp v0.28.1
// crashes on a spec.mount it cannot map, gate or not); a plugin without
// --workspace-condition takes its conditions away and the Workspaces are
// Ready again, but the spec.mount one, whose kcp condition WorkspaceMountReady
// level 3 keeps (False while its mount is not ready, as kcp's in-tree
// controller keeps it); no write at steady state, and no conflict but with kcp's own
// writes.
func TestWorkspaceConditionAndURL(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newCondEnv(t, "")
	cfg := e.kcp.BaseConfigT(t, "base")

	t.Log("workspaces root:<org>:source (the mounts) and root:<org>:destination (where the mount leads)")
	org := framework.UniqueName("wscond")
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	orgPath := framework.RootPath.Join(org)
	framework.CreateWorkspace(t, cfg, orgPath, "source")
	source := orgPath.Join("source")
	destinationCluster, destination := framework.CreateWorkspace(t, cfg, orgPath, "destination")
	destinationURL := destination.Spec.URL
	require.NotEmpty(t, destinationURL, "the destination workspace's spec.URL")
	t.Logf("destination is logical cluster %s at %s", destinationCluster, destinationURL)
	e.installDemoCRD(t, source)

	t.Log("a ConfigMap that exists in destination only: reading it at the mount's path proves the mount leads there")
	const configMap = "only-in-destination"
	configMapPath := "/api/v1/namespaces/default/configmaps/" + configMap
	marker := e.createConfigMap(t, destinationCluster, configMap)
	e.waitGet(t, destinationCluster.Path(), configMapPath, http.StatusOK, marker)

	t.Log("a plain workspace source:legacy, Ready before it gets the legacy mount annotation")
	framework.CreateWorkspace(t, cfg, source, "legacy")
	legacyPath := source.Join("legacy")
	legacy, err := e.c.kcp.Cluster(source).TenancyV1alpha1().Workspaces().Get(context.Background(), "legacy", metav1.GetOptions{})
	require.NoError(t, err)
	legacyURL := legacy.Spec.URL
	e.waitGet(t, legacyPath, condWorkspacesPath, http.StatusOK, "WorkspaceList")

	// The mounts lead to a workspace of the same kcp, on 127.0.0.1: internal hosts (requireURLRule).
	p1 := e.startPlugin(t, "condition-and-url", "--workspace-condition", "--workspace-url", "--workspace-url-allow-internal-hosts", "--legacy-mount-annotation")

	t.Log("KubeCluster proxy in source: Ready, status.URL = destination's spec.URL; Workspace source:mount mounts it")
	ready := map[string]interface{}{"phase": "Ready", "URL": destinationURL, "conditions": []interface{}{
		map[string]interface{}{"type": "WorkspaceClusterReady", "status": "True", "reason": "AgentReady", "message": "The agent sent a heartbeat", "lastTransitionTime": "2026-01-01T00:00:00Z"},
	}}
	connecting := map[string]interface{}{"phase": "Connecting", "URL": destinationURL}
	e.c.createMountObject(t, source, kubeClusters, "proxy", ready)
	e.c.createMountedWorkspace(t, source, "mount", kubeClusters.ref("proxy"))
	mountPath := source.Join("mount")
	// At level 3 the plugin keeps kcp's own WorkspaceMountReady on the
	// spec.mount Workspace as kcp's in-tree controller would; on the legacy
	// annotation's Workspaces, which kcp's controller does not read, none.
	readyWant := condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue, url: &destinationURL}
	e.waitWorkspace(t, source, "mount", readyWant)
	e.c.waitForMount(t, source, "mount", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: destinationURL})
	t.Logf("kcp routes %s to destination", mountPath)
	e.waitGet(t, mountPath, configMapPath, http.StatusOK, marker)

	t.Log("the mount object turns Connecting (its URL stays): Unavailable, and kcp answers 503 at the mount's path")
	e.c.setMountStatus(t, source, kubeClusters, "proxy", connecting)
	connectingWant := condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse, reason: mount.ReasonMountNotReady,
		severity: conditionsv1alpha1.ConditionSeverityInfo, inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason,
		url: &destinationURL}
	e.waitWorkspace(t, source, "mount", connectingWant)
	e.waitGet(t, mountPath, configMapPath, http.StatusServiceUnavailable, "Not available.")

	t.Log("Ready again: traffic goes through again")
	e.c.setMountStatus(t, source, kubeClusters, "proxy", ready)
	e.waitWorkspace(t, source, "mount", readyWant)
	e.waitGet(t, mountPath, configMapPath, http.StatusOK, marker)

	// kcp forbids unsetting spec.URL once set (CEL rule "URL cannot be
	// unset" on WorkspaceSpec, v0.28.1 as v0.32.3), so it stays, and kcp
	// answers 503 for it as long as the Workspace is Unavailable.
	t.Log("the mount object is deleted: Unavailable (MountObjectNotFound), spec.URL stays (kcp forbids unsetting it), 503")
	e.c.deleteMountObject(t, source, kubeClusters, "proxy")
	e.waitWorkspace(t, source, "mount", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
		reason: mount.ReasonMountObjectNotFound, severity: conditionsv1alpha1.ConditionSeverityError,
		inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotFoundReason, url: &destinationURL})
	e.c.waitForMount(t, source, "mount", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})
	e.waitGet(t, mountPath, configMapPath, http.StatusServiceUnavailable, "Not available.")

	t.Log("the mount object is created again, Ready: traffic goes through again")
	e.c.createMountObject(t, source, kubeClusters, "proxy", ready)
	e.waitWorkspace(t, source, "mount", readyWant)
	e.waitGet(t, mountPath, configMapPath, http.StatusOK, marker)

	t.Log("source:legacy gets the legacy annotation mounting KubeCluster legacy-proxy, which is Connecting: Unavailable, 503; spec.URL is kcp's own still")
	e.c.createMountObject(t, source, kubeClusters, "legacy-proxy", connecting)
	e.annotate(t, source, "legacy", mount.LegacyAnnotationKey, legacyMount(t, kubeClusters.gvr.GroupVersion().String(), kubeClusters.kind, "legacy-proxy"))
	e.waitWorkspace(t, source, "legacy", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
		reason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo, url: &legacyURL})
	e.c.waitForMount(t, source, "legacy", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady, url: destinationURL})
	e.waitGet(t, legacyPath, condWorkspacesPath, http.StatusServiceUnavailable, "Not available.")

	// Not with spec.mount: kcp v0.28.1 installs its index
	// WorkspacesByMountReference whatever the gate, and it panics (kcp
	// exits) on a Workspace whose spec.mount names a kind it cannot map.
	t.Log("source:unserved, a plain workspace, gets the legacy annotation mounting a kind nobody serves: Unavailable, MountKindUnknown, 503")
	framework.CreateWorkspace(t, cfg, source, "unserved")
	unservedPath := source.Join("unserved")
	unserved, err := e.c.kcp.Cluster(source).TenancyV1alpha1().Workspaces().Get(context.Background(), "unserved", metav1.GetOptions{})
	require.NoError(t, err)
	unservedURL := unserved.Spec.URL
	e.annotate(t, source, "unserved", mount.LegacyAnnotationKey, legacyMount(t, "absent.example.io/v1alpha1", "Absent", "nothing"))
	e.waitWorkspace(t, source, "unserved", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
		reason: mount.ReasonMountKindUnknown, severity: conditionsv1alpha1.ConditionSeverityError, url: &unservedURL})
	e.c.waitForMount(t, source, "unserved", mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountKindUnknown})
	e.waitGet(t, unservedPath, condWorkspacesPath, http.StatusServiceUnavailable, "Not available.")

	t.Log("proxy turns Connecting again, so that all three Workspaces are Unavailable because of the condition alone")
	e.c.setMountStatus(t, source, kubeClusters, "proxy", connecting)
	e.waitWorkspace(t, source, "mount", connectingWant)
	e.waitGet(t, mountPath, configMapPath, http.StatusServiceUnavailable, "Not available.")

	// The Workspace patch may conflict with kcp, not with the plugin's own
	// status patch: kcp's workspace controller writes status.phase after
	// every change of the condition, and when the next change of the mount
	// object comes before the plugin's cache has that write (this test
	// changes it as soon as it sees the phase), the patch made from the
	// cache conflicts once and is made again from kcp's version. The status
	// patch, made on the Workspace that patch returned, never conflicts.
	workspaces := []condWorkspace{{source, "mount"}, {source, "legacy"}, {source, "unserved"}}
	t.Log("steady state with --workspace-condition --workspace-url")
	e.requireSteady(t, p1, workspaces, condAnnotationPatches)

	t.Log("stopping the plugin; starting one with --workspace-url but without --workspace-condition (--workspace-url stays " +
		"so that the mount keeps being routed: turning it off would leave spec.URL alone anyway, and with it on the " +
		"test also shows that it does not need the condition)")
	require.NoError(t, p1.Stop())
	p2 := e.startPlugin(t, "url-only", "--workspace-url", "--workspace-url-allow-internal-hosts", "--legacy-mount-annotation")

	t.Log("WorkspaceMountAvailable is gone from the three Workspaces: legacy and unserved are Ready again and kcp routes " +
		"their paths again; mount keeps kcp's own WorkspaceMountReady=False (MountObjectNotReady, proxy is still Connecting), " +
		"as kcp's in-tree controller would, so it stays Unavailable and kcp answers 503 at its path")
	e.waitWorkspace(t, source, "mount", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable,
		inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason, url: &destinationURL})
	e.waitWorkspace(t, source, "legacy", condWant{phase: corev1alpha1.LogicalClusterPhaseReady, url: &legacyURL})
	e.waitWorkspace(t, source, "unserved", condWant{phase: corev1alpha1.LogicalClusterPhaseReady, url: &unservedURL})
	e.waitGet(t, mountPath, configMapPath, http.StatusServiceUnavailable, "Not available.")
	e.waitGet(t, legacyPath, condWorkspacesPath, http.StatusOK, "WorkspaceList")
	e.waitGet(t, unservedPath, condWorkspacesPath, http.StatusOK, "WorkspaceList")
	t.Log("one write per change: one status patch per condition removed, no other patch")
	removed := e.writes(t, p2, nil)
	require.Equal(t, 3, removed.status, "%s of the plugin without --workspace-condition", condStatusPatches)
	require.Zero(t, removed.annotation, "%s of the plugin without --workspace-condition", condAnnotationPatches)
	t.Log("the annotations are the contract's still")
	e.c.waitForMount(t, source, "mount", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady, url: destinationURL})
	e.c.waitForMount(t, source, "legacy", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady, url: destinationURL})
	e.c.waitForMount(t, source, "unserved", mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountKindUnknown})

	t.Log("steady state with --workspace-url alone")
	e.requireSteady(t, p2, workspaces)

	require.NoError(t, p2.Stop())
	e.requireURLRule(t, source, "mount", destinationURL, configMapPath)
	t.Logf("TestWorkspaceConditionAndURL took %s (kcp start included)", time.Since(began).Round(time.Second))
}

// requireURLRule: a plugin at level 3 without
// --workspace-url-allow-internal-hosts, with --workspace-url-allowed-hosts,
// routes the Workspace name (spec.mount: KubeCluster proxy in source, whose
// status.URL is destinationURL, a workspace of the same kcp at 127.0.0.1)
// to no internal host and to no host out of the allowed ones: the mount is
// MountURLInvalid with the reason in its message, spec.URL stays, kcp
// answers 503, and kcp's own condition stays True (kcp has no host rules);
// an http URL, which kcp v0.33 refuses, is refused at level 3 on every kcp,
// kcp's condition False, MountObjectInvalidURL; an allowed host becomes
// spec.URL. (The allowed hosts are in
// .invalid, which resolves nowhere: nothing is sent there.)
func (e *condEnv) requireURLRule(t *testing.T, source logicalcluster.Path, name, destinationURL, configMapPath string) {
	t.Helper()
	e.startPlugin(t, "url-rule", "--workspace-condition", "--workspace-url", "--workspace-url-allowed-hosts=mounts.invalid,192.0.2.0/24")
	notRoutable := func(url, why string, specURL *string, kcpRefuses bool) {
		t.Helper()
		e.c.setMountStatus(t, source, kubeClusters, "proxy", map[string]interface{}{"phase": "Ready", "URL": url})
		status := e.c.waitForMount(t, source, name, mountState{phase: mount.PhaseReady, reason: mount.ReasonMountURLInvalid, url: url})
		require.Contains(t, status.Message, fmt.Sprintf("%q is not routable: %s", url, why))
		want := condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
			reason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError, inTree: corev1.ConditionTrue, url: specURL}
		if kcpRefuses {
			want.inTree, want.inTreeReason = corev1.ConditionFalse, "MountObjectInvalidURL"
		}
		e.waitWorkspace(t, source, name, want)
	}
	t.Log("proxy Ready at destination's URL, on 127.0.0.1: MountURLInvalid (loopback host), Unavailable, spec.URL stays, 503")
	notRoutable(destinationURL, "loopback host", &destinationURL, false)
	e.waitGet(t, source.Join(name), configMapPath, http.StatusServiceUnavailable, "Not available.")
	t.Log("proxy Ready at the cloud metadata address: MountURLInvalid (link-local host)")
	notRoutable("https://169.254.169.254/latest/meta-data", "link-local host", &destinationURL, false)
	t.Log("proxy Ready at an http URL: MountURLInvalid at level 3 on every kcp, kcp's condition MountObjectInvalidURL")
	notRoutable("http://proxy.mounts.invalid/clusters/x", "it is http, not https", &destinationURL, true)

	allowed := "https://proxy.mounts.invalid/clusters/x"
	t.Logf("proxy Ready at %s, under an allowed suffix: MountReady, spec.URL", allowed)
	e.c.setMountStatus(t, source, kubeClusters, "proxy", map[string]interface{}{"phase": "Ready", "URL": allowed})
	e.c.waitForMount(t, source, name, mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: allowed})
	e.waitWorkspace(t, source, name, condWant{phase: corev1alpha1.LogicalClusterPhaseReady, status: corev1.ConditionTrue,
		reason: mount.ReasonMountReady, inTree: corev1.ConditionTrue, url: &allowed})
	t.Log("proxy Ready at a host out of the allowed ones: MountURLInvalid, spec.URL stays the allowed one")
	notRoutable("https://proxy.elsewhere.invalid/", "host not in --workspace-url-allowed-hosts", &allowed, false)
}

// TestWorkspaceConditionBesideInTree runs the plugin with
// --workspace-condition beside kcp's in-tree mounts controller (gate
// WorkspaceMounts on; the CRD is served before any Workspace mounts it, and
// this kcp is never restarted: kcp v0.28.1 panics on a Workspace whose
// spec.mount names a kind it cannot map, at start too):
// both conditions side by side, nothing written at steady state by anyone,
// and a plugin with --workspace-url refuses to start.
func TestWorkspaceConditionBesideInTree(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newCondEnv(t, "WorkspaceMounts=true")
	cfg := e.kcp.BaseConfigT(t, "base")

	org := framework.UniqueName("wsintree")
	_, orgWS := framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	orgPath := framework.RootPath.Join(org)
	url := orgWS.Spec.URL
	e.installDemoCRD(t, orgPath)

	t.Log("mount objects first (ready: Ready with URL, connecting: Connecting with URL, no-url: Ready without URL), then the Workspaces")
	e.c.createMountObject(t, orgPath, kubeClusters, "ready", map[string]interface{}{"phase": "Ready", "URL": url})
	e.c.createMountObject(t, orgPath, kubeClusters, "connecting", map[string]interface{}{"phase": "Connecting", "URL": url})
	e.c.createMountObject(t, orgPath, kubeClusters, "no-url", map[string]interface{}{"phase": "Ready"})
	p := e.startPlugin(t, "condition-beside-in-tree", "--workspace-condition")
	for _, name := range []string{"ready", "connecting", "no-url"} {
		e.c.createMountedWorkspace(t, orgPath, name, kubeClusters.ref(name))
	}

	noURL := ""
	e.waitWorkspace(t, orgPath, "ready", condWant{phase: corev1alpha1.LogicalClusterPhaseReady,
		status: corev1.ConditionTrue, reason: mount.ReasonMountReady,
		inTree: corev1.ConditionTrue, url: &url})
	e.waitWorkspace(t, orgPath, "connecting", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable,
		status: corev1.ConditionFalse, reason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
		inTree: corev1.ConditionFalse, inTreeReason: tenancyv1alpha1.MountObjectNotReadyReason, url: &url})
	t.Log("no-url: kcp's controller says Ready, the plugin cannot tell (Unknown, MountURLMissing) rather than fight it")
	e.waitWorkspace(t, orgPath, "no-url", condWant{phase: corev1alpha1.LogicalClusterPhaseReady,
		status: corev1.ConditionUnknown, reason: mount.ReasonMountURLMissing,
		inTree: corev1.ConditionTrue, url: &noURL})
	e.c.waitForMount(t, orgPath, "ready", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})
	e.c.waitForMount(t, orgPath, "connecting", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady, url: url})
	e.c.waitForMount(t, orgPath, "no-url", mountState{phase: mount.PhaseReady, reason: mount.ReasonMountURLMissing})

	workspaces := []condWorkspace{{orgPath, "ready"}, {orgPath, "connecting"}, {orgPath, "no-url"}}
	// Conflicts are allowed here: kcp's in-tree controller patches the same
	// new Workspaces, spec and status, at the same moment (and conflicts
	// with itself).
	t.Log("steady state: no patch by the plugin, no change of any of the three Workspaces")
	e.requireSteady(t, p, workspaces, condAnnotationPatches, condStatusPatches)

	t.Log("a plugin with --workspace-url against this kcp refuses to start: exit code 1, one line on stderr")
	before := e.writes(t, p, workspaces)
	ports := make([]string, 2)
	for i := range ports {
		port, err := framework.FreePort(context.Background())
		require.NoError(t, err)
		ports[i] = strconv.Itoa(port)
	}
	args := []string{"start", "--kubeconfig", e.kcp.KubeconfigPath, "--context", "shard-base", "--leader-elect=false",
		"--workspace-condition", "--workspace-url",
		"--bind-address", "127.0.0.1", "--secure-port", ports[0], "--cert-dir", filepath.Join(e.dir, "refused"),
		"--metrics-bind-address", "127.0.0.1:" + ports[1]}
	code, stdout, stderr, took := opRun(t, args...)
	t.Logf("exit code %d after %s; stderr %q", code, took.Round(time.Millisecond), stderr)
	require.Equal(t, 1, code, "exit code; stdout %q, stderr %q", stdout, stderr)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 1, "one line on stderr, got %q", stderr)
	require.Contains(t, lines[0], "--workspace-url")
	require.Contains(t, strings.ToLower(lines[0]), "in-tree", "the line names kcp's in-tree mounts controller")
	require.Contains(t, lines[0], "WorkspaceMounts", "the line names kcp's feature gate")
	after := e.writes(t, p, workspaces)
	require.Equal(t, before.versions, after.versions, "the refused plugin changed a Workspace")
	t.Logf("TestWorkspaceConditionBesideInTree took %s (kcp start included)", time.Since(began).Round(time.Second))
}

// condLogLines returns the lines of the plugin's log that contain s.
func condLogLines(t *testing.T, p *framework.Plugin, s string) string {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	require.NoError(t, err)
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, s) {
			found = append(found, line)
		}
	}
	return strings.Join(found, "\n")
}
