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
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// legacyMount is the JSON of the legacy mount annotation for a reference.
func legacyMount(t *testing.T, apiVersion, kind, name string) string {
	t.Helper()
	data, err := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"ref": map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "name": name}}})
	require.NoError(t, err)
	return string(data)
}

// createLegacyWorkspace creates a Workspace with the given annotations (the
// legacy mount annotation among them; kcp v0.28.1 does not parse it).
func createLegacyWorkspace(t *testing.T, c clients, cluster logicalcluster.Path, name string, annotations map[string]string) {
	t.Helper()
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	_, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Create(context.Background(), ws, metav1.CreateOptions{})
	require.NoError(t, err, "creating workspace %s in %s", name, cluster)
}

// TestLegacyMountAnnotation is issue 33's legacy annotation, in a kcp of its
// own (TestMain's plugin runs with default flags). A plugin with
// --legacy-mount-annotation and --workspace-condition mounts by the
// annotation as the plugin always did: a kind served later, a broken and a
// forged annotation, 40 made-up kinds (never a label value), and a Ready
// Workspace anyone may annotate at a missing object, which goes Unavailable
// (503). The plugin that replaces it, without --legacy-mount-annotation,
// takes every annotation and condition it wrote there away (Ready again,
// routed again), writes nothing on a Workspace annotated since, counts no
// legacy mount, and keeps the spec.mount one as it was.
func TestLegacyMountAnnotation(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newCondEnv(t, "")
	cfg := e.kcp.BaseConfigT(t, "base")
	org := framework.UniqueName("legacy")
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	orgPath := framework.RootPath.Join(org)
	e.installDemoCRD(t, orgPath)

	t.Log("a spec.mount Workspace (control) mounting KubeCluster proxy, Connecting; plain Workspaces victim and fresh, Ready")
	e.c.createMountObject(t, orgPath, kubeClusters, "proxy", map[string]interface{}{"phase": "Connecting"})
	e.c.createMountedWorkspace(t, orgPath, "control", kubeClusters.ref("proxy"))
	plain := map[string]string{}
	for _, name := range []string{"victim", "fresh"} {
		_, ws := framework.CreateWorkspace(t, cfg, orgPath, name)
		plain[name] = ws.Spec.URL
		e.waitGet(t, orgPath.Join(name), condWorkspacesPath, http.StatusOK, "WorkspaceList")
	}
	victimURL, freshURL := plain["victim"], plain["fresh"]
	missing := legacyMount(t, kubeClusters.gvr.GroupVersion().String(), kubeClusters.kind, "missing")

	p := e.startPlugin(t, "legacy", "--legacy-mount-annotation", "--workspace-condition")
	controlWant := mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}
	e.c.waitForMount(t, orgPath, "control", controlWant)
	t.Run("honoured", func(t *testing.T) {
		t.Run("a kind served later, broken and restored", func(t *testing.T) {
			t.Parallel()
			testLegacyAnnotationLifecycle(t, e, orgPath)
		})
		t.Run("a Ready Workspace pointed at a missing object goes Unavailable", func(t *testing.T) {
			t.Parallel()
			e.annotate(t, orgPath, "victim", mount.LegacyAnnotationKey, missing)
			e.waitWorkspace(t, orgPath, "victim", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
				reason: mount.ReasonMountObjectNotFound, severity: conditionsv1alpha1.ConditionSeverityError, url: &victimURL})
			e.c.waitForMount(t, orgPath, "victim", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})
			e.waitGet(t, orgPath.Join("victim"), condWorkspacesPath, http.StatusServiceUnavailable, "Not available.")
		})
		t.Run("unparsable reference", func(t *testing.T) {
			t.Parallel()
			testUnparsableReference(t, e.c, orgPath)
		})
		t.Run("unresolved kinds", func(t *testing.T) {
			t.Parallel()
			testUnresolvedKinds(t, e.c, orgPath, p)
		})
	})

	t.Log("stopping the plugin; starting one with --workspace-condition, without --legacy-mount-annotation")
	require.NoError(t, p.Stop())
	p = e.startPlugin(t, "default", "--workspace-condition")

	t.Log("victim: no annotation, no condition, Ready again, and kcp routes it again")
	e.waitWorkspace(t, orgPath, "victim", condWant{phase: corev1alpha1.LogicalClusterPhaseReady, url: &victimURL})
	e.waitGet(t, orgPath.Join("victim"), condWorkspacesPath, http.StatusOK, "WorkspaceList")
	t.Log("no Workspace with the legacy annotation keeps an annotation or the condition of the plugin")
	workspaces := e.c.kcp.Cluster(orgPath).TenancyV1alpha1().Workspaces()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		list, err := workspaces.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		legacy := 0
		for i := range list.Items {
			ws := &list.Items[i]
			if _, found := ws.Annotations[mount.LegacyAnnotationKey]; !found {
				continue
			}
			legacy++
			if written := writtenByPlugin(ws); written != "" {
				left = append(left, ws.Name+": "+written)
			}
		}
		sort.Strings(left)
		return legacy > 40 && len(left) == 0, fmt.Sprintf("%d Workspaces with the legacy annotation; still carrying the plugin's writes: %v", legacy, left)
	}, convergeTimeout, 200*time.Millisecond, "the legacy-annotated Workspaces of %s are cleaned", orgPath)

	t.Log("fresh, annotated at a missing object now, stays Ready and gets nothing; the spec.mount Workspace is served as before")
	e.annotate(t, orgPath, "fresh", mount.LegacyAnnotationKey, missing)
	// A change of control after the annotation: once it is written, the
	// plugin has had fresh's event too.
	e.c.setMountStatus(t, orgPath, kubeClusters, "proxy", map[string]interface{}{"phase": "Initializing"})
	e.c.waitForMount(t, orgPath, "control", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
	ws := e.waitWorkspace(t, orgPath, "fresh", condWant{phase: corev1alpha1.LogicalClusterPhaseReady, url: &freshURL})
	require.Empty(t, writtenByPlugin(ws), "fresh")
	e.waitGet(t, orgPath.Join("fresh"), condWorkspacesPath, http.StatusOK, "WorkspaceList")

	t.Log("the plugin's metrics count the spec.mount Workspace alone")
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		m, err := framework.ScrapeMetrics(context.Background(), opHTTP, p.MetricsURL+"/metrics")
		if err != nil {
			return false, err.Error()
		}
		mounted, _ := m.Sum("workspacemounts_mounted_workspaces", nil)
		return mounted == 1, fmt.Sprintf("workspacemounts_mounted_workspaces sums to %v", mounted)
	}, opMetricsTimeout, 500*time.Millisecond, "%s%s", "one mounted Workspace", opLogs(p))
	t.Logf("TestLegacyMountAnnotation took %s (kcp start included)", time.Since(began).Round(time.Second))
}

// writtenByPlugin says what the plugin wrote that ws still carries, "" if nothing.
func writtenByPlugin(ws *tenancyv1alpha1.Workspace) string {
	var written []string
	for _, key := range []string{mount.PhaseAnnotationKey, mount.StatusAnnotationKey} {
		if _, found := ws.Annotations[key]; found {
			written = append(written, key)
		}
	}
	if condition(ws, condType) != nil {
		written = append(written, string(condType))
	}
	return strings.Join(written, ", ")
}

// testLegacyAnnotationLifecycle: a legacy annotation naming a kind that is
// served only later (kcp v0.28.1 does not parse the annotation, which lets
// it reference a kind before it is served: with spec.mount, kcp v0.28.1
// would crash), then its object, broken JSON, restored, removed.
func testLegacyAnnotationLifecycle(t *testing.T, e *condEnv, cluster logicalcluster.Path) {
	c := e.c
	kind := mountKind{gvr: schema.GroupVersionResource{Group: "late.example.io", Version: framework.MountVersion, Resource: "lateclusters"}, kind: "LateCluster"}
	annotation := `{"spec":{"ref":{"apiVersion":"late.example.io/v1alpha1","kind":"LateCluster","name":"late"}},"status":{"phase":"Ready","url":"https://stale.example"}}`
	createLegacyWorkspace(t, c, cluster, "legacy", map[string]string{mount.LegacyAnnotationKey: annotation})
	status := c.waitForMount(t, cluster, "legacy", mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountKindUnknown})
	require.Contains(t, status.Message, "LateCluster")

	// The kind becomes served later: no restart needed.
	framework.InstallCRD(t, e.kcp.BaseConfigT(t, "base"), cluster,
		framework.MountCRD(kind.gvr.Group, kind.kind, kind.gvr.Resource, apiextensionsv1.ClusterScoped))
	c.waitForMount(t, cluster, "legacy", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})

	url := "https://late.example/clusters/x"
	c.createMountObject(t, cluster, kind, "late", map[string]interface{}{"phase": "Ready", "URL": url})
	c.waitForMount(t, cluster, "legacy", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	workspaces := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces()
	setAnnotation := func(value *string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ws, err := workspaces.Get(context.Background(), "legacy", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if value == nil {
				delete(ws.Annotations, mount.LegacyAnnotationKey)
			} else {
				ws.Annotations[mount.LegacyAnnotationKey] = *value
			}
			_, err = workspaces.Update(context.Background(), ws, metav1.UpdateOptions{})
			return err
		})
		require.NoError(t, err)
	}

	malformed := `{"spec":{"ref":`
	setAnnotation(&malformed)
	status = c.waitForMount(t, cluster, "legacy", mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountReferenceInvalid})
	require.Contains(t, status.Message, "not valid JSON")

	setAnnotation(&annotation)
	c.waitForMount(t, cluster, "legacy", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	// No longer mounted: both annotations go, and the condition.
	setAnnotation(nil)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := workspaces.Get(context.Background(), "legacy", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		written := writtenByPlugin(ws)
		return written == "", "still " + written
	}, convergeTimeout, 100*time.Millisecond)
}

// testUnparsableReference: a legacy annotation naming an object "a/b", which
// no object can be called, and a status annotation the user wrote claiming
// Ready: the controller overwrites it with Invalid, MountReferenceInvalid.
func testUnparsableReference(t *testing.T, c clients, cluster logicalcluster.Path) {
	createLegacyWorkspace(t, c, cluster, "slash", map[string]string{
		mount.LegacyAnnotationKey: `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`,
		mount.StatusAnnotationKey: `{"phase":"Ready","ready":true,"url":"https://evil.example","reason":"MountReady","message":"trust me"}`,
		mount.PhaseAnnotationKey:  "Ready",
	})
	status := c.waitForMount(t, cluster, "slash", mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountReferenceInvalid})
	require.NotContains(t, status.Message, "trust me")
}

// testUnresolvedKinds: 40 legacy annotations naming 40 made-up kinds (with
// spec.mount, kcp v0.28.1 would crash): the plugin's
// workspacemounts_mounted_workspaces counts them as kind "(unresolved)", and
// no made-up kind becomes a label value.
func testUnresolvedKinds(t *testing.T, c clients, cluster logicalcluster.Path, plugin *framework.Plugin) {
	const kinds = 40
	madeUp := map[string]bool{}
	suffix := strings.ReplaceAll(framework.UniqueName(""), "-", "")
	for i := range kinds {
		kind := fmt.Sprintf("MadeUp%02dKind%s", i, suffix)
		madeUp[kind] = true
		gv := schema.GroupVersion{Group: fmt.Sprintf("made-up-%02d.%s.example.com", i, suffix), Version: "v1"}
		createLegacyWorkspace(t, c, cluster, fmt.Sprintf("kind-%02d", i), map[string]string{
			mount.LegacyAnnotationKey: legacyMount(t, gv.String(), kind, "object"),
		})
	}
	for i := range kinds {
		c.waitForMount(t, cluster, fmt.Sprintf("kind-%02d", i), mountState{phase: mount.PhaseInvalid, reason: mount.ReasonMountKindUnknown})
	}

	var last framework.Metrics
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		m, err := framework.ScrapeMetrics(context.Background(), opHTTP, plugin.MetricsURL+"/metrics")
		if err != nil {
			return false, err.Error()
		}
		last = m
		counted, _ := m.Sum("workspacemounts_mounted_workspaces", map[string]string{"kind": unresolvedKind})
		for kind := range m.LabelValues("workspacemounts_mounted_workspaces", "kind") {
			if madeUp[kind] {
				v, _ := m.Sum("workspacemounts_mounted_workspaces", map[string]string{"kind": kind})
				counted += v
			}
		}
		return counted >= kinds, fmt.Sprintf("%v of %d counted", counted, kinds)
	}, opMetricsTimeout, 500*time.Millisecond, "%s%s", "the plugin's metrics count the 40 mounts", opLogs(plugin))
	var leaked []string
	for kind := range last.LabelValues("workspacemounts_mounted_workspaces", "kind") {
		if madeUp[kind] || strings.Contains(kind, suffix) {
			leaked = append(leaked, kind)
		}
	}
	sort.Strings(leaked)
	require.Empty(t, leaked, "made-up kinds among the label values of workspacemounts_mounted_workspaces")
	unresolved, found := last.Sum("workspacemounts_mounted_workspaces", map[string]string{"kind": unresolvedKind, "phase": string(mount.PhaseInvalid)})
	require.True(t, found, "no workspacemounts_mounted_workspaces{kind=%q}", unresolvedKind)
	require.GreaterOrEqual(t, unresolved, float64(kinds))
}

// TestLegacyAnnotationIgnoredByDefault: TestMain's plugin runs with default
// flags, so the legacy annotation mounts nothing: a Workspace carrying it
// (with a phase and a status its writer forged) is not listed by the virtual
// workspace, and the forged annotations are removed as from any unmounted
// Workspace; the spec.mount Workspace beside it is served.
func TestLegacyAnnotationIgnoredByDefault(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "legacydefault")
	createLegacyWorkspace(t, c, org.path, "legacy", map[string]string{
		mount.LegacyAnnotationKey: legacyMount(t, kubeClusters.gvr.GroupVersion().String(), kubeClusters.kind, "missing"),
		mount.StatusAnnotationKey: `{"phase":"Ready","ready":true,"reason":"MountReady","message":"forged"}`,
		mount.PhaseAnnotationKey:  "Ready",
	})
	org.mountAll(t, []vwMount{{workspace: "mounted", object: "missing", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "legacy", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		written := writtenByPlugin(ws)
		return written == "", "still " + written
	}, convergeTimeout, 100*time.Millisecond, "the forged annotations of %s are removed", org.path.Join("legacy"))
	// Listed: the spec.mount Workspace alone, whatever the order of events.
	org.waitServed(t, []vwMount{{workspace: "mounted", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
}
