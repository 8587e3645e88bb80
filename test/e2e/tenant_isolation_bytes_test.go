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
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// tenantBytesLabels labels of about 70 bytes each Workspace carries.
const tenantBytesLabels = 1500

// tenantBytesScale is how many mounted Workspaces of one tenant carry them,
// and how much the plugin's heap (after a GC) may grow with them: what it
// keeps of them, bounded, and what else moved. 100 with framework.SlowEnv
// (make test-slow); 40 in make test, which shares its kcp with every test.
func tenantBytesScale() (workspaces int, heapSlack int64) {
	if framework.Slow() {
		return 100, 12 << 20
	}
	return 40, 8 << 20
}

// TestTenantLabelsDoNotGrowThePlugin is issue 40's "bounded tenant bytes"
// against a real kcp: a plugin process of its own, virtual workspace only
// (TestMain's writes the annotations), and 40 mounted Workspaces of one
// tenant (100 in make test-slow) with 1,500 labels each (about 100 KB
// each): the plugin's heap after a GC grows by less than tenantBytesScale's slack (each Workspace's
// labels cut to mount.MaxLabels and mount.MaxLabelBytes), where it held
// every label twice before. The WorkspaceMounts say how many labels were
// cut; a label selector sees only those kept.
func TestTenantLabelsDoNotGrowThePlugin(t *testing.T) {
	t.Parallel()
	tenantBytesWorkspaces, tenantBytesHeapSlack := tenantBytesScale()
	c := newClients(t)
	plugin := opStartPlugin(t, t, t.TempDir(), "tenantbytes", kcp.KubeconfigPath, "--run-controller=false", "--profiling")
	tenant := newVWOrg(t, c, "tbytes")
	opWaitStarted(t, plugin)
	client := opVWClient(t, plugin, nil)
	client.Timeout = 30 * time.Second
	adminToken := kcp.ConfigT(t, adminContext).BearerToken
	before := heapAfterGC(t, plugin)

	labels := map[string]string{}
	for i := range tenantBytesLabels {
		labels[fmt.Sprintf("team.tenant.example.io/label-%04d", i)] = fmt.Sprintf("value-%04d-abcdefghijklmnopqrstuvwxyz", i)
	}
	names := make(chan string)
	var wg sync.WaitGroup
	var lock sync.Mutex
	var failures []error
	for range 8 {
		wg.Go(func() {
			for name := range names {
				ws := &tenancyv1alpha1.Workspace{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
					Spec:       tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: kubeClusters.ref(name)}},
				}
				if _, err := c.kcp.Cluster(tenant.path).TenancyV1alpha1().Workspaces().Create(context.Background(), ws, metav1.CreateOptions{}); err != nil {
					lock.Lock()
					failures = append(failures, fmt.Errorf("creating %s: %w", name, err))
					lock.Unlock()
				}
			}
		})
	}
	began := time.Now()
	for i := range tenantBytesWorkspaces {
		names <- fmt.Sprintf("labelled-%03d", i)
	}
	close(names)
	wg.Wait()
	require.Empty(t, failures)
	t.Logf("%d Workspaces with %d labels each created in %s", tenantBytesWorkspaces, tenantBytesLabels, time.Since(began).Round(time.Millisecond))

	list := func(query string) *wsmv1alpha1.WorkspaceMountList {
		path := vwPrefix + tenant.cluster.String() + vwResourcePath + query
		code, body, err := opGet(client, plugin.VirtualWorkspaceURL+path, adminToken)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, body)
		var l wsmv1alpha1.WorkspaceMountList
		require.NoError(t, json.Unmarshal([]byte(body), &l))
		return &l
	}
	// Served (TestMain's controller may write them meanwhile: NotFound, no mount object).
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		// One item and the count of the others: the whole list was 10 MB before.
		l, served := list("?limit=1"), int64(0)
		if len(l.Items) > 0 && l.RemainingItemCount != nil {
			served = 1 + *l.RemainingItemCount
		}
		return served == int64(tenantBytesWorkspaces), fmt.Sprintf("%d of %d served", served, tenantBytesWorkspaces)
	}, 6*vwConvergeTimeout, time.Second, "%s%s", "the plugin serves every Workspace", opLogs(plugin))

	after := heapAfterGC(t, plugin)
	grown := int64(after) - int64(before)
	t.Logf("the plugin's heap after a GC: %.1f MiB before, %.1f MiB after %d Workspaces with %d labels each: %+.1f MiB, %.0f bytes per Workspace",
		float64(before)/(1<<20), float64(after)/(1<<20), tenantBytesWorkspaces, tenantBytesLabels, float64(grown)/(1<<20), float64(grown)/float64(tenantBytesWorkspaces))
	require.Less(t, grown, tenantBytesHeapSlack, "the plugin's heap grows with a tenant's labels")

	l := list("")
	for _, wsm := range l.Items {
		require.LessOrEqual(t, len(wsm.Labels), mount.MaxLabels, "%s", wsm.Name)
		require.Equal(t, fmt.Sprint(tenantBytesLabels-len(wsm.Labels)), wsm.Annotations[mount.LabelsCutAnnotationKey], "%s", wsm.Name)
	}
	require.Len(t, list("?labelSelector="+url.QueryEscape("team.tenant.example.io/label-0000")).Items, tenantBytesWorkspaces, "a label kept is selected")
	require.Empty(t, list("?labelSelector="+url.QueryEscape("team.tenant.example.io/label-1499")).Items, "a label cut is not")
}

// heapAfterGC is the plugin's heap in use right after a garbage collection,
// which asking for a heap profile with gc=1 runs (--profiling).
func heapAfterGC(t *testing.T, plugin *framework.Plugin) float64 {
	t.Helper()
	code, _, err := opGet(opHTTP, plugin.MetricsURL+"/debug/pprof/heap?gc=1", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	metrics, err := framework.ScrapeMetrics(context.Background(), opHTTP, plugin.MetricsURL+"/metrics")
	require.NoError(t, err)
	heap, found := metrics.Sum(hostileHeapMetric, nil)
	require.True(t, found, "the plugin's /metrics has no %s", hostileHeapMetric)
	return heap
}
