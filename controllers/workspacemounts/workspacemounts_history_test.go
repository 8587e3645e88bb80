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

package workspacemounts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// TestProcessWorkspaceRecordsTransitions: a mount flipped Connecting,
// Ready, Connecting, Ready is one patch per transition and none between,
// each patch carrying the transitions and the ready seconds so far; the
// transition histograms observe the first ready state as a time to ready
// and the second as the end of a not-ready spell, each once.
func TestProcessWorkspaceObservesTransitions(t *testing.T) {
	t.Parallel()
	metrics.Register()
	k := newFakeKCP(mountedWorkspace(kubeClusterRef))
	object := mountObject(map[string]interface{}{"phase": "Connecting"})
	c, indexer := testController(k, RoutingOptions{}, func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return object, nil
	})
	c.shard = "shard-of-" + t.Name() // series of this test alone
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := start
	c.workspaces.now = func() time.Time { return now }

	histogram := func(t *testing.T, name string) (count uint64, sum float64) {
		t.Helper()
		vec := metrics.NotReadyDuration
		if name == "time_to_ready" {
			vec = metrics.TimeToReady
		}
		count, err := testutil.GetHistogramMetricCount(vec.WithLabelValues("KubeCluster", c.shard))
		require.NoError(t, err)
		sum, err = testutil.GetHistogramMetricValue(vec.WithLabelValues("KubeCluster", c.shard))
		require.NoError(t, err)
		return count, sum
	}

	ctx := context.Background()
	for i, step := range []struct {
		seconds     int
		phase       string
		patches     int
		transitions int
		ready       int64
	}{
		{seconds: 0, phase: "Connecting", patches: 1, transitions: 1},
		{seconds: 30, phase: "Connecting", patches: 1, transitions: 1}, // reconciled again: no write
		{seconds: 100, phase: "Ready", patches: 2, transitions: 2},
		{seconds: 150, phase: "Ready", patches: 2, transitions: 2},
		{seconds: 160, phase: "Connecting", patches: 3, transitions: 3, ready: 60},
		{seconds: 260, phase: "Ready", patches: 4, transitions: 4, ready: 60},
		{seconds: 300, phase: "Ready", patches: 4, transitions: 4, ready: 60},
	} {
		now = start.Add(time.Duration(step.seconds) * time.Second)
		status := map[string]interface{}{"phase": step.phase}
		if step.phase == "Ready" {
			status["URL"] = "https://x"
		}
		object = mountObject(status)
		key := syncCache(t, k, indexer, "mounted")
		before := k.workspaces["mounted"].Annotations[mount.StatusAnnotationKey]
		wrote := len(k.patches)
		require.NoError(t, c.processWorkspace(ctx, key), "step %d", i)
		require.Len(t, k.patches, step.patches, "step %d", i)
		after := k.workspaces["mounted"].Annotations[mount.StatusAnnotationKey]
		if len(k.patches) == wrote {
			require.Equal(t, before, after, "step %d: no transition, the same annotation", i)
		}
		written, found := mount.StatusOf(k.workspaces["mounted"].Annotations)
		require.True(t, found)
		require.Len(t, written.Transitions(), step.transitions, "step %d", i)
		require.Equal(t, step.ready, written.ReadySeconds, "step %d", i)
		require.Equal(t, start.Unix(), written.FirstSeen().Unix(), "step %d", i)
	}

	count, sum := histogram(t, "time_to_ready")
	require.Equal(t, uint64(1), count, "the first ready state, once")
	require.InDelta(t, 100, sum, 0.001, "first seen at 0, ready at 100")
	count, sum = histogram(t, "not_ready")
	require.Equal(t, uint64(1), count, "ready again, once")
	require.InDelta(t, 100, sum, 0.001, "not ready from 160 to 260")
}
