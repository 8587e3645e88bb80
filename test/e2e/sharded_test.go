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
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/doctor"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// shard2 is the second shard of the sharded kcp.
	shard2 = "shard-2"
	// shardedReadyTimeout bounds the plugin's start until /readyz, every
	// shard's caches synced.
	shardedReadyTimeout = 2 * time.Minute
	// shardedStaleTimeout bounds how long after a shard stops its rows are
	// marked unreachable (after 30s without an answer) with a warning.
	shardedStaleTimeout = 90 * time.Second
	// shardedBackTimeout bounds how long after a shard is back its changes
	// reach the annotations and the virtual workspace: the plugin's
	// informers of that shard retry with client-go's reflector backoff,
	// which after a 30s outage waits [30s, 60s) (measured: 41s).
	shardedBackTimeout = 2 * time.Minute
	// shardedLogLines is how many lines of each process's log a failure quotes.
	shardedLogLines = 15

	shardContactMetric = "workspacemounts_shard_last_contact_timestamp_seconds"
	shardSyncedMetric  = "workspacemounts_shard_synced"

	// tableAccept asks for a Table, as kubectl get does.
	tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	// shardedTenant is the user granted access to one workspace on shard-2.
	shardedTenant = "user-1"
)

// shardedTunnels is a mount kind provided by an APIBinding.
var shardedTunnels = mountKind{gvr: schema.GroupVersionResource{Group: "tunnels.example.io", Version: framework.MountVersion, Resource: "tunnels"}, kind: "Tunnel"}

// shardedEnv is a sharded kcp and the one plugin serving all of it through
// the front-proxy's /services/workspacemounts mapping.
type shardedEnv struct {
	s      *framework.ShardedServer
	plugin *framework.Plugin
	// proxy reaches kcp through the front-proxy, by workspace path.
	proxy clients
	// admin is AdminUser's HTTP client at the front-proxy.
	admin *http.Client
	// elsewhere are paths of WorkspaceMounts a list as the admin may show
	// beside those it is checked for: a subtest of their own checks them.
	elsewhere map[string]bool
}

// startShardedEnv starts a sharded kcp with opts (and the plugin's
// mapping) and the plugin, and waits until the plugin is ready and has
// synced every shard.
func startShardedEnv(t *testing.T, opts framework.ShardedOptions) *shardedEnv {
	t.Helper()
	port, err := framework.FreePort(t.Context())
	require.NoError(t, err)
	opts.ServiceMappings = append(opts.ServiceMappings, framework.PluginServiceMapping(port))
	s := framework.StartShardedT(t, opts)

	dir := t.TempDir()
	pluginOpts := s.PluginOptions(port, dir)
	pluginOpts.Binary = opBinary(t)
	pluginOpts.Name = "workspacemounts"
	e := &shardedEnv{s: s, plugin: framework.StartPluginT(t, t, pluginOpts)}
	e.proxy = newClientsFor(t, s.FrontProxyConfig())
	e.admin, err = rest.HTTPClientFor(s.FrontProxyConfig())
	require.NoError(t, err)
	e.admin.Timeout = 30 * time.Second

	var exited error
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if exited = e.plugin.CheckRunning(); exited != nil {
			return true, ""
		}
		code, body, err := opGet(opHTTP, e.plugin.MetricsURL+"/readyz", "")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("/readyz: %d %v %s", code, err, excerpt(body))
		}
		return e.shardsSynced(t)
	}, shardedReadyTimeout, 500*time.Millisecond, "the plugin ready, every shard synced%s", e.logs())
	require.NoError(t, exited, "%s", e.logs())
	t.Logf("the plugin is ready after %s", time.Since(e.plugin.Started).Round(time.Millisecond))
	return e
}

// shardsSynced tells whether workspacemounts_shard_synced is 1 for every shard.
func (e *shardedEnv) shardsSynced(t *testing.T) (bool, string) {
	t.Helper()
	return shardsSyncedBy(t, e.s, e.plugin)
}

// shardsSyncedBy tells whether plugin's workspacemounts_shard_synced is 1
// for every shard of s.
func shardsSyncedBy(t *testing.T, s *framework.ShardedServer, plugin *framework.Plugin) (bool, string) {
	t.Helper()
	m, err := plugin.ScrapeMetrics(t.Context())
	if err != nil {
		return false, err.Error()
	}
	for _, shard := range s.Shards() {
		if v, found := m.Sum(shardSyncedMetric, map[string]string{"shard": shard.Name}); !found || v != 1 {
			return false, fmt.Sprintf("%s{shard=%q} is %v (found: %t)", shardSyncedMetric, shard.Name, v, found)
		}
	}
	return true, ""
}

// logs formats the log tails of the plugin and every kcp process for a
// failure message, read when the message is formatted.
func (e *shardedEnv) logs() framework.LogTails {
	tails := framework.LogTails{Lines: shardedLogLines, Servers: e.s.Processes()}
	if e.plugin != nil {
		tails.Plugins = []*framework.Plugin{e.plugin}
	}
	return tails
}

// on reaches one shard directly, where logical clusters go by name.
func (e *shardedEnv) on(t *testing.T, shard string) clients {
	t.Helper()
	return newClientsFor(t, e.s.AdminConfig(e.s.Shard(shard).BaseURL))
}

// shardedOrg is a workspace of the sharded kcp with mount kinds served in it.
type shardedOrg struct {
	path    logicalcluster.Path
	cluster logicalcluster.Name
	shard   string
}

// shardedMount is a mounted Workspace in an org, and its mount object.
type shardedMount struct {
	org    shardedOrg
	name   string
	kind   mountKind
	object string
	// status is the mount object's; nil: no object.
	status map[string]interface{}
	want   mountState
}

// path is the mounted Workspace's path, which the WorkspaceMount carries.
func (m shardedMount) path() string {
	return m.org.path.Join(m.name).String()
}

// create creates the mount object (unless status is nil) and the mounted
// Workspace, on the org's shard directly.
func (m shardedMount) create(t *testing.T, e *shardedEnv) {
	t.Helper()
	c := e.on(t, m.org.shard)
	cluster := m.org.cluster.Path()
	if m.status != nil {
		c.createMountObject(t, cluster, m.kind, m.object, m.status)
	}
	c.createMountedWorkspace(t, cluster, m.name, m.kind.ref(m.object))
}

// flip sets the mount object's status and what the Workspace must then show.
func (e *shardedEnv) flip(t *testing.T, m *shardedMount, status map[string]interface{}, want mountState) {
	t.Helper()
	e.on(t, m.org.shard).setMountStatus(t, m.org.cluster.Path(), m.kind, m.object, status)
	m.status, m.want = status, want
}

// waitAnnotated waits until the Workspace's annotations, read on its shard,
// show what m wants.
func (e *shardedEnv) waitAnnotated(t *testing.T, m shardedMount) {
	t.Helper()
	e.waitAnnotatedWithin(t, m, convergeTimeout)
}

// waitAnnotatedWithin is waitAnnotated with a timeout of its own.
func (e *shardedEnv) waitAnnotatedWithin(t *testing.T, m shardedMount, timeout time.Duration) {
	t.Helper()
	c := e.on(t, m.org.shard)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(m.org.cluster.Path()).TenancyV1alpha1().Workspaces().Get(context.Background(), m.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		status, found := mount.StatusOf(ws.Annotations)
		if !found {
			return false, "no readable " + mount.StatusAnnotationKey + " annotation yet"
		}
		if ws.Annotations[mount.PhaseAnnotationKey] != string(status.Phase) {
			return false, fmt.Sprintf("%s is %q, the status %s", mount.PhaseAnnotationKey, ws.Annotations[mount.PhaseAnnotationKey], status.Phase)
		}
		got := mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}
		return got == m.want, fmt.Sprintf("got %s (%s), want %s", got, status.Message, m.want)
	}, timeout, 200*time.Millisecond, "the annotations of %s on %s%s", m.path(), m.org.shard, e.logs())
}

// shardedItem is what the tests read of a WorkspaceMount, decoded without
// the Go type so that new fields need no import.
type shardedItem struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase         string `json:"phase"`
		Ready         bool   `json:"ready"`
		Reason        string `json:"reason"`
		WorkspacePath string `json:"workspacePath"`
		Shard         string `json:"shard"`
	} `json:"status"`
}

func (i shardedItem) String() string {
	return fmt.Sprintf("%s (cluster %s, path annotation %s) shard=%s phase=%s ready=%t reason=%s", i.Status.WorkspacePath,
		i.Metadata.Annotations[logicalcluster.AnnotationKey], i.Metadata.Annotations["kcp.io/path"], i.Status.Shard, i.Status.Phase, i.Status.Ready, i.Status.Reason)
}

// vwResponse is one answer of the virtual workspace.
type vwResponse struct {
	code     int
	body     string
	warnings []string
}

func (r vwResponse) String() string {
	return fmt.Sprintf("%d, warnings %q: %s", r.code, r.warnings, excerpt(r.body))
}

// get sends GET to the virtual workspace through the front-proxy for
// cluster (a name, a path or *), with query and accept.
func (e *shardedEnv) get(t *testing.T, client *http.Client, cluster, query, accept string) (vwResponse, error) {
	t.Helper()
	u := e.s.PluginServiceURL(cluster) + vwResourcePath
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return vwResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return vwResponse{code: resp.StatusCode, body: string(body), warnings: resp.Header.Values("Warning")}, err
}

// list lists WorkspaceMounts through the front-proxy; an error or a status
// other than 200 is returned as the reason.
func (e *shardedEnv) list(t *testing.T, client *http.Client, cluster, query string) ([]shardedItem, vwResponse, string) {
	t.Helper()
	r, err := e.get(t, client, cluster, query, "application/json")
	if err != nil {
		return nil, r, err.Error()
	}
	if r.code != http.StatusOK {
		return nil, r, r.String()
	}
	var list struct {
		Items []shardedItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil {
		return nil, r, fmt.Sprintf("decoding the list: %v: %s", err, excerpt(r.body))
	}
	return list.Items, r, ""
}

// check compares an item with what m wants: path, annotations, shard, state.
func (m shardedMount) check(item shardedItem) string {
	var wrong []string
	if item.Metadata.Name != m.name {
		wrong = append(wrong, "name "+item.Metadata.Name)
	}
	if got := item.Metadata.Annotations[logicalcluster.AnnotationKey]; got != m.org.cluster.String() {
		wrong = append(wrong, "cluster "+got)
	}
	if got := item.Metadata.Annotations["kcp.io/path"]; got != m.org.path.String() {
		wrong = append(wrong, "kcp.io/path "+got)
	}
	if item.Status.Shard != m.org.shard {
		wrong = append(wrong, "shard "+item.Status.Shard)
	}
	if item.Status.Phase != string(m.want.phase) || item.Status.Ready != m.want.ready || item.Status.Reason != m.want.reason {
		wrong = append(wrong, fmt.Sprintf("phase %s ready %t reason %s", item.Status.Phase, item.Status.Ready, item.Status.Reason))
	}
	if len(wrong) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s, want cluster %s, path %s, shard %s, %s", m.path(), strings.Join(wrong, ", "), m.org.cluster, m.org.path, m.org.shard, m.want)
}

// byPath indexes items by status.workspacePath.
func byPath(items []shardedItem) map[string]shardedItem {
	m := make(map[string]shardedItem, len(items))
	for _, item := range items {
		m[item.Status.WorkspacePath] = item
	}
	return m
}

// waitListed waits until a list at cluster, as client, has exactly want
// among the paths it could show (all: every item must be one of want).
func (e *shardedEnv) waitListed(t *testing.T, client *http.Client, cluster, query string, want []shardedMount, all bool) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		items, _, reason := e.list(t, client, cluster, query)
		if reason != "" {
			return false, reason
		}
		got := byPath(items)
		for _, m := range want {
			item, found := got[m.path()]
			if !found {
				return false, fmt.Sprintf("%s not listed in %v", m.path(), items)
			}
			if wrong := m.check(item); wrong != "" {
				return false, wrong
			}
		}
		if all {
			wanted := map[string]bool{}
			for _, m := range want {
				wanted[m.path()] = true
			}
			for _, item := range items {
				// Only the admin sees those, of course.
				if !wanted[item.Status.WorkspacePath] && (client != e.admin || !e.elsewhere[item.Status.WorkspacePath]) {
					return false, fmt.Sprintf("%s listed, want only %d: %v", item.Status.WorkspacePath, len(want), items)
				}
			}
		}
		return true, ""
	}, vwConvergeTimeout, 200*time.Millisecond, "listing %s?%s%s", cluster, query, e.logs())
}

// shardedTable is a Table of WorkspaceMounts: column names (lower case)
// with their priority, and rows by WORKSPACE.
type shardedTable struct {
	priority map[string]int64
	rows     map[string]map[string]string
	warnings []string
}

// table gets the Table at cluster as the admin.
func (e *shardedEnv) table(t *testing.T, cluster string) (shardedTable, string) {
	t.Helper()
	r, err := e.get(t, e.admin, cluster, "", tableAccept)
	if err != nil {
		return shardedTable{}, err.Error()
	}
	if r.code != http.StatusOK {
		return shardedTable{}, r.String()
	}
	var table metav1.Table
	if err := json.Unmarshal([]byte(r.body), &table); err != nil {
		return shardedTable{}, fmt.Sprintf("decoding the Table: %v: %s", err, excerpt(r.body))
	}
	out := shardedTable{priority: map[string]int64{}, rows: map[string]map[string]string{}, warnings: r.warnings}
	for _, c := range table.ColumnDefinitions {
		out.priority[strings.ToLower(c.Name)] = int64(c.Priority)
	}
	for _, row := range table.Rows {
		cells := map[string]string{}
		for i, c := range table.ColumnDefinitions {
			if i < len(row.Cells) && row.Cells[i] != nil {
				cells[strings.ToLower(c.Name)] = fmt.Sprint(row.Cells[i])
			}
		}
		out.rows[cells["workspace"]] = cells
	}
	return out, ""
}

// contact is the plugin's workspacemounts_shard_last_contact_timestamp_seconds of shard.
func (e *shardedEnv) contact(t *testing.T, shard string) (time.Time, string) {
	t.Helper()
	m, err := e.plugin.ScrapeMetrics(t.Context())
	if err != nil {
		return time.Time{}, err.Error()
	}
	v, found := m.Sum(shardContactMetric, map[string]string{"shard": shard})
	if !found {
		return time.Time{}, fmt.Sprintf("no %s{shard=%q}", shardContactMetric, shard)
	}
	return unixTime(v), ""
}

// mustContact is contact that fails the test without the metric.
func (e *shardedEnv) mustContact(t *testing.T, shard string) time.Time {
	t.Helper()
	at, reason := e.contact(t, shard)
	require.Empty(t, reason, "%s", e.logs())
	return at
}

// warnsAbout tells whether one of the warnings names shard.
func warnsAbout(warnings []string, shard string) bool {
	return slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, shard) })
}

// shardedScenario is what TestSharded makes in the sharded kcp: orgs on
// either shard, the Tunnel export on shard-2, root:<parent> (root shard) >
// team (shard-2), and mounted Workspaces of both kinds in them.
type shardedScenario struct {
	e                                          *shardedEnv
	orgRoot, orgShard2, provider, parent, team shardedOrg
	mounts                                     []*shardedMount
	// rootFlip and shard2Flip are the mounts flipped on each shard.
	rootFlip, shard2Flip *shardedMount
	// crossShard mounts a Tunnel on the root shard, bound from the export
	// on shard-2; it is not one of mounts, so that its subtest alone fails
	// when it does not converge.
	crossShard *shardedMount
}

// newShardedScenario makes the workspaces, serves the kinds in them
// before any Workspace names them (kcp v0.28.1 crashes otherwise:
// KubeCluster from a CRD on both shards, Tunnel bound on shard-2 from an
// export there and on the root shard across shards), then creates the
// mount objects and the mounted Workspaces.
func newShardedScenario(t *testing.T, e *shardedEnv) *shardedScenario {
	t.Helper()
	sc := &shardedScenario{e: e}
	cfg := e.s.FrontProxyConfig()
	t.Run("workspaces", func(t *testing.T) {
		for _, w := range []struct {
			org    *shardedOrg
			prefix string
			shard  string
		}{
			{&sc.orgRoot, "wsm-root", framework.RootShard},
			{&sc.orgShard2, "wsm-s2", shard2},
			{&sc.provider, "wsm-provider", shard2},
			{&sc.parent, "wsm-parent", framework.RootShard},
		} {
			t.Run(w.prefix, func(t *testing.T) {
				t.Parallel()
				name := framework.UniqueName(w.prefix)
				cluster, _ := e.s.CreateWorkspaceOnShard(t, framework.RootPath, name, w.shard)
				*w.org = shardedOrg{path: framework.RootPath.Join(name), cluster: cluster, shard: w.shard}
			})
		}
	})
	require.False(t, t.Failed(), "the workspaces%s", e.logs())
	teamCluster, _ := e.s.CreateWorkspaceOnShard(t, sc.parent.path, "team", shard2)
	sc.team = shardedOrg{path: sc.parent.path.Join("team"), cluster: teamCluster, shard: shard2}
	t.Logf("workspaces: %s (%s) on root, %s (%s) and the provider %s on %s, %s on root > %s (%s) on %s",
		sc.orgRoot.path, sc.orgRoot.cluster, sc.orgShard2.path, sc.orgShard2.cluster, sc.provider.path, shard2, sc.parent.path, sc.team.path, sc.team.cluster, shard2)

	kubeClusterCRD := framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped)
	t.Run("kinds", func(t *testing.T) {
		for _, org := range []shardedOrg{sc.orgRoot, sc.team} {
			t.Run("crd "+org.path.String(), func(t *testing.T) {
				t.Parallel()
				framework.InstallCRD(t, cfg, org.path, kubeClusterCRD.DeepCopy())
			})
		}
		t.Run("apibinding", func(t *testing.T) {
			t.Parallel()
			framework.ExportAndBind(t, cfg, sc.provider.path, sc.orgShard2.path, shardedTunnels.gvr.Group, shardedTunnels.kind, shardedTunnels.gvr.Resource)
			framework.BindExport(t, cfg, sc.provider.path, sc.orgRoot.path, shardedTunnels.gvr.Group, shardedTunnels.gvr.Resource)
		})
	})
	require.False(t, t.Failed(), "the mount kinds%s", e.logs())

	connecting := mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}
	ready := func(org shardedOrg) (map[string]interface{}, mountState) {
		return map[string]interface{}{"phase": "Ready", "URL": sc.readyURL(org)}, sc.ready(org)
	}
	mk := func(org shardedOrg, name string, kind mountKind, status map[string]interface{}, want mountState) *shardedMount {
		return &shardedMount{org: org, name: name, kind: kind, object: name, status: status, want: want}
	}
	rReady, rReadyWant := ready(sc.orgRoot)
	sReady, sReadyWant := ready(sc.orgShard2)
	tReady, tReadyWant := ready(sc.team)
	sc.mounts = []*shardedMount{
		mk(sc.orgRoot, "r-ready", kubeClusters, rReady, rReadyWant),
		mk(sc.orgRoot, "r-flip", kubeClusters, map[string]interface{}{"phase": "Connecting"}, connecting),
		mk(sc.orgShard2, "s-tunnel", shardedTunnels, sReady, sReadyWant),
		mk(sc.orgShard2, "s-missing", shardedTunnels, nil, mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}),
		mk(sc.team, "t-flip", kubeClusters, map[string]interface{}{"phase": "Connecting"}, connecting),
		mk(sc.team, "t-ready", kubeClusters, tReady, tReadyWant),
	}
	sc.rootFlip, sc.shard2Flip = sc.mounts[1], sc.mounts[4]
	sc.crossShard = mk(sc.orgRoot, "r-tunnel", shardedTunnels, map[string]interface{}{"phase": "Connecting"}, connecting)
	e.elsewhere = map[string]bool{sc.crossShard.path(): true}
	for _, m := range append(sc.mounts, sc.crossShard) {
		m.create(t, e)
	}
	return sc
}

// readyURL is the URL of a Ready mount in org.
func (sc *shardedScenario) readyURL(org shardedOrg) string {
	return sc.e.s.FrontProxyURL + "/clusters/" + org.path.String()
}

// ready is what a Ready mount in org shows.
func (sc *shardedScenario) ready(org shardedOrg) mountState {
	return mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: sc.readyURL(org)}
}

// all returns every mount as it is now.
func (sc *shardedScenario) all() []shardedMount {
	out := make([]shardedMount, 0, len(sc.mounts))
	for _, m := range sc.mounts {
		out = append(out, *m)
	}
	return out
}

// in returns the mounts in org as they are now.
func (sc *shardedScenario) in(org shardedOrg) []shardedMount {
	var out []shardedMount
	for _, m := range sc.mounts {
		if m.org == org {
			out = append(out, *m)
		}
	}
	return out
}

// TestSharded runs one plugin against a real two-shard kcp (the root shard
// and shard-2, a cache server and kcp's front-proxy, all processes) and
// reads it through the front-proxy's one /services/workspacemounts mapping:
// mount kinds from CRDs and APIBindings (one bound across shards) on both
// shards, a parent Workspace on the root shard whose child cluster is on
// shard-2 with mounted Workspaces in it, the annotations converging on both
// shards; `*` with every shard's WorkspaceMounts, their paths and shards,
// paths resolved on either shard, field selectors, a tenant who may see one
// workspace on shard-2, the Table's WORKSPACE and SHARD columns, a watch
// at `*` seeing flips on both shards; then shard-2 stopped (the root shard
// converging, its rows marked unreachable, a warning, its last-contact
// gauge standing still) and started again (converging, the warning gone:
// slow, framework.SlowEnv). One sharded kcp and one plugin serve every step.
//
//nolint:paralleltest // alone: a sharded kcp of its own, one scenario step by step
func TestSharded(t *testing.T) {
	began := time.Now()
	e := startShardedEnv(t, framework.ShardedOptions{})
	cfg := e.s.FrontProxyConfig()
	t.Logf("sharded kcp and plugin ready after %s", time.Since(began).Round(time.Millisecond))
	// TestKCPOperatorArguments' sharded case shares this kcp; its plugin
	// starts now, so that its start-up overlaps the steps before its own.
	operatorPlugin := startKCPOperatorShardedPlugin(t, e)

	sc := newShardedScenario(t, e)
	orgRoot, orgShard2, parent, team := sc.orgRoot, sc.orgShard2, sc.parent, sc.team
	mounts, all, in := sc.mounts, sc.all, sc.in
	rootFlip, shard2Flip := sc.rootFlip, sc.shard2Flip
	readyURL, ready, initializing := sc.readyURL, sc.ready, mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady}
	t.Logf("workspaces, kinds and mounts made after %s", time.Since(began).Round(time.Second))

	t.Run("annotations converge on both shards", func(t *testing.T) {
		for _, m := range mounts {
			e.waitAnnotated(t, *m)
		}
		t.Logf("every annotation written after %s", time.Since(began).Round(time.Second))
	})

	// kcp serves a kind bound across shards (the APIResourceSchema is in
	// the export's cluster, on the other shard; kcp's shards read it from
	// the cache server).
	t.Run("an APIBinding across shards", func(t *testing.T) {
		e.waitAnnotated(t, *sc.crossShard)
		e.waitListed(t, e.admin, "*", "", []shardedMount{*sc.crossShard}, false)
	})

	t.Run("star lists both shards", func(t *testing.T) {
		e.waitListed(t, e.admin, "*", "", all(), false)
		// Field selectors on the shard and the path.
		e.waitListed(t, e.admin, "*", "fieldSelector="+url.QueryEscape("status.shard="+shard2), append(in(orgShard2), in(team)...), true)
		e.waitListed(t, e.admin, "*", "fieldSelector="+url.QueryEscape("status.workspacePath="+shard2Flip.path()), []shardedMount{*shard2Flip}, true)
	})

	t.Run("paths and names resolve on either shard", func(t *testing.T) {
		for _, org := range []shardedOrg{orgRoot, orgShard2, team} {
			e.waitListed(t, e.admin, org.path.String(), "", in(org), true)
			e.waitListed(t, e.admin, org.cluster.String(), "", in(org), true)
		}
		// One object by name, at a path whose parent is on the other shard.
		u := e.s.PluginServiceURL(team.path.String()) + vwResourcePath + "/" + shard2Flip.name
		code, body, err := opGet(e.admin, u, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		var item shardedItem
		require.NoError(t, json.Unmarshal([]byte(body), &item))
		require.Empty(t, shard2Flip.check(item), "%s", body)
		// The parent has no mounted Workspace: an empty list, not a 403.
		e.waitListed(t, e.admin, parent.path.String(), "", nil, true)
	})

	t.Run("a tenant sees one workspace on shard-2", func(t *testing.T) {
		grantWorkspaceReaderWith(t, cfg, team.path, shardedTenant)
		userCfg, err := e.s.UserConfig(shardedTenant)
		require.NoError(t, err)
		// kcp itself lets the tenant in first, so that the plugin caches no
		// early denial.
		kcpUser := newClientsFor(t, userCfg)
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			_, err := kcpUser.kcp.Cluster(team.path).TenancyV1alpha1().Workspaces().List(t.Context(), metav1.ListOptions{})
			return err == nil, fmt.Sprintf("%v", err)
		}, vwConvergeTimeout, 200*time.Millisecond, "kcp lets %s list Workspaces in %s", shardedTenant, team.path)
		user, err := rest.HTTPClientFor(userCfg)
		require.NoError(t, err)
		user.Timeout = 30 * time.Second

		e.waitListed(t, user, team.path.String(), "", in(team), true)
		e.waitListed(t, user, team.cluster.String(), "", in(team), true)
		e.waitListed(t, user, "*", "", in(team), true)
		for _, cluster := range []string{orgShard2.path.String(), orgShard2.cluster.String(), orgRoot.path.String(), orgRoot.cluster.String(), parent.path.String()} {
			r, err := e.get(t, user, cluster, "", "application/json")
			require.NoError(t, err)
			require.Equal(t, http.StatusForbidden, r.code, "%s as %s: %s", cluster, shardedTenant, r)
		}
		// Nothing through the single object of another workspace either.
		code, body, err := opGet(user, e.s.PluginServiceURL(orgShard2.path.String())+vwResourcePath+"/s-tunnel", "")
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, code, body)
	})

	t.Run("kcp-operator's arguments, --all-shards", func(t *testing.T) {
		testKCPOperatorArgumentsSharded(t, e, sc, operatorPlugin)
	})

	t.Run("table columns", func(t *testing.T) {
		var table shardedTable
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			var reason string
			table, reason = e.table(t, "*")
			if reason != "" {
				return false, reason
			}
			for _, m := range all() {
				row, found := table.rows[m.path()]
				if !found {
					return false, fmt.Sprintf("no row with WORKSPACE %s in %v", m.path(), table.rows)
				}
				if row["shard"] != m.org.shard || row["name"] != m.name || row["cluster"] != m.org.cluster.String() {
					return false, fmt.Sprintf("row %v, want name %s, cluster %s, shard %s", row, m.name, m.org.cluster, m.org.shard)
				}
			}
			return true, ""
		}, vwConvergeTimeout, 200*time.Millisecond, "the Table at *%s", e.logs())
		require.Contains(t, table.priority, "workspace")
		require.Zero(t, table.priority["workspace"], "WORKSPACE is a default column")
		require.Contains(t, table.priority, "shard")
		require.Positive(t, table.priority["shard"], "SHARD is a column of -o wide")
		require.Empty(t, table.warnings, "every shard answers")

		// kubectl prints them so.
		k := newKubectl(t, vwRoute{name: "front-proxy", base: e.s.FrontProxyURL, kubeconfig: e.s.AdminKubeconfigPath}, adminContext)
		out := k.ok("*", "get", "wsm")
		require.Contains(t, header(out), "WORKSPACE")
		require.NotContains(t, header(out), "SHARD")
		out = k.ok("*", "get", "wsm", "-o", "wide")
		require.Contains(t, header(out), "SHARD")
		rows := map[string]map[string]string{}
		for _, row := range tableRows(t, out) {
			rows[row["WORKSPACE"]] = row
		}
		for _, m := range all() {
			require.Equal(t, m.org.shard, rows[m.path()]["SHARD"], "%s in\n%s", m.path(), out)
		}
	})

	t.Run("a watch at star sees flips on both shards", func(t *testing.T) {
		k := newKubectl(t, vwRoute{name: "front-proxy", base: e.s.FrontProxyURL, kubeconfig: e.s.AdminKubeconfigPath}, adminContext)
		watch := k.start("*", "get", "wsm", "-w", "--output-watch-events", "-o", "json")
		key := func(m *shardedMount) string { return m.name + "@" + m.org.cluster.String() }
		watch.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
			events := watchEvents(out)
			return events["ADDED "+key(rootFlip)] && events["ADDED "+key(shard2Flip)], fmt.Sprintf("events %v", events)
		})
		e.flip(t, rootFlip, map[string]interface{}{"phase": "Initializing"}, initializing)
		e.flip(t, shard2Flip, map[string]interface{}{"phase": "Initializing"}, initializing)
		watch.waitFor(t, vwConvergeTimeout, func(out string) (bool, string) {
			events := watchEvents(out)
			return events["MODIFIED "+key(rootFlip)+" Initializing"] && events["MODIFIED "+key(shard2Flip)+" Initializing"], fmt.Sprintf("events %v", events)
		})
		e.waitAnnotated(t, *rootFlip)
		e.waitAnnotated(t, *shard2Flip)
	})
	// workspacemounts doctor on a sharded kcp behind a real kcp-front-proxy
	// v0.28.1, which passes client-sent X-Remote-* on, and a plugin that
	// believes them: every shard's rows, the mapping reaching the plugin,
	// and the front-proxy told by behaviour (TestDoctor has the rest).
	t.Run("doctor names the old front-proxy, shard by shard", func(t *testing.T) {
		run := runDoctor(t, "--root-kubeconfig", e.s.RootKubeconfigPath, "--shards-kubeconfig", e.s.ShardsKubeconfigPath,
			"--front-proxy-url", e.s.FrontProxyURL, "--token", e.s.PKI.Tokens[framework.AdminUser],
			"--virtual-workspace-url", e.plugin.VirtualWorkspaceURL)
		require.Equal(t, 1, run.code, run.stdout)
		for _, shard := range []string{"root", shard2} {
			run.requireStatus(t, doctor.CheckKCPVersion+" (shard "+shard+")", doctor.OK, "kcp v0.28.1")
			run.requireStatus(t, doctor.CheckMountsRelease+" (shard "+shard+")", doctor.OK)
			run.requireStatus(t, doctor.CheckMountURLContract+" (shard "+shard+")", doctor.OK, "(the legacy form)")
			run.requireStatus(t, doctor.CheckGate+" (shard "+shard+")", doctor.OK, "is off")
		}
		run.requireStatus(t, doctor.CheckLease, doctor.OK, "believes request headers: true")
		run.requireStatus(t, doctor.CheckMapping, doctor.OK, "WorkspaceMountList")
		run.requireStatus(t, doctor.CheckIdentityHeaders, doctor.Fail, "kcp believed the X-Remote-User or X-Remote-Group", "GHSA-c8w2-fgvx-vhv4")
		// The test PKI's certificates live a day: under doctor's 30.
		run.requireStatus(t, doctor.CheckServingCertificate, doctor.Warn, "expiring in")
	})
	require.NoError(t, e.plugin.CheckRunning())

	shard := e.s.Shard(shard2)
	t.Run("shard-2 stopped", func(t *testing.T) {
		at, reason := e.contact(t, shard2)
		require.Empty(t, reason, "%s", e.logs())
		require.WithinDuration(t, time.Now(), at, 30*time.Second, "%s while shard-2 answers", shardContactMetric)

		require.NoError(t, shard.StopProcess())
		stopped := time.Now()
		t.Logf("shard-2 stopped")

		// The root shard's mounts keep converging.
		e.flip(t, rootFlip, map[string]interface{}{"phase": "Ready", "URL": readyURL(orgRoot)}, ready(orgRoot))
		e.waitAnnotated(t, *rootFlip)
		t.Logf("a flip on the root shard written %s after shard-2 stopped", time.Since(stopped).Round(time.Millisecond))

		// The virtual workspace answers: shard-2's rows as last known and
		// marked, a warning naming the shard, the root shard's flip.
		var table shardedTable
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			var reason string
			table, reason = e.table(t, "*")
			if reason != "" {
				return false, reason
			}
			if !warnsAbout(table.warnings, shard2) {
				return false, fmt.Sprintf("warnings %q", table.warnings)
			}
			for _, m := range all() {
				row, found := table.rows[m.path()]
				if !found {
					return false, fmt.Sprintf("no row with WORKSPACE %s in %v", m.path(), table.rows)
				}
				if m.org.shard == shard2 && !strings.HasPrefix(row["shard"], shard2+" (unreachable") {
					return false, fmt.Sprintf("%s: SHARD %q", m.path(), row["shard"])
				}
				if m.org.shard == framework.RootShard && row["shard"] != framework.RootShard {
					return false, fmt.Sprintf("%s: SHARD %q", m.path(), row["shard"])
				}
				if row["phase"] != string(m.want.phase) {
					return false, fmt.Sprintf("%s: PHASE %q, want %s", m.path(), row["phase"], m.want.phase)
				}
			}
			return true, ""
		}, shardedStaleTimeout, time.Second, "shard-2's rows marked unreachable at *%s", e.logs())
		t.Logf("shard-2 marked unreachable %s after it stopped: warnings %q", time.Since(stopped).Round(time.Second), table.warnings)

		// Its last-contact gauge stopped when it did; the root shard's moves.
		last := e.mustContact(t, shard2)
		require.False(t, last.After(stopped), "%s{shard=%q} is %s, after shard-2 stopped at %s", shardContactMetric, shard2, last, stopped)
		require.WithinDuration(t, time.Now(), e.mustContact(t, framework.RootShard), 30*time.Second, "%s{shard=root}", shardContactMetric)

		// Paths on the root shard still resolve; kubectl shows the warning
		// and the mark.
		e.waitListed(t, e.admin, orgRoot.path.String(), "", in(orgRoot), true)
		k := newKubectl(t, vwRoute{name: "front-proxy", base: e.s.FrontProxyURL, kubeconfig: e.s.AdminKubeconfigPath}, adminContext)
		r := k.run("*", "get", "wsm", "-o", "wide")
		require.NoError(t, r.err, "%s", r)
		require.Contains(t, r.stderr, "Warning: ", "%s", r)
		require.Contains(t, r.stderr, shard2, "%s", r)
		require.Contains(t, r.stdout, shard2+" (unreachable", "%s", r)

		require.Equal(t, last, e.mustContact(t, shard2), "%s{shard=%q} moved while shard-2 was stopped", shardContactMetric, shard2)
		require.NoError(t, e.plugin.CheckRunning(), "%s", e.logs())
	})

	// The plugin's return to shard-2 waits out client-go's reflector
	// backoff (about 40 s): slow (make test-sharded). Otherwise shard-2 is
	// only started again, for the cleanup of both shards.
	if !framework.Slow() {
		if err := shard.CheckRunning(); err != nil {
			require.NoError(t, shard.StartAgain(t.Context()), "%s", e.logs())
		}
		t.Logf("shard-2 started again; set %s=1 (make test-sharded) for the plugin's return to it", framework.SlowEnv)
	}
	t.Run("shard-2 back", func(t *testing.T) {
		framework.SkipUnlessSlow(t, "make test-sharded")
		if err := shard.CheckRunning(); err == nil {
			t.Log("shard-2 still running")
		} else {
			require.NoError(t, shard.StartAgain(t.Context()), "%s", e.logs())
		}
		back := time.Now()
		t.Logf("shard-2 ready again after %s", shard.ReadyAfter.Round(time.Millisecond))

		// The mount object is served again before it is flipped.
		shard2Client := e.on(t, shard2)
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			_, err := shard2Client.dynamic.Cluster(team.cluster.Path()).Resource(kubeClusters.gvr).Get(t.Context(), shard2Flip.object, metav1.GetOptions{})
			return err == nil, fmt.Sprintf("%v", err)
		}, vwConvergeTimeout, 200*time.Millisecond, "%s %s on shard-2 after its restart", kubeClusters.kind, shard2Flip.object)
		e.flip(t, shard2Flip, map[string]interface{}{"phase": "Ready", "URL": readyURL(team)}, ready(team))
		e.waitAnnotatedWithin(t, *shard2Flip, shardedBackTimeout)
		t.Logf("a flip on shard-2 written %s after its restart", time.Since(back).Round(time.Millisecond))

		kcptestinghelpers.Eventually(t, func() (bool, string) {
			table, reason := e.table(t, "*")
			if reason != "" {
				return false, reason
			}
			if len(table.warnings) > 0 {
				return false, fmt.Sprintf("warnings %q", table.warnings)
			}
			for _, m := range all() {
				row := table.rows[m.path()]
				if row["shard"] != m.org.shard || row["phase"] != string(m.want.phase) {
					return false, fmt.Sprintf("%s: %v, want shard %s, phase %s", m.path(), row, m.org.shard, m.want.phase)
				}
			}
			return true, ""
		}, shardedBackTimeout, time.Second, "shard-2 served again, without a warning%s", e.logs())
		e.waitListed(t, e.admin, "*", "", all(), false)
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			at, reason := e.contact(t, shard2)
			if reason != "" {
				return false, reason
			}
			return !at.Before(back.Add(-time.Second)), fmt.Sprintf("%s{shard=%q} is %s, before shard-2 was back at %s", shardContactMetric, shard2, at, back)
		}, vwConvergeTimeout, 500*time.Millisecond, "the last-contact gauge of shard-2 moves again%s", e.logs())
		require.NoError(t, e.plugin.CheckRunning(), "%s", e.logs())
		t.Logf("back and converged %s after the restart", time.Since(back).Round(time.Second))
	})

	// The plugin stopped, one cleanup with the plugin's own kubeconfigs
	// clears every shard.
	t.Run("cleanup of both shards", func(t *testing.T) {
		require.NoError(t, e.plugin.Stop())
		kubeconfigs := []string{"--root-kubeconfig", e.s.RootKubeconfigPath, "--shards-kubeconfig", e.s.ShardsKubeconfigPath}
		var out string
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			var err error
			out, err = runCleanupCommand(t, append(kubeconfigs, "--yes")...)
			return err == nil, fmt.Sprintf("%v: %s", err, out)
		}, time.Minute, time.Second, "cleanup, once the stopped plugin's Lease is released or expired")
		require.Contains(t, out, "on 2 shards", out)
		for _, m := range all() {
			require.Contains(t, out, m.org.cluster.String()+"|"+m.name+"  ", "cleanup names %s", m.path())
			ws, err := e.on(t, m.org.shard).kcp.Cluster(m.org.cluster.Path()).TenancyV1alpha1().Workspaces().Get(t.Context(), m.name, metav1.GetOptions{})
			require.NoError(t, err)
			require.NotContains(t, ws.Annotations, mount.PhaseAnnotationKey, m.path())
			require.NotContains(t, ws.Annotations, mount.StatusAnnotationKey, m.path())
		}
		out, err := runCleanupCommand(t, append(kubeconfigs, "--yes")...)
		require.NoError(t, err, out)
		require.Contains(t, out, "0 Workspaces changed on 2 shards", "nothing left on either shard")
	})
	t.Logf("TestSharded took %s", time.Since(began).Round(time.Second))
}

// TestShardedAddShard starts the plugin on a sharded kcp of the root shard
// alone, then adds shard-3: the plugin picks it up (synced), and a mounted
// Workspace there gets its annotations and is listed at `*` with its
// shard. Opt-in (WORKSPACEMOUNTS_E2E_ADD_SHARD=1, make test-sharded): it
// starts another sharded kcp.
//
//nolint:paralleltest // alone, as TestSharded
func TestShardedAddShard(t *testing.T) {
	if os.Getenv("WORKSPACEMOUNTS_E2E_ADD_SHARD") == "" {
		t.Skip("set WORKSPACEMOUNTS_E2E_ADD_SHARD=1 (make test-sharded) to run it")
	}
	began := time.Now()
	e := startShardedEnv(t, framework.ShardedOptions{Shards: []string{}})
	cfg := e.s.FrontProxyConfig()

	added := time.Now()
	_, err := e.s.AddShard(t.Context(), "shard-3")
	require.NoError(t, err, "%s", e.logs())
	t.Logf("shard-3 added in %s", time.Since(added).Round(time.Millisecond))
	kcptestinghelpers.Eventually(t, func() (bool, string) { return e.shardsSynced(t) },
		shardedReadyTimeout, 500*time.Millisecond, "the plugin syncs shard-3%s", e.logs())
	t.Logf("the plugin synced shard-3 %s after it was added", time.Since(added).Round(time.Millisecond))

	name := framework.UniqueName("wsm-s3")
	cluster, _ := e.s.CreateWorkspaceOnShard(t, framework.RootPath, name, "shard-3")
	org := shardedOrg{path: framework.RootPath.Join(name), cluster: cluster, shard: "shard-3"}
	framework.InstallCRD(t, cfg, org.path, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	m := &shardedMount{org: org, name: "on-shard-3", kind: kubeClusters, object: "on-shard-3", status: map[string]interface{}{"phase": "Connecting"},
		want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}}
	m.create(t, e)
	e.waitAnnotated(t, *m)
	e.waitListed(t, e.admin, "*", "", []shardedMount{*m}, true)
	e.waitListed(t, e.admin, org.path.String(), "", []shardedMount{*m}, true)

	e.flip(t, m, map[string]interface{}{"phase": "Initializing"}, mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
	e.waitAnnotated(t, *m)
	e.waitListed(t, e.admin, "*", "", []shardedMount{*m}, true)
	require.NoError(t, e.plugin.CheckRunning(), "%s", e.logs())
	t.Logf("TestShardedAddShard took %s", time.Since(began).Round(time.Second))
}
