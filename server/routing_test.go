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
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
)

// TestRoutingOptionsAskAtEveryLevel: whether kcp's in-tree mounts
// controller runs is asked at every level, the first included: without
// --workspace-condition and --workspace-url the controller still removes
// WorkspaceMountReady where kcp's controller does not run, and must leave it
// where it does (the two would rewrite the Workspace without end).
func TestRoutingOptionsAskAtEveryLevel(t *testing.T) {
	t.Parallel()
	const inTreeQueue = "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"kcp-workspace-mounts\"} 0\n"
	const otherQueue = "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"kcp-workspace\"} 0\n"
	tenPercent := intstr.FromString("10%")
	for _, tc := range []struct {
		name               string
		condition, url     bool
		status             int
		metrics            string
		want               workspacemounts.RoutingOptions
		wantErr, wantAsked bool
		delay              time.Duration
		maxUnavailable     *intstr.IntOrString
	}{
		{name: "level 1, gate on", status: http.StatusOK, metrics: inTreeQueue,
			want: workspacemounts.RoutingOptions{InTreeMountsController: true}},
		{name: "level 1, gate off", status: http.StatusOK, metrics: otherQueue,
			want: workspacemounts.RoutingOptions{}},
		{name: "level 1, /metrics forbidden: taken to run", status: http.StatusForbidden,
			want: workspacemounts.RoutingOptions{InTreeMountsController: true}},
		{name: "level 2, gate on", condition: true, status: http.StatusOK, metrics: inTreeQueue,
			want: workspacemounts.RoutingOptions{WorkspaceCondition: true, InTreeMountsController: true}},
		{name: "level 3, gate off", condition: true, url: true, status: http.StatusOK, metrics: otherQueue,
			want: workspacemounts.RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}},
		{name: "level 2, gated", condition: true, status: http.StatusOK, metrics: otherQueue, delay: time.Minute, maxUnavailable: &tenPercent,
			want: workspacemounts.RoutingOptions{WorkspaceCondition: true, ConditionDelay: time.Minute, MaxUnavailable: &tenPercent}},
		{name: "level 3, gate on: refused", condition: true, url: true, status: http.StatusOK, metrics: inTreeQueue, wantErr: true},
		{name: "level 3, /metrics forbidden: refused", condition: true, url: true, status: http.StatusForbidden, wantErr: true},
		{name: "level 1, kcp not answering yet: asked again later", status: http.StatusServiceUnavailable, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			var otherPaths atomic.Int32
			kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" {
					otherPaths.Add(1)
					http.NotFound(w, r)
					return
				}
				asked.Add(1)
				if tc.status != http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, tc.status)
					return
				}
				_, _ = fmt.Fprint(w, tc.metrics)
			}))
			defer kcp.Close()
			o := &CompletedOptions{&completedOptions{Options: Options{WorkspaceCondition: tc.condition, WorkspaceURL: tc.url, WorkspaceConditionDelay: tc.delay},
				maxUnavailable: tc.maxUnavailable}}
			got, err := routingOf(t.Context(), o, &rest.Config{Host: kcp.URL})
			require.Equal(t, int32(1), asked.Load(), "kcp's /metrics asked once")
			require.Zero(t, otherPaths.Load(), "requests to kcp other than /metrics")
			switch {
			case tc.wantAsked:
				require.ErrorIs(t, err, errNotAnswered)
			case tc.wantErr:
				require.Error(t, err)
				require.NotErrorIs(t, err, errNotAnswered, "refused: not asked again")
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

// TestShardHosts: the shards' hosts for the rule of mount URLs are root's
// and, for a sharded kcp, each Shard's three URLs', as the Shards are now.
func TestShardHosts(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"kcp.example.com"}, shardHosts("https://kcp.example.com:6443", nil)())

	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	hosts := shardHosts("https://10.0.0.1:6443", store)
	require.Equal(t, []string{"10.0.0.1"}, hosts())
	require.NoError(t, store.Add(&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}, Spec: corev1alpha1.ShardSpec{
		BaseURL: "https://alpha.internal:6443", ExternalURL: "https://kcp.example.com", VirtualWorkspaceURL: "https://[fd00::2]:6444",
	}}))
	require.NoError(t, store.Add(&corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "beta"}, Spec: corev1alpha1.ShardSpec{BaseURL: "not a url"}}))
	require.ElementsMatch(t, []string{"10.0.0.1", "alpha.internal", "kcp.example.com", "fd00::2"}, hosts(), "asked again: the new Shards")
}
