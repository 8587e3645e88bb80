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

package framework

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseKiB(t *testing.T) {
	t.Parallel()
	bytes, err := parseKiB("   12345 kB")
	require.NoError(t, err)
	require.Equal(t, uint64(12345<<10), bytes)
	_, err = parseKiB("12345 MB")
	require.Error(t, err)
	require.Equal(t, "12 MiB", MiB(12<<20))
}

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m, err := ParseMetrics(strings.NewReader(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="subjectaccessreviews",verb="POST"} 7
apiserver_request_total{code="201",resource="tokenreviews",verb="POST"} 2
apiserver_request_total{code="500",resource="subjectaccessreviews",verb="POST"} 1
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.2345e+07
# TYPE workspacemounts_mounted_workspaces gauge
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Invalid"} 40
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Ready"} 3
# TYPE workspacemounts_status_latency_seconds histogram
workspacemounts_status_latency_seconds_bucket{le="1"} 4
workspacemounts_status_latency_seconds_bucket{le="+Inf"} 5
workspacemounts_status_latency_seconds_sum 2.5
workspacemounts_status_latency_seconds_count 5
`))
	require.NoError(t, err)
	sum, found := m.Sum("apiserver_request_total", map[string]string{"resource": "subjectaccessreviews", "verb": "POST"})
	require.True(t, found)
	require.InDelta(t, 8.0, sum, 0)
	heap, found := m.Sum("go_memstats_heap_inuse_bytes", nil)
	require.True(t, found)
	require.InDelta(t, 12345000.0, heap, 0)
	_, found = m.Sum("apiserver_request_total", map[string]string{"resource": "workspaces"})
	require.False(t, found)
	_, found = m.Sum("no_such_metric", nil)
	require.False(t, found)
	require.InDelta(t, 0.0, m.Value("no_such_metric", nil), 0)
	require.InDelta(t, 5.0, m.Value("workspacemounts_status_latency_seconds_count", nil), 0, "a histogram's _count")
	require.InDelta(t, 2.5, m.Value("workspacemounts_status_latency_seconds_sum", nil), 0, "a histogram's _sum")
	require.Equal(t, map[string]bool{"(unresolved)": true, "KubeCluster": true}, m.LabelValues("workspacemounts_mounted_workspaces", "kind"))

	_, err = ParseMetrics(strings.NewReader("not a metric line {\n"))
	require.Error(t, err)
}
