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

package deploy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// ---------------------------------------------------------------------------
// What the binary exports (the interface the files are written against),
// read from its registry.

// metricSpec lists a series' labels; a nil slice accepts any value, a
// non-nil one is the complete set of values.
type metricSpec map[string][]string

// closedLabels are the labels whose values the code enumerates: mount phases,
// queues, results, phase transitions, the work queues' names. exercise
// creates every value they take, so what the registry then holds is their
// complete set. Every other label (kind, the apiserver's) takes values from
// outside the code, and accepts any value.
var closedLabels = []string{"phase", "queue", "result", "from", "to", "name"}

// onDashboard tells whether a family is the plugin's own (and so belongs on
// the dashboard and in docs/metrics.md): its namespace, its work queues, and
// the two apiserver families the virtual workspace is watched by. The rest of
// what the registry holds (the apiserver's and client-go's internals, go_*,
// process_*) may be queried, but need not be shown.
func onDashboard(family string) bool {
	return strings.HasPrefix(family, "workspacemounts_") || strings.HasPrefix(family, "workqueue_") ||
		family == "apiserver_request_total" || family == "apiserver_request_duration_seconds"
}

// Series Prometheus adds for every target: not the plugin's.
var builtins = map[string]metricSpec{
	"up":                                    {},
	"scrape_duration_seconds":               {},
	"scrape_samples_scraped":                {},
	"scrape_samples_post_metric_relabeling": {},
	"scrape_series_added":                   {},
}

// Labels every series has once scraped (ServiceMonitor or kubernetes_sd).
var targetLabels = []string{"namespace", "job", "instance", "pod", "service", "endpoint", "container"}

// exercise creates, in this process's legacy registry (the one the plugin's
// /metrics serves), every series the plugin can export: its own metrics with
// every value of their closed labels, both work queues, the mount gauges over
// one mounted Workspace, the per-shard gauges of one shard of a sharded kcp,
// and one request of the virtual workspace. The registry, not a list copied
// from the code, is then the inventory.
func exercise() {
	metrics.Register()
	for _, queue := range []string{workspacemounts.MountsQueueName, workspacemounts.WorkspacesQueueName} {
		for _, result := range []string{metrics.ResultSuccess, metrics.ResultError, metrics.ResultRequeue} {
			metrics.ObserveReconcile(queue, result, time.Now())
		}
	}
	// None is the from of a Workspace's first status and the to of its
	// last; Other the from of a phase annotation the controller did not write.
	for _, from := range metrics.PhaseLabels {
		for _, to := range metrics.PhaseLabels {
			metrics.PhaseTransitions.WithLabelValues(from, to)
		}
	}
	metrics.StatusLatency.Observe(0)

	// The work queues' series exist from their creation on.
	for _, name := range []string{workspacemounts.MountsQueueName, workspacemounts.WorkspacesQueueName} {
		queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
		queue.Add("key")
		queue.ShutDown()
	}

	// A mounted Workspace the controller has not reached: every phase of the
	// kind (unresolved).
	store := cache.NewStore(kcpcache.MetaClusterNamespaceKeyFunc)
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "mounted", Annotations: map[string]string{logicalcluster.AnnotationKey: "inventory"}},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
			APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy",
		}}},
	}
	if err := store.Add(ws); err != nil {
		panic(err)
	}
	metrics.RegisterMountCollector(store, mount.Rule{})

	// A shard of a sharded kcp: its contact tracker's series, and whether it
	// is served (both from its runner's start to the Shard's deletion).
	kcpcontact.NewForShard("root")
	metrics.ShardSynced.WithLabelValues("root").Set(1)
	metrics.SetGateHeld("root", 0)

	apimetrics.Register()
	apimetrics.MonitorRequest(httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody),
		"LIST", "workspacemounts.io", "v1alpha1", "workspacemounts", "", "cluster", "apiserver", false, "", 200, 0, time.Millisecond)
}

func phaseNames() []string {
	names := make([]string, 0, len(mount.Phases))
	for _, phase := range mount.Phases {
		names = append(names, string(phase))
	}
	return names
}

// inventory is what the registry holds once exercised: every series name
// queries may use (histogram and summary families expanded with their
// suffixes, Prometheus' builtins added) with its labels, the family each
// belongs to, and the families by name.
type inventory struct {
	series   map[string]metricSpec
	family   map[string]string
	families map[string]*dto.MetricFamily
}

var exported = sync.OnceValues(func() (inventory, error) {
	exercise()
	gathered, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return inventory{}, err
	}
	inv := inventory{series: map[string]metricSpec{}, family: map[string]string{}, families: map[string]*dto.MetricFamily{}}
	for name, spec := range builtins {
		inv.series[name], inv.family[name] = spec, name
	}
	for _, f := range gathered {
		name := f.GetName()
		inv.families[name] = f
		spec := metricSpec{}
		for _, m := range f.GetMetric() {
			for _, pair := range m.GetLabel() {
				values := spec[pair.GetName()]
				if slices.Contains(closedLabels, pair.GetName()) && !slices.Contains(values, pair.GetValue()) {
					values = append(values, pair.GetValue())
				}
				spec[pair.GetName()] = values
			}
		}
		for label, values := range spec {
			if !slices.Contains(closedLabels, label) || values == nil {
				spec[label] = nil
			}
		}
		add := func(suffix string, extra ...string) {
			s := metricSpec{}
			for k, v := range spec {
				s[k] = v
			}
			for _, label := range extra {
				s[label] = nil
			}
			inv.series[name+suffix], inv.family[name+suffix] = s, name
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			add("_bucket", "le")
			add("_sum")
			add("_count")
		case dto.MetricType_SUMMARY:
			add("", "quantile")
			add("_sum")
			add("_count")
		default:
			add("")
		}
	}
	return inv, nil
})

func exportedT(t *testing.T) inventory {
	t.Helper()
	inv, err := exported()
	require.NoError(t, err, "gathering the legacy registry")
	return inv
}

// pluginFamilies are the exported families onDashboard says are the plugin's own.
func pluginFamilies(t *testing.T) []string {
	t.Helper()
	var names []string
	for name := range exportedT(t).families {
		if onDashboard(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TestInventory checks that exercise reached what the alerts and the
// dashboard are written against, so that a metric left out of it fails here
// rather than as "not exported" in a query.
func TestInventory(t *testing.T) {
	t.Parallel()
	inv := exportedT(t)
	require.ElementsMatch(t, phaseNames(), inv.series["workspacemounts_mounted_workspaces"]["phase"])
	require.ElementsMatch(t, []string{workspacemounts.MountsQueueName, workspacemounts.WorkspacesQueueName}, inv.series["workspacemounts_reconcile_total"]["queue"])
	require.ElementsMatch(t, []string{workspacemounts.MountsQueueName, workspacemounts.WorkspacesQueueName}, inv.series["workqueue_depth"]["name"])
	require.ElementsMatch(t, []string{metrics.PatchApplied, metrics.PatchConflict, metrics.PatchError}, inv.series["workspacemounts_workspace_status_patches_total"]["result"])
	require.Contains(t, inv.series["workspacemounts_ready_workspaces"], "kind")
	require.Contains(t, inv.series["apiserver_request_total"], "code")
	require.Contains(t, inv.series["workspacemounts_shard_last_contact_timestamp_seconds"], "shard")
	require.Contains(t, inv.series["workspacemounts_shard_synced"], "shard")
	require.Contains(t, inv.series["workspacemounts_gate_held_workspaces"], "shard")
	require.Contains(t, inv.series, "workqueue_queue_duration_seconds_bucket")
	for _, name := range pluginFamilies(t) {
		require.NotEmpty(t, inv.families[name].GetMetric(), "%s has no series", name)
	}
}

// ---------------------------------------------------------------------------
// PromQL, read by Prometheus's own parser.

var promqlParser = parser.NewParser(parser.Options{})

// grafanaDurations stand where PromQL wants a duration in the dashboard's
// queries; Grafana replaces them before Prometheus sees the query. The other
// variables ($job, $namespace) are inside label values, which is valid PromQL.
var grafanaDurations = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// selectors parses expr and returns its vector selectors, in order.
func selectors(expr string) ([]*parser.VectorSelector, error) {
	e, err := promqlParser.ParseExpr(grafanaDurations.Replace(expr))
	if err != nil {
		return nil, err
	}
	var out []*parser.VectorSelector
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out, nil
}

// reLiteral is a matcher value that is only alternatives (a|b|c): each must
// be a value of its own.
var reLiteral = regexp.MustCompile(`^[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*$`)

// checkExpr requires expr to parse and to select at least one series, only
// exported ones, with labels they have and values they can take. It returns
// the families the expression uses.
func checkExpr(t *testing.T, expr string) []string {
	t.Helper()
	inv := exportedT(t)
	require.NotEmpty(t, strings.TrimSpace(expr), "empty expression")
	vss, err := selectors(expr)
	require.NoError(t, err, "PromQL %q", expr)
	require.NotEmpty(t, vss, "no metric in %q", expr)
	families := make([]string, 0, len(vss))
	for _, vs := range vss {
		require.NotEmpty(t, vs.Name, "a selector without a metric name in %q", expr)
		spec, known := inv.series[vs.Name]
		require.True(t, known, "metric %q in %q is not one the plugin (or Prometheus) exports", vs.Name, expr)
		families = append(families, inv.family[vs.Name])
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel || slices.Contains(targetLabels, m.Name) {
				continue
			}
			values, ok := spec[m.Name]
			require.True(t, ok, "%s has no label %q (in %q)", vs.Name, m.Name, expr)
			if values == nil || strings.Contains(m.Value, "$") {
				continue
			}
			switch {
			case m.Type == labels.MatchEqual || m.Type == labels.MatchNotEqual || reLiteral.MatchString(m.Value):
				for _, v := range strings.Split(m.Value, "|") {
					require.Contains(t, values, v, "%s{%s}: no such value", vs.Name, m)
				}
			default:
				positive := *m
				positive.Type = labels.MatchRegexp
				require.True(t, slices.ContainsFunc(values, positive.Matches), "%s{%s} matches no value", vs.Name, m)
			}
		}
	}
	return families
}

func TestSelectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`absent(up{job="workspacemounts"})`, []string{"up"}},
		{
			`sum by (namespace, job) (rate(workqueue_adds_total{name=~"a-.*"}[5m])) and on (instance) (workspacemounts_leader == 1)`,
			[]string{"workqueue_adds_total", "workspacemounts_leader"},
		},
		{
			`histogram_quantile(0.99, sum by (queue, le) (rate(x_bucket{job="$job"}[$__rate_interval])))`,
			[]string{"x_bucket"},
		},
		{`1e3 * foo offset 5m > bool 2`, []string{"foo"}},
		{`sum without (pod) (a) / ignoring (x) group_left (y) b{c="{,}"}`, []string{"a", "b"}},
		{`sum(a) - (sum(b) or vector(0))`, []string{"a", "b"}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			vss, err := selectors(tc.expr)
			require.NoError(t, err)
			names := make([]string, 0, len(vss))
			for _, vs := range vss {
				names = append(names, vs.Name)
			}
			require.Equal(t, tc.want, names)
		})
	}
	_, err := selectors(`sum(rate(x[5m])`)
	require.Error(t, err, "an unbalanced parenthesis")
}
