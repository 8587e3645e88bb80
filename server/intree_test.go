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

package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInTreeMountsQueueIn reads kcp's /metrics as kcp v0.28.1 serves them.
func TestInTreeMountsQueueIn(t *testing.T) {
	t.Parallel()
	const gateOff = `# HELP workqueue_adds_total [ALPHA] Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="kcp-workspace"} 12
workqueue_adds_total{name="workspacemounts-workspaces"} 3
# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",name="kcp-workspace-mounts"} 1
`
	runs, err := inTreeMountsQueueIn(strings.NewReader(gateOff))
	require.NoError(t, err)
	require.False(t, runs, "only a workqueue series counts")

	runs, err = inTreeMountsQueueIn(strings.NewReader(gateOff + `# HELP workqueue_depth [ALPHA] Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="kcp-workspace-mounts"} 0
`))
	require.NoError(t, err)
	require.True(t, runs)

	_, err = inTreeMountsQueueIn(strings.NewReader("workqueue_depth{name=\"kcp-workspace-mounts\" 0\n"))
	require.Error(t, err)
}
