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
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// promAlertsFile is the plain rule file of deploy/monitoring, from the repository root.
	promAlertsFile = "deploy/monitoring/workspacemounts-alerts.yaml"
	// promFor replaces every rule's `for:` (2 to 15 minutes) in the copy
	// the test loads, so that an alert fires within seconds.
	promFor = "4s"
	// promTimeout bounds each wait for Prometheus to see a change: a scrape
	// and an evaluation every second, the plugin's own reaction, promFor.
	promTimeout = 30 * time.Second
	// promNotReady is the alert a mount that is not ready raises.
	promNotReady = "WorkspaceMountsNotReady"
)

// TestPrometheus runs a real Prometheus (bin/prometheus, from hack/prometheus)
// against the plugin of a kcp of the test's own, with the alert rules of
// deploy/monitoring loaded and their `for:` shortened to promFor: the
// readiness gauges follow a mount that flips from Ready to Connecting and
// back, and WorkspaceMountsNotReady goes pending, then firing, while it is
// not ready, and away once it is again.
func TestPrometheus(t *testing.T) {
	t.Parallel()
	began := time.Now()
	dir := t.TempDir()
	ctx := context.Background()

	server, c, cluster, ready := ownKCPWithProxy(t, "prometheus")
	c.createMountedWorkspace(t, cluster, "mounted", kubeClusters.ref("proxy"))

	// With leader election (the default), as deployed: the state alerts keep
	// the series of the replica whose workspacemounts_leader is 1.
	pluginDir := filepath.Join(dir, "plugin")
	require.NoError(t, os.MkdirAll(pluginDir, 0o755))
	plugin, err := framework.StartPlugin(ctx, framework.PluginOptions{Kubeconfig: server.KubeconfigPath, WorkDir: pluginDir})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			var b bytes.Buffer
			plugin.PrintLogTail(&b, 40)
			t.Log(b.String())
		}
		if err := plugin.Stop(); err != nil {
			t.Errorf("stopping the plugin: %v", err)
		}
	})

	promDir := filepath.Join(dir, "prometheus")
	require.NoError(t, os.MkdirAll(promDir, 0o755))
	rules := filepath.Join(promDir, "alerts.yaml")
	writeShortenedRules(t, rules)
	metricsURL, err := url.Parse(plugin.MetricsURL)
	require.NoError(t, err)
	prom, err := framework.StartPrometheus(ctx, framework.PrometheusOptions{
		WorkDir: promDir, Job: "workspacemounts", Targets: []string{metricsURL.Host}, Interval: time.Second, RuleFiles: []string{rules},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			var b bytes.Buffer
			prom.PrintLogTail(&b, 40)
			t.Log(b.String())
		}
		if err := prom.Stop(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	t.Logf("kcp, the plugin and Prometheus (%s) started after %s", prom.URL, time.Since(began).Round(time.Millisecond))

	const (
		readyQuery      = `workspacemounts_ready_workspaces{job="workspacemounts",kind="KubeCluster"}`
		connectingQuery = `workspacemounts_mounted_workspaces{job="workspacemounts",kind="KubeCluster",phase="Connecting"}`
		leaderQuery     = `workspacemounts_leader{job="workspacemounts"}`
	)
	// Healthy: the mount is ready, the plugin leads, and no mount alert is
	// active (one may have been pending while the controller had not reached
	// the Workspace yet, which counts as Unknown).
	step := time.Now()
	waitForValue(t, prom, plugin, leaderQuery, 1)
	waitForValue(t, prom, plugin, readyQuery, 1)
	waitForValue(t, prom, plugin, connectingQuery, 0)
	waitForAlert(t, prom, plugin, "")
	t.Logf("ready mount seen by Prometheus after %s", time.Since(step).Round(time.Millisecond))

	// Not ready: the gauges move, the alert goes pending, then firing.
	step = time.Now()
	c.setMountStatus(t, cluster, kubeClusters, "proxy", map[string]interface{}{"phase": "Connecting"})
	waitForValue(t, prom, plugin, readyQuery, 0)
	waitForValue(t, prom, plugin, connectingQuery, 1)
	pending := waitForAlert(t, prom, plugin, "pending")
	t.Logf("%s pending %s after the flip", promNotReady, time.Since(step).Round(time.Millisecond))
	require.Equal(t, "KubeCluster", pending.Labels["kind"])
	firing := waitForAlert(t, prom, plugin, "firing")
	t.Logf("%s firing %s after the flip", promNotReady, time.Since(step).Round(time.Millisecond))
	require.Equal(t, "KubeCluster", firing.Labels["kind"])
	require.Equal(t, "warning", firing.Labels["severity"])
	value, err := strconv.ParseFloat(firing.Value, 64)
	require.NoError(t, err)
	require.InDelta(t, 1, value, 0, "one Workspace is not ready")
	require.Contains(t, firing.Annotations["summary"], "1 mounted workspaces of kind KubeCluster are not ready")

	// Ready again: the gauges come back and the alert goes away.
	step = time.Now()
	c.setMountStatus(t, cluster, kubeClusters, "proxy", ready)
	waitForValue(t, prom, plugin, readyQuery, 1)
	waitForValue(t, prom, plugin, connectingQuery, 0)
	waitForAlert(t, prom, plugin, "")
	t.Logf("%s resolved %s after the mount became ready again; the test took %s",
		promNotReady, time.Since(step).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// writeShortenedRules writes the alert rules of deploy/monitoring to path,
// every `for:` replaced by promFor.
func writeShortenedRules(t *testing.T, path string) {
	t.Helper()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, promAlertsFile))
	require.NoError(t, err)
	var file struct {
		Groups []struct {
			Name  string                   `json:"name"`
			Rules []map[string]interface{} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &file))
	shortened := 0
	for _, group := range file.Groups {
		for _, rule := range group.Rules {
			if _, ok := rule["for"]; ok {
				rule["for"] = promFor
				shortened++
			}
		}
	}
	require.NotZero(t, shortened, "no rule of %s has a for:", promAlertsFile)
	data, err = yaml.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o600))
}

// waitForValue waits until expr returns exactly one sample, of value want.
func waitForValue(t *testing.T, prom *framework.Prometheus, plugin *framework.Plugin, expr string, want float64) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := plugin.CheckRunning(); err != nil {
			return false, err.Error()
		}
		vector, err := prom.Query(context.Background(), expr)
		if err != nil {
			return false, err.Error()
		}
		if len(vector) != 1 {
			return false, fmt.Sprintf("%d samples: %v", len(vector), vector)
		}
		return float64(vector[0].Value) == want, vector[0].Value.String()
	}, promTimeout, 200*time.Millisecond, "Prometheus: %s == %v", expr, want)
}

// waitForAlert waits until promNotReady is in state ("pending", "firing";
// "" for not active at all), and returns it.
func waitForAlert(t *testing.T, prom *framework.Prometheus, plugin *framework.Plugin, state string) framework.Alert {
	t.Helper()
	var found framework.Alert
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := plugin.CheckRunning(); err != nil {
			return false, err.Error()
		}
		alerts, err := prom.Alerts(context.Background())
		if err != nil {
			return false, err.Error()
		}
		var active []string
		for _, alert := range alerts {
			if alert.Labels["alertname"] != promNotReady {
				continue
			}
			active = append(active, fmt.Sprintf("%s (%v, value %s)", alert.State, alert.Labels, alert.Value))
			if state != "" && alert.State == state {
				found = alert
				return true, ""
			}
		}
		if state == "" {
			return len(active) == 0, "active: " + strings.Join(active, ", ")
		}
		return false, fmt.Sprintf("active: %s", strings.Join(active, ", "))
	}, promTimeout, 200*time.Millisecond, "Prometheus: %s %s", promNotReady, stateName(state))
	return found
}

func stateName(state string) string {
	if state == "" {
		return "not active"
	}
	return state
}
