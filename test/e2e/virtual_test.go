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
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// TestVirtualKubectlGet reads WorkspaceMounts in four states with kubectl,
// through the plugin's own listener and through kcp's mini-proxy: tables,
// one object, -o wide, -o yaml, label and field selectors, paging, explain.
func TestVirtualKubectlGet(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "vwget")
	url := kcp.BaseURL + "/clusters/" + org.cluster.String()
	mounts := standardMounts(url)
	org.mountAll(t, mounts)
	want := map[string]vwMount{}
	for _, m := range mounts {
		want[m.workspace] = m
	}
	cluster := org.cluster.String()

	// kcp's admin.kubeconfig as it is, with the plugin's certificate on the command line.
	asIs := kubectl{t: t, route: vwRoute{kubeconfig: kcp.KubeconfigPath}, context: adminContext, cacheDir: t.TempDir()}
	r := asIs.runServer(virtualWorkspaceURL+vwPrefix+cluster, "[admin.kubeconfig --certificate-authority]",
		"--certificate-authority", vwCAFile(), "get", "wsm", "-o", "name")
	require.NoError(t, r.err, "%s", r)
	require.Len(t, lines(r.stdout), len(mounts), "%s", r)

	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			k := newKubectl(t, route, adminContext)

			out := k.ok(cluster, "get", "workspacemounts")
			require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE"}, header(out), out)
			rows := rowsByName(tableRows(t, out))
			require.Len(t, rows, len(mounts), out)
			for name, m := range want {
				row := rows[name]
				require.NotNil(t, row, "no row %s in\n%s", name, out)
				require.Equal(t, "KubeCluster", row["KIND"], out)
				require.Equal(t, m.object, row["MOUNT"], out)
				require.Equal(t, string(m.want.phase), row["PHASE"], out)
				require.Equal(t, fmt.Sprint(m.want.ready), row["READY"], out)
				require.Equal(t, org.path.Join(name).String(), row["WORKSPACE"], "the Workspace's path\n%s", out)
				require.Regexp(t, `^\d+[smh]`, row["AGE"], out)
			}

			// The path as a field selector, and as kcp's annotation.
			require.Equal(t, []string{"ready"}, k.names(cluster, "get", "wsm", "--field-selector", "status.workspacePath="+org.path.Join("ready").String()))
			require.Equal(t, org.path.String(), k.ok(cluster, "get", "wsm", "ready", "-o", `jsonpath={.metadata.annotations.kcp\.io/path}`))

			// Labels as columns (from the rows' object metadata).
			out = k.ok(cluster, "get", "wsm", "-L", "env", "--show-labels")
			require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE", "ENV", "LABELS"}, header(out), out)
			rows = rowsByName(tableRows(t, out))
			require.Equal(t, "prod", rows["ready"]["ENV"], out)
			require.Equal(t, "env=prod,tier=gold", rows["ready"]["LABELS"], out)
			require.Equal(t, "<none>", rows["missing"]["LABELS"], out)

			// Discovery: the resource, its short name, category and verbs.
			out = k.ok(cluster, "api-resources", "-o", "wide")
			require.Regexp(t, `(?m)^workspacemounts +wsm +workspacemounts.io/v1alpha1 +false +WorkspaceMount +get,list,watch +kcp\s*$`, out)
			require.Equal(t, []string{"connecting", "missing", "no-url", "ready"}, k.names(cluster, "get", "kcp"))

			// describe, the generic describer.
			out = k.ok(cluster, "describe", "wsm", "connecting")
			require.Regexp(t, `(?m)^Name: +connecting$`, out)
			require.Regexp(t, `(?m)^ +Phase: +Connecting$`, out)
			require.Regexp(t, `(?m)^ +Kind: +KubeCluster$`, out)

			// The short name, and one object.
			out = k.ok(cluster, "get", "wsm", "connecting")
			table := tableRows(t, out)
			require.Len(t, table, 1, out)
			require.Equal(t, map[string]string{"NAME": "connecting", "WORKSPACE": org.path.Join("connecting").String(), "KIND": "KubeCluster",
				"MOUNT": "connecting-cluster", "PHASE": "Connecting", "READY": "false",
				"KCP-PHASE": table[0]["KCP-PHASE"], "AGE": table[0]["AGE"]}, table[0])
			require.NotEmpty(t, table[0]["KCP-PHASE"], "kcp's phase of the Workspace, or <none>")
			stderr := k.fails(cluster, "get", "wsm", "does-not-exist")
			require.Contains(t, stderr, `workspacemounts.workspacemounts.io "does-not-exist" not found`)

			// -o wide: CLUSTER, SHARD (empty with a single shard), URL (empty when unset) and REASON.
			out = k.ok(cluster, "get", "wsm", "-o", "wide")
			require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE", "CLUSTER", "SHARD", "URL", "REASON", "SINCE"}, header(out), out)
			rows = rowsByName(tableRows(t, out))
			require.Len(t, rows, len(mounts), out)
			for name, m := range want {
				require.Equal(t, cluster, rows[name]["CLUSTER"], out)
				require.Contains(t, []string{"", "<none>"}, rows[name]["SHARD"], out)
				require.Equal(t, m.want.url, rows[name]["URL"], out)
				require.Equal(t, m.want.reason, rows[name]["REASON"], out)
			}

			// -o yaml: the whole object.
			checkYAML(t, k, org, "connecting", func(t *testing.T, wsm *wsmv1alpha1.WorkspaceMount) {
				require.Equal(t, map[string]string{"env": "dev"}, wsm.Labels)
				require.Equal(t, wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "connecting-cluster"}, wsm.Spec.MountRef)
				require.Equal(t, "Connecting", wsm.Status.Phase)
				require.False(t, wsm.Status.Ready)
				require.Empty(t, wsm.Status.URL)
				require.Equal(t, mount.ReasonMountNotReady, wsm.Status.Reason)
				require.Contains(t, wsm.Status.Message, "condition AgentConnected is False (NoHeartbeat: the agent has not connected yet)")
				require.NotNil(t, wsm.Status.LastTransitionTime)
				require.Equal(t, []wsmv1alpha1.MountCondition{{Type: "AgentConnected", Status: "False", Reason: "NoHeartbeat", Message: "the agent has not connected yet"}}, wsm.Status.Conditions)
			})
			checkYAML(t, k, org, "ready", func(t *testing.T, wsm *wsmv1alpha1.WorkspaceMount) {
				require.Equal(t, map[string]string{"env": "prod", "tier": "gold"}, wsm.Labels)
				require.Equal(t, wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "ready-cluster"}, wsm.Spec.MountRef)
				require.Equal(t, "Ready", wsm.Status.Phase)
				require.True(t, wsm.Status.Ready)
				require.Equal(t, url, wsm.Status.URL)
				require.Equal(t, mount.ReasonMountReady, wsm.Status.Reason)
				require.Empty(t, wsm.Status.Conditions)
			})

			// Label selectors: the Workspaces' labels.
			require.Equal(t, []string{"no-url", "ready"}, k.names(cluster, "get", "wsm", "-l", "env=prod"))
			require.Equal(t, []string{"ready"}, k.names(cluster, "get", "wsm", "-l", "env=prod,tier=gold"))
			require.Equal(t, []string{"connecting", "no-url"}, k.names(cluster, "get", "wsm", "-l", "env in (dev,prod),tier!=gold"))
			require.Equal(t, []string{"missing"}, k.names(cluster, "get", "wsm", "-l", "!env"))
			require.Empty(t, k.names(cluster, "get", "wsm", "-l", "env=staging"))

			// Field selectors: metadata.name, status.phase, status.ready.
			require.Equal(t, []string{"no-url", "ready"}, k.names(cluster, "get", "wsm", "--field-selector", "status.phase=Ready"))
			require.Equal(t, []string{"connecting", "missing", "no-url"}, k.names(cluster, "get", "wsm", "--field-selector", "status.ready=false"))
			require.Equal(t, []string{"ready"}, k.names(cluster, "get", "wsm", "--field-selector", "status.ready=true"))
			require.Equal(t, []string{"no-url"}, k.names(cluster, "get", "wsm", "--field-selector", "status.phase=Ready,status.ready=false"))
			require.Equal(t, []string{"connecting", "missing", "ready"}, k.names(cluster, "get", "wsm", "--field-selector", "metadata.name!=no-url"))
			require.Equal(t, []string{"missing"}, k.names(cluster, "get", "wsm", "--field-selector", "metadata.name=missing"))
			require.Equal(t, []string{"missing"}, k.names(cluster, "get", "wsm", "--field-selector", "status.phase=NotFound", "-l", "!env"))
			stderr = k.fails(cluster, "get", "wsm", "--field-selector", "spec.mountRef.kind=KubeCluster")
			require.Contains(t, stderr, "field label not supported: spec.mountRef.kind")

			// Paging: one object a page, every row once, one header.
			r := k.run(cluster, "get", "wsm", "--chunk-size=1", "-v=6")
			require.NoError(t, r.err, "%s", r)
			require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE"}, header(r.stdout), r.stdout)
			require.Equal(t, []string{"connecting", "missing", "no-url", "ready"}, column(tableRows(t, r.stdout), "NAME"), r.stdout)
			pages := regexp.MustCompile(`GET \S+/workspacemounts\?\S*limit=1\S* 200 OK`).FindAllString(r.stderr, -1)
			require.Len(t, pages, len(mounts), "one request per object:\n%s", r.stderr)
			require.Len(t, regexp.MustCompile(`continue=`).FindAllString(strings.Join(pages, "\n"), -1), len(mounts)-1, r.stderr)

			// explain reads the OpenAPI v3 document.
			out = k.ok(cluster, "explain", "workspacemounts.status")
			require.Contains(t, out, "GROUP:      workspacemounts.io\nKIND:       WorkspaceMount\nVERSION:    v1alpha1\n")
			require.Regexp(t, `FIELD: +status <WorkspaceMountStatus>`, out)
			for _, field := range []string{"phase\t<string> -required-", "ready\t<boolean> -required-", "url\t<string>", "reason\t<string> -required-", "message\t<string>", "lastTransitionTime\t<string>", "conditions\t<[]MountCondition>", "workspacePhase\t<string>"} {
				require.Contains(t, out, field, out)
			}
			out = k.ok(cluster, "explain", "wsm.spec.mountRef")
			require.Regexp(t, `FIELD: +mountRef <MountReference>`, out)
			for _, field := range []string{"apiVersion\t<string> -required-", "kind\t<string> -required-", "name\t<string> -required-", "namespace\t<string>"} {
				require.Contains(t, out, field, out)
			}
			require.Contains(t, out, "The namespace of a namespaced mount object.")
		})
	}
}

// names runs kubectl with -o name and returns the object names, sorted.
func (k kubectl) names(cluster string, args ...string) []string {
	k.t.Helper()
	out := k.ok(cluster, append(args, "-o", "name")...)
	printed := lines(out)
	names := make([]string, 0, len(printed))
	for _, line := range printed {
		name, found := strings.CutPrefix(line, "workspacemount.workspacemounts.io/")
		require.True(k.t, found, "unexpected line %q in\n%s", line, out)
		names = append(names, name)
	}
	return names
}

// checkYAML gets a WorkspaceMount with -o yaml and checks what is common to
// all (type, identity from the Workspace, kcp.io/cluster and kcp.io/path, workspacePhase),
// then the rest with check. The Workspace's phase is kcp's, which may move
// meanwhile: the check is repeated until both agree.
func checkYAML(t *testing.T, k kubectl, org vwOrg, name string, check func(*testing.T, *wsmv1alpha1.WorkspaceMount)) {
	t.Helper()
	out := k.ok(org.cluster.String(), "get", "wsm", name, "-o", "yaml")
	require.Contains(t, out, "kcp.io/cluster: "+org.cluster.String(), out)
	require.Contains(t, out, "workspacePhase: ", out)
	require.Contains(t, out, "mountRef:", out)
	var wsm wsmv1alpha1.WorkspaceMount
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &wsm), out)
	require.Equal(t, "workspacemounts.io/v1alpha1", wsm.APIVersion)
	require.Equal(t, "WorkspaceMount", wsm.Kind)
	require.Equal(t, name, wsm.Name)
	require.Equal(t, map[string]string{logicalcluster.AnnotationKey: org.cluster.String(), core.LogicalClusterPathAnnotationKey: org.path.String()}, wsm.Annotations)
	check(t, &wsm)

	var ws *tenancyv1alpha1.Workspace
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		var err error
		ws, err = org.c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		wsm = wsmv1alpha1.WorkspaceMount{}
		if err := yaml.Unmarshal([]byte(k.ok(org.cluster.String(), "get", "wsm", name, "-o", "yaml")), &wsm); err != nil {
			return false, err.Error()
		}
		return wsm.Status.WorkspacePhase == string(ws.Status.Phase) && wsm.Status.WorkspacePhase != "",
			fmt.Sprintf("workspacePhase %q, the Workspace's phase %q", wsm.Status.WorkspacePhase, ws.Status.Phase)
	}, vwConvergeTimeout, 200*time.Millisecond)
	require.Equal(t, ws.UID, wsm.UID)
	require.True(t, ws.CreationTimestamp.Equal(&wsm.CreationTimestamp), "creationTimestamp %s, want the Workspace's %s", wsm.CreationTimestamp, ws.CreationTimestamp)
}

// TestVirtualPathForms addresses the same WorkspaceMounts by logical cluster
// name, by workspace path (also two levels deep) and through * with kubectl.
func TestVirtualPathForms(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "vwpath")
	orgMounts := []vwMount{
		{workspace: "alpha", object: "alpha-cluster", status: map[string]interface{}{"phase": "Initializing"}, want: mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady}},
		{workspace: "beta", object: "beta-cluster", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}},
	}
	org.mountAll(t, orgMounts)

	// A workspace inside the org: root:<org>:team resolves in two steps.
	teamCluster, _ := framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), org.path, "team")
	team := vwOrg{c: c, name: "team", path: org.path.Join("team"), cluster: teamCluster}
	installKubeClusters(t, team.path)
	teamMounts := []vwMount{
		{workspace: "gamma", object: "gamma-cluster", status: map[string]interface{}{"phase": "Unknown"}, want: mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountNotReady}},
	}
	team.mountAll(t, teamMounts)

	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			k := newKubectl(t, route, adminContext)

			for _, target := range []string{org.cluster.String(), org.path.String()} {
				out := k.ok(target, "get", "wsm", "-o", "wide")
				rows := tableRows(t, out)
				require.Equal(t, []string{"alpha", "beta"}, column(rows, "NAME"), "at %s:\n%s", target, out)
				require.Equal(t, []string{org.cluster.String(), org.cluster.String()}, column(rows, "CLUSTER"), out)
				require.Equal(t, "Initializing", rowsByName(rows)["alpha"]["PHASE"], out)
				require.Equal(t, []string{"alpha"}, k.names(target, "get", "wsm", "alpha"))
			}
			for _, target := range []string{team.cluster.String(), team.path.String()} {
				out := k.ok(target, "get", "wsm", "-o", "wide")
				rows := tableRows(t, out)
				require.Equal(t, []string{"gamma"}, column(rows, "NAME"), "at %s:\n%s", target, out)
				require.Equal(t, []string{team.cluster.String()}, column(rows, "CLUSTER"), out)
			}
			// root holds the org's Workspace (not mounted): none of the org's WorkspaceMounts shows there.
			require.NotContains(t, k.names("root", "get", "wsm"), "alpha")

			// * lists across clusters, this test's among others'.
			out := k.ok("*", "get", "wsm", "-o", "wide")
			require.Equal(t, []string{"NAME", "WORKSPACE", "KIND", "MOUNT", "PHASE", "READY", "KCP-PHASE", "AGE", "CLUSTER", "SHARD", "URL", "REASON", "SINCE"}, header(out), out)
			mine := map[string][]string{}
			for _, row := range tableRows(t, out) {
				if row["CLUSTER"] == org.cluster.String() || row["CLUSTER"] == team.cluster.String() {
					mine[row["CLUSTER"]] = append(mine[row["CLUSTER"]], row["NAME"]+" "+row["PHASE"]+" "+row["REASON"])
				}
			}
			require.Equal(t, map[string][]string{
				org.cluster.String():  {"alpha Initializing MountNotReady", "beta NotFound MountObjectNotFound"},
				team.cluster.String(): {"gamma Unknown MountNotReady"},
			}, mine, out)

			// Selectors apply at * too.
			out = k.ok("*", "get", "wsm", "-o", "wide", "--field-selector", "status.phase=Unknown")
			var unknown []string
			for _, row := range tableRows(t, out) {
				require.Equal(t, "Unknown", row["PHASE"], out)
				if row["CLUSTER"] == team.cluster.String() || row["CLUSTER"] == org.cluster.String() {
					unknown = append(unknown, row["NAME"])
				}
			}
			require.Equal(t, []string{"gamma"}, unknown, out)

			// A name is not unique across clusters: get needs one.
			stderr := k.fails("*", "get", "wsm", "alpha")
			require.Contains(t, stderr, "BadRequest", stderr)
			require.Contains(t, stderr, "get needs a logical cluster", stderr)
		})
	}
}

// watchLine is one line of kubectl get -w --output-watch-events.
type watchLine struct {
	event, name, phase, ready string
}

// watchLines parses the table output of kubectl get -w --output-watch-events.
// Every row is printed as it comes, so the columns are split by blanks (none
// of EVENT NAME WORKSPACE KIND MOUNT PHASE READY KCP-PHASE AGE is empty:
// kubectl prints <none> for a path or a phase not known).
func watchLines(out string) []watchLine {
	var result []watchLine
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 9 || fields[0] == "EVENT" {
			continue
		}
		result = append(result, watchLine{event: fields[0], name: fields[1], phase: fields[5], ready: fields[6]})
	}
	return result
}

// seen returns a check for background.waitFor: has a line like want appeared
// after the first skip lines?
func seen(want watchLine, skip int) func(string) (bool, string) {
	return func(out string) (bool, string) {
		for i, line := range watchLines(out) {
			if i >= skip && line == want {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %+v yet", want)
	}
}

// seenCount is how many lines a watch has printed.
func (b *background) seenCount() int {
	stdout, _ := b.output()
	return len(watchLines(stdout))
}

// TestVirtualWatch watches with kubectl get -w while mounts flip, are added
// and deleted. Each subtest keeps to its own Workspaces by a label selector.
// Changes follow right after the initial list: kubectl watches from the
// list's resourceVersion, and the virtual workspace replays what happened
// in between (see TestVirtualWatchFromResourceVersion).
func TestVirtualWatch(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "vwwatch")
	url := kcp.BaseURL + "/clusters/" + org.cluster.String()
	connecting := map[string]interface{}{"phase": "Connecting"}
	ready := map[string]interface{}{"phase": "Ready", "URL": url}
	connectingState := mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}
	readyState := mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url}
	initializing := mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady}
	routes := vwRoutes(t)
	mounts := make([]vwMount, 0, 2*len(routes)+1)
	for _, route := range routes {
		mounts = append(mounts,
			vwMount{workspace: "flip-" + route.name, labels: map[string]string{"route": route.name}, object: "flip-" + route.name, status: connecting, want: connectingState},
			vwMount{workspace: "steady-" + route.name, labels: map[string]string{"route": route.name}, object: "steady-" + route.name, status: map[string]interface{}{"phase": "Initializing"}, want: initializing},
		)
	}
	mounts = append(mounts, vwMount{workspace: "gone", labels: map[string]string{"route": "changes"}, object: "gone", status: connecting, want: connectingState})
	org.mountAll(t, mounts)
	cluster := org.cluster.String()

	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			flip, steady := "flip-"+route.name, "steady-"+route.name
			k := newKubectl(t, route, adminContext)
			selector := "route=" + route.name
			all := k.start(cluster, "get", "wsm", "-w", "--output-watch-events", "-l", selector)
			connectingOnly := k.start(cluster, "get", "wsm", "-w", "--output-watch-events", "-l", selector, "--field-selector", "status.phase=Connecting")
			all.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
				flipSeen, _ := seen(watchLine{"ADDED", flip, "Connecting", "false"}, 0)(out)
				steadySeen, _ := seen(watchLine{"ADDED", steady, "Initializing", "false"}, 0)(out)
				return flipSeen && steadySeen, fmt.Sprintf("initial events %+v", watchLines(out))
			})
			connectingOnly.waitFor(t, vwConvergeTimeout, seen(watchLine{"ADDED", flip, "Connecting", "false"}, 0))

			allBefore, onlyBefore := all.seenCount(), connectingOnly.seenCount()
			c.setMountStatus(t, org.path, kubeClusters, flip, ready)
			c.waitForMount(t, org.path, flip, readyState)
			all.waitFor(t, vwConvergeTimeout, seen(watchLine{"MODIFIED", flip, "Ready", "true"}, allBefore))
			// Leaving the field selector is a deletion for that watch.
			connectingOnly.waitFor(t, vwConvergeTimeout, seen(watchLine{"DELETED", flip, "Connecting", "false"}, onlyBefore))

			allBefore, onlyBefore = all.seenCount(), connectingOnly.seenCount()
			c.setMountStatus(t, org.path, kubeClusters, flip, connecting)
			c.waitForMount(t, org.path, flip, connectingState)
			all.waitFor(t, vwConvergeTimeout, seen(watchLine{"MODIFIED", flip, "Connecting", "false"}, allBefore))
			// Entering it again is an addition.
			connectingOnly.waitFor(t, vwConvergeTimeout, seen(watchLine{"ADDED", flip, "Connecting", "false"}, onlyBefore))

			all.stop()
			connectingOnly.stop()
			for _, b := range []*background{all, connectingOnly} {
				out, _ := b.output()
				for _, line := range watchLines(out) {
					require.Contains(t, []string{flip, steady}, line.name, "the label selector let another object through:\n%s", out)
				}
			}
			out, _ := connectingOnly.output()
			for _, line := range watchLines(out) {
				require.NotEqual(t, steady, line.name, "%s is not Connecting:\n%s", steady, out)
			}
		})
	}

	// A Workspace mounted while watching is ADDED (the controller may reach
	// it before or after: then MODIFIED), a deleted one DELETED.
	t.Run("changes", func(t *testing.T) {
		t.Parallel()
		k := newKubectl(t, routes[0], adminContext)
		w := k.start(cluster, "get", "wsm", "-w", "--output-watch-events", "-l", "route=changes")
		w.waitFor(t, vwConvergeTimeout, seen(watchLine{"ADDED", "gone", "Connecting", "false"}, 0))
		org.mount(t, vwMount{workspace: "late", labels: map[string]string{"route": "changes"}, object: "late", status: ready})
		w.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
			var added, readyShown bool
			for _, line := range watchLines(out) {
				added = added || (line.name == "late" && line.event == "ADDED")
				readyShown = readyShown || (line.name == "late" && line.phase == "Ready" && line.ready == "true")
			}
			return added && readyShown, "no ADDED late, then Ready"
		})
		require.NoError(t, c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Delete(context.Background(), "gone", metav1.DeleteOptions{}))
		w.waitFor(t, vwConvergeTimeout, seen(watchLine{"DELETED", "gone", "Connecting", "false"}, 0))
		require.Equal(t, []string{"late"}, k.names(cluster, "get", "wsm", "-l", "route=changes"))
	})
}

// TestVirtualWatchFromResourceVersion watches from the resourceVersion of a
// list taken before a change, as kubectl get -w and every informer do: the
// watch must show the change (or answer 410 Gone, so that the client lists
// again), not start silently after it.
func TestVirtualWatchFromResourceVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "vwrv")
	org.mountAll(t, []vwMount{
		{workspace: "flip", object: "flip-cluster", status: map[string]interface{}{"phase": "Connecting"}, want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}},
	})
	k := newKubectl(t, vwRoutes(t)[0], adminContext)
	cluster := org.cluster.String()
	collection := vwPrefix + cluster + vwResourcePath

	var list wsmv1alpha1.WorkspaceMountList
	require.NoError(t, json.Unmarshal([]byte(k.ok(cluster, "get", "--raw", collection)), &list))
	require.Len(t, list.Items, 1)
	require.NotEmpty(t, list.ResourceVersion)

	c.setMountStatus(t, org.path, kubeClusters, "flip-cluster", map[string]interface{}{"phase": "Initializing"})
	c.waitForMount(t, org.path, "flip", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
	org.waitServed(t, []vwMount{{workspace: "flip", want: mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady}}})

	// The server ends the watch after timeoutSeconds.
	r := k.run(cluster, "get", "--raw", fmt.Sprintf("%s?watch=true&resourceVersion=%s&timeoutSeconds=3", collection, list.ResourceVersion))
	if r.err != nil {
		require.Contains(t, r.stderr, "Gone", "%s", r)
		return
	}
	decoder := json.NewDecoder(strings.NewReader(r.stdout))
	var events []string
	for {
		var event struct {
			Type   string                     `json:"type"`
			Object wsmv1alpha1.WorkspaceMount `json:"object"`
		}
		err := decoder.Decode(&event)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, r.stdout)
		events = append(events, event.Type+" "+event.Object.Name+" "+event.Object.Status.Phase)
		if event.Type == "ERROR" {
			require.Contains(t, r.stdout, `"code":410`, "an error event must be 410 Gone:\n%s", r.stdout)
			return
		}
	}
	require.Contains(t, events, "MODIFIED flip Initializing",
		"a watch from resourceVersion %s (a list before the change) shows no change: %q", list.ResourceVersion, events)
}

// grantWorkspaceReader lets user into a workspace (verb access on /) and
// lets them get, list and watch Workspaces there.
func grantWorkspaceReader(t *testing.T, cluster logicalcluster.Path, user string) {
	t.Helper()
	grantWorkspaceReaderWith(t, kcp.BaseConfigT(t, "base"), cluster, user)
}

// grantWorkspaceReaderWith is grantWorkspaceReader through any kcp's base
// config cfg, e.g. a front-proxy's.
func grantWorkspaceReaderWith(t *testing.T, cfg *rest.Config, cluster logicalcluster.Path, user string) {
	t.Helper()
	client, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	rbac := client.Cluster(cluster).RbacV1()
	ctx := context.Background()
	roles := []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "vw-test-access"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "vw-test-workspace-reader"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspaces"}}},
		},
	}
	for _, role := range roles {
		_, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// kcpKubectl runs kubectl against kcp itself, in one workspace.
func kcpKubectl(t *testing.T, context, cluster string, args ...string) kubectlResult {
	t.Helper()
	k := kubectl{t: t, route: vwRoute{name: "kcp", base: kcp.BaseURL, kubeconfig: kcp.KubeconfigPath}, context: context, cacheDir: t.TempDir()}
	return k.runServer(kcp.BaseURL+"/clusters/"+cluster, "[kcp "+context+" "+cluster+"]", args...)
}

// TestVirtualAuthorization uses the non-admin user of kcp's admin.kubeconfig,
// allowed to list Workspaces in one org and nothing in another.
func TestVirtualAuthorization(t *testing.T) {
	t.Parallel()
	c := newClients(t)

	// Who is the user of the context "user"?
	r := kcpKubectl(t, userContext, "root", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	require.NoError(t, r.err, "%s", r)
	userName := strings.TrimSpace(r.stdout)
	require.Equal(t, "user", userName)

	granted, denied := newVWOrg(t, c, "vwgranted"), newVWOrg(t, c, "vwdenied")
	grantedMounts := []vwMount{
		{workspace: "granted-a", object: "a", status: map[string]interface{}{"phase": "Connecting"}, want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}},
		{workspace: "granted-b", object: "b", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}},
	}
	deniedMounts := []vwMount{
		{workspace: "denied-a", object: "a", status: map[string]interface{}{"phase": "Connecting"}, want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}},
		{workspace: "denied-b", object: "b", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}},
	}
	granted.mountAll(t, grantedMounts)
	denied.mountAll(t, deniedMounts)
	grantWorkspaceReader(t, granted.path, userName)
	// Wait until kcp itself lets the user list Workspaces there, so that no
	// early denial is cached by the virtual workspace.
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		r := kcpKubectl(t, userContext, granted.cluster.String(), "get", "workspaces", "-o", "name")
		return r.err == nil, r.String()
	}, vwConvergeTimeout, 200*time.Millisecond)
	r = kcpKubectl(t, userContext, denied.cluster.String(), "get", "workspaces", "-o", "name")
	require.Error(t, r.err, "%s", r)

	mine := func(out string) []string {
		var names []string
		for _, row := range tableRows(t, out) {
			if row["CLUSTER"] == granted.cluster.String() || row["CLUSTER"] == denied.cluster.String() {
				names = append(names, row["NAME"]+"@"+row["CLUSTER"])
			}
		}
		return names
	}

	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			user := newKubectl(t, route, userContext)
			admin := user.as(adminContext)

			for _, target := range []string{granted.cluster.String(), granted.path.String()} {
				require.Equal(t, []string{"granted-a", "granted-b"}, user.names(target, "get", "wsm"), "at %s", target)
				require.Equal(t, []string{"granted-a"}, user.names(target, "get", "wsm", "granted-a"))
			}
			for _, target := range []string{denied.cluster.String(), denied.path.String()} {
				stderr := user.fails(target, "get", "wsm")
				require.Contains(t, stderr, "Error from server (Forbidden)", "at %s", target)
				require.Contains(t, stderr, "workspacemounts.workspacemounts.io is forbidden", "at %s", target)
				stderr = user.fails(target, "get", "wsm", "denied-a")
				require.Contains(t, stderr, "Error from server (Forbidden)", "at %s", target)
				// The admin sees them.
				require.Equal(t, []string{"denied-a", "denied-b"}, admin.names(target, "get", "wsm"))
			}

			// At *, the user sees the granted org's and none of the denied org's.
			out := user.ok("*", "get", "wsm", "-o", "wide")
			require.ElementsMatch(t, []string{"granted-a@" + granted.cluster.String(), "granted-b@" + granted.cluster.String()}, mine(out), out)
			out = admin.ok("*", "get", "wsm", "-o", "wide")
			require.ElementsMatch(t, []string{
				"granted-a@" + granted.cluster.String(), "granted-b@" + granted.cluster.String(),
				"denied-a@" + denied.cluster.String(), "denied-b@" + denied.cluster.String(),
			}, mine(out), out)

			// Impersonation is no way around it: nobody may impersonate here.
			for _, as := range [][]string{{"--as", "kcp-admin"}, {"--as", "user", "--as-group", "system:masters"}} {
				stderr := user.fails(denied.cluster.String(), append(as, "get", "wsm")...)
				require.Contains(t, stderr, "Error from server (Forbidden)", "%v", as)
				require.Contains(t, stderr, "cannot impersonate", "%v", as)
			}

			// Nor are front-proxy headers trusted from a client.
			client := rawClient(t, route, "")
			url := route.server(denied.cluster.String()) + vwResourcePath
			for _, token := range []string{"", kcp.ConfigT(t, userContext).BearerToken} {
				req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
				require.NoError(t, err)
				req.Header.Set("X-Remote-User", "kcp-admin")
				req.Header.Set("X-Remote-Group", "system:masters")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusForbidden}[token == ""]
				require.Equal(t, want, resp.StatusCode, "X-Remote-User with token %t: %s", token != "", body)
			}
		})
	}

	// A watch at * as the user: the denied org's flip never shows, the
	// granted org's does (after it, so the denied one would have come first).
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		watch := newKubectl(t, vwRoutes(t)[0], userContext).start("*", "get", "wsm", "-w", "--output-watch-events", "-o", "json")
		watch.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
			events := watchEvents(out)
			return events["ADDED granted-a@"+granted.cluster.String()] && events["ADDED granted-b@"+granted.cluster.String()], fmt.Sprintf("events %v", events)
		})
		c.setMountStatus(t, denied.path, kubeClusters, "a", map[string]interface{}{"phase": "Initializing"})
		c.waitForMount(t, denied.path, "denied-a", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
		c.setMountStatus(t, granted.path, kubeClusters, "a", map[string]interface{}{"phase": "Initializing"})
		c.waitForMount(t, granted.path, "granted-a", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
		watch.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
			events := watchEvents(out)
			return events["MODIFIED granted-a@"+granted.cluster.String()+" Initializing"], fmt.Sprintf("events %v", events)
		})
		watch.stop()
		out, _ := watch.output()
		for event := range watchEvents(out) {
			require.NotContains(t, event, denied.cluster.String(), "the user saw the denied org's WorkspaceMount:\n%s", out)
		}
	})
}

// watchEvents parses kubectl get -w --output-watch-events -o json: a stream
// of events, as "TYPE name@cluster" and "TYPE name@cluster phase".
func watchEvents(out string) map[string]bool {
	events := map[string]bool{}
	decoder := json.NewDecoder(strings.NewReader(out))
	for {
		var event struct {
			Type   string                     `json:"type"`
			Object wsmv1alpha1.WorkspaceMount `json:"object"`
		}
		if err := decoder.Decode(&event); err != nil {
			// The end, or an event not written out completely yet.
			return events
		}
		key := event.Type + " " + event.Object.Name + "@" + event.Object.Annotations[logicalcluster.AnnotationKey]
		events[key] = true
		events[key+" "+event.Object.Status.Phase] = true
	}
}

// TestVirtualReadOnly tries every write with kubectl: each gets 405
// MethodNotAllowed and changes nothing.
func TestVirtualReadOnly(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "vwro")
	org.mountAll(t, []vwMount{
		{workspace: "target", labels: map[string]string{"env": "prod"}, object: "target-cluster", status: map[string]interface{}{"phase": "Connecting"}, want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}},
	})
	cluster := org.cluster.String()
	workspaceBefore, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "target", metav1.GetOptions{})
	require.NoError(t, err)

	created := `apiVersion: workspacemounts.io/v1alpha1
kind: WorkspaceMount
metadata:
  name: created
spec:
  mountRef: {apiVersion: contrib.kcp.io/v1alpha1, kind: KubeCluster, name: target-cluster}
status: {phase: Ready, ready: true, reason: MountReady}
`
	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			k := newKubectl(t, route, adminContext)
			before := k.ok(cluster, "get", "wsm", "target", "-o", "yaml")
			dir := t.TempDir()
			createdFile := filepath.Join(dir, "created.yaml")
			require.NoError(t, os.WriteFile(createdFile, []byte(created), 0o600))
			targetFile := filepath.Join(dir, "target.yaml")
			require.NoError(t, os.WriteFile(targetFile, []byte(before), 0o600))
			collection := vwPrefix + cluster + vwResourcePath

			for _, args := range [][]string{
				{"delete", "wsm", "target"},
				{"delete", "wsm", "--all"},
				{"delete", "-f", targetFile},
				{"patch", "wsm", "target", "--type=merge", "-p", `{"metadata":{"labels":{"patched":"true"}}}`},
				{"patch", "wsm", "target", "--type=json", "-p", `[{"op":"replace","path":"/status/phase","value":"Ready"}]`},
				{"annotate", "wsm", "target", "annotated=true"},
				{"label", "wsm", "target", "labelled=true"},
				{"label", "wsm", "--all", "labelled=true"},
				{"create", "-f", createdFile},
				{"replace", "-f", targetFile},
				{"apply", "--server-side", "-f", createdFile},
				{"create", "--raw", collection, "-f", createdFile},
				{"replace", "--raw", collection + "/target", "-f", targetFile},
				{"delete", "--raw", collection + "/target"},
			} {
				r := k.run(cluster, args...)
				require.Error(t, r.err, "%s", r)
				require.Regexp(t, `MethodNotAllowed|the server does not allow this method on the requested resource`, r.stderr, "%s", r)
				require.NotContains(t, r.stderr, "Forbidden", "%s", r)
			}

			// Every other method, raw, also on the collection, at * and on discovery.
			client := rawClient(t, route, adminContext)
			for _, target := range []string{cluster, "*"} {
				base := route.base + vwPrefix + target
				for _, req := range []struct{ method, path, body string }{
					{http.MethodPost, vwResourcePath, `{"apiVersion":"workspacemounts.io/v1alpha1","kind":"WorkspaceMount","metadata":{"name":"created"}}`},
					{http.MethodDelete, vwResourcePath, ""},
					{http.MethodPut, vwResourcePath + "/target", `{"apiVersion":"workspacemounts.io/v1alpha1","kind":"WorkspaceMount","metadata":{"name":"target"}}`},
					{http.MethodPatch, vwResourcePath + "/target", `{}`},
					{http.MethodDelete, vwResourcePath + "/target", ""},
					{http.MethodPost, "/apis", `{}`},
				} {
					resp := do(t, client, req.method, base+req.path, "", req.body)
					require.Equal(t, http.StatusMethodNotAllowed, resp.code, "%s %s: %s", req.method, base+req.path, resp.body)
					require.Contains(t, resp.body, `"reason":"MethodNotAllowed"`)
				}
			}

			// Nothing changed, here or on the Workspace.
			require.Equal(t, before, k.ok(cluster, "get", "wsm", "target", "-o", "yaml"))
			require.Equal(t, []string{"target"}, k.names(cluster, "get", "wsm"))
			workspaceAfter, err := c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "target", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, workspaceBefore.Labels, workspaceAfter.Labels)
			require.Equal(t, workspaceBefore.Annotations[mount.PhaseAnnotationKey], workspaceAfter.Annotations[mount.PhaseAnnotationKey])
			require.NotContains(t, workspaceAfter.Annotations, "annotated")
			_, err = c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "created", metav1.GetOptions{})
			require.True(t, apierrors.IsNotFound(err), "no Workspace was created: %v", err)
		})
	}
}

// TestVirtualUnauthenticated sends requests without credentials and with a
// bogus token: 401, whichever the path, before it is even resolved.
func TestVirtualUnauthenticated(t *testing.T) {
	t.Parallel()
	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			client := rawClient(t, route, "")
			for _, target := range []string{"root", "*", "root:does-not-exist"} {
				for _, path := range []string{vwResourcePath, vwResourcePath + "?watch=true", "/apis", "/openapi/v3"} {
					url := route.base + vwPrefix + target + path
					for _, token := range []string{"", "bogus-token"} {
						resp := do(t, client, http.MethodGet, url, token, "")
						require.Equal(t, http.StatusUnauthorized, resp.code, "GET %s with token %q: %s", url, token, resp.body)
					}
				}
				url := route.base + vwPrefix + target + vwResourcePath
				resp := do(t, client, http.MethodPost, url, "", `{}`)
				require.Equal(t, http.StatusUnauthorized, resp.code, "POST %s: %s", url, resp.body)
			}

			// kubectl with a bogus token, and with basic auth, which is not
			// served. (Without any credentials, kubectl asks for a username.)
			empty := filepath.Join(t.TempDir(), "empty.kubeconfig")
			require.NoError(t, os.WriteFile(empty, nil, 0o600))
			for _, credentials := range [][]string{{"--token", "bogus-token"}, {"--username", "user", "--password", "bogus"}} {
				args := append([]string{"--kubeconfig", empty, "--server", route.server("root"), "--insecure-skip-tls-verify", "--cache-dir", t.TempDir()}, credentials...)
				args = append(args, "get", "wsm", "-v=6")
				ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
				cmd := exec.CommandContext(ctx, "kubectl", args...)
				cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
				out, err := cmd.CombinedOutput()
				cancel()
				require.Error(t, err, "kubectl %v: %s", args, out)
				require.Contains(t, string(out), "error: You must be logged in to the server", "kubectl %v", args)
				require.Regexp(t, `GET https://\S+/services/workspacemounts/clusters/root/api\S* 401 Unauthorized`, string(out), "kubectl %v", args)
			}
		})
	}
}

// TestVirtualMalformedPaths sends requests with cluster segments no logical
// cluster can have (400), and of a workspace that does not exist (403, as
// for one the user may not see; discovery is served at any path), never
// 5xx, and the server keeps serving. Through kcp from v0.29.0 on, a path
// with an empty or ".." segment does not reach the plugin: kcp's proxy
// redirects it to its cleaned form (framework.RedirectsUncleanPaths), which
// is then asked too.
func TestVirtualMalformedPaths(t *testing.T) {
	t.Parallel()
	release, err := kcp.Release(t.Context())
	require.NoError(t, err)
	for _, route := range vwRoutes(t) {
		t.Run(route.name, func(t *testing.T) {
			t.Parallel()
			client := rawClient(t, route, adminContext)
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			redirects := route.name == "kcp" && release.AtLeast(framework.RedirectsUncleanPaths)
			t.Logf("kcp %s: its proxy redirects unclean paths: %t", release, redirects)
			for _, tc := range []struct {
				path string
				want int
				// cleaned is where kcp's proxy redirects an unclean path.
				cleaned string
			}{
				{"/services/workspacemounts/clusters/", http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters//apis", http.StatusBadRequest, "/services/workspacemounts/clusters/apis"},
				{"/services/workspacemounts/clusters/..", http.StatusBadRequest, "/services/workspacemounts"},
				{"/services/workspacemounts/clusters/../apis", http.StatusBadRequest, "/services/workspacemounts/apis"},
				{"/services/workspacemounts/clusters/%2e%2e/apis", http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters/%2E%2E" + vwResourcePath, http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters/Not_Valid/apis", http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters/root::x" + vwResourcePath, http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters/root:" + vwResourcePath, http.StatusBadRequest, ""},
				{"/services/workspacemounts/clusters/*:x" + vwResourcePath, http.StatusBadRequest, ""},
				// The segment is decoded before it is split: root:x, which does not exist.
				{"/services/workspacemounts/clusters/root%3Ax%2Fy" + vwResourcePath, http.StatusForbidden, ""},
				{"/services/workspacemounts/clusters", http.StatusNotFound, ""},
				{"/services/workspacemounts", http.StatusNotFound, ""},
				{"/services/workspacemounts/clusters/root:does-not-exist" + vwResourcePath, http.StatusForbidden, ""},
				{"/services/workspacemounts/clusters/root:does-not-exist/apis", http.StatusOK, ""},
				{"/services/workspacemounts/clusters/root:does-not-exist:deeper" + vwResourcePath + "/x", http.StatusForbidden, ""},
				{"/services/workspacemounts/clusters/x00001z" + vwResourcePath, http.StatusForbidden, ""},
			} {
				resp := do(t, client, http.MethodGet, route.base+tc.path, "", "")
				if redirects && tc.cleaned != "" {
					require.Equal(t, http.StatusTemporaryRedirect, resp.code, "GET %s through kcp %s: %s", tc.path, release, resp.body)
					require.Equal(t, tc.cleaned, resp.location, "GET %s through kcp %s", tc.path, release)
					resp = do(t, client, http.MethodGet, route.base+tc.cleaned, "", "")
					require.Less(t, resp.code, http.StatusInternalServerError, "GET %s (redirected from %s): %s", tc.cleaned, tc.path, resp.body)
					continue
				}
				require.Equal(t, tc.want, resp.code, "GET %s: %s", tc.path, resp.body)
			}

			// kubectl at a workspace path that does not exist.
			k := newKubectl(t, route, adminContext)
			r := k.run("root:does-not-exist", "get", "--raw", vwPrefix+"root:does-not-exist"+vwResourcePath)
			require.Error(t, r.err, "%s", r)
			require.Contains(t, r.stderr, "Forbidden", "%s", r)
			require.Contains(t, r.stderr, "root:does-not-exist", "%s", r)
			r = k.run("root:does-not-exist", "get", "wsm")
			require.Error(t, r.err, "%s", r)
			require.NotContains(t, r.stderr, "InternalError", "%s", r)

			// Still serving.
			require.Equal(t, http.StatusOK, do(t, client, http.MethodGet, route.base+vwPrefix+"root"+vwResourcePath, "", "").code)
		})
	}
}
