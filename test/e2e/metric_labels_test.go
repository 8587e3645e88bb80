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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const phaseTransitionsMetric = "workspacemounts_phase_transitions_total"

// TestPhaseAnnotationIsNoLabel: whatever anyone writes to the phase
// annotation of a Workspace, mounted or not, the controller writes it back
// and counts the transition from Other: no value written there becomes a
// label value, or a series, of the plugin's metrics.
func TestPhaseAnnotationIsNoLabel(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := framework.UniqueName("labels")
	framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), framework.RootPath, org)
	cluster := framework.RootPath.Join(org)
	kind := installKubeClusters(t, cluster)
	c.createMountObject(t, cluster, kind, "proxy", nil)
	c.createMountedWorkspace(t, cluster, "mounted", kind.ref("proxy"))
	framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), cluster, "plain")
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountPhaseUnrecognized})

	// 12 values no controller writes: random ones, one of 64 KiB, and
	// near misses of the contract's phases.
	values := []string{"Ready ", "ready", "None", "Other", strings.Repeat(rand.String(64), 1024)}
	for len(values) < 12 {
		values = append(values, "junk-"+rand.String(20))
	}
	before := scrapePluginMetrics(t)
	fromOther := func(m framework.Metrics, to string) float64 {
		return m.Value(phaseTransitionsMetric, map[string]string{"from": metrics.PhaseOther, "to": to})
	}

	workspaces := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces()
	for name, restored := range map[string]string{"mounted": string(mount.PhaseUnknown), "plain": ""} {
		for _, value := range values {
			patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]string{mount.PhaseAnnotationKey: value}}})
			require.NoError(t, err)
			_, err = workspaces.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err, "annotating %s", name)
			kcptestinghelpers.Eventually(t, func() (bool, string) {
				ws, err := workspaces.Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				got := ws.Annotations[mount.PhaseAnnotationKey]
				return got == restored, fmt.Sprintf("the phase annotation is %.40q", got)
			}, convergeTimeout, 50*time.Millisecond, "the controller writes the phase of %s back", name)
		}
	}

	after := scrapePluginMetrics(t)
	// The controller counts a transition once its patch is answered, after
	// the annotation is back: every write is counted, from Other.
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		after = scrapePluginMetrics(t)
		mounted, plain := fromOther(after, string(mount.PhaseUnknown))-fromOther(before, string(mount.PhaseUnknown)), fromOther(after, metrics.PhaseNone)-fromOther(before, metrics.PhaseNone)
		return mounted >= float64(len(values)) && plain >= float64(len(values)),
			fmt.Sprintf("Other to Unknown counted %v times, Other to None %v", mounted, plain)
	}, convergeTimeout, 100*time.Millisecond, "each write is counted from Other")

	series := after[phaseTransitionsMetric].GetMetric()
	for _, s := range series {
		for _, label := range s.GetLabel() {
			require.Contains(t, metrics.PhaseLabels, label.GetValue(), "the %s label of a series of %s", label.GetName(), phaseTransitionsMetric)
		}
	}
	require.LessOrEqual(t, len(series), len(metrics.PhaseLabels)*len(metrics.PhaseLabels))
	t.Logf("%s: %d series before the writes, %d after", phaseTransitionsMetric, len(before[phaseTransitionsMetric].GetMetric()), len(series))

	// Nor anywhere else in what the plugin exports (the random ones: the
	// near misses are words of the help texts).
	body := scrapePluginMetricsText(t)
	for _, value := range values[4:] {
		require.NotContains(t, body, value[:min(len(value), 64)], "a value written to the annotation is in /metrics")
	}
}

func scrapePluginMetrics(t *testing.T) framework.Metrics {
	t.Helper()
	m, err := framework.ScrapeMetrics(context.Background(), opHTTP, pluginMetricsURL+"/metrics")
	require.NoError(t, err)
	return m
}

func scrapePluginMetricsText(t *testing.T) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, pluginMetricsURL+"/metrics", http.NoBody)
	require.NoError(t, err)
	resp, err := opHTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
