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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcp-dev/logicalcluster/v3"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// TestStatusOfMountObjectHeartbeats: every rule of the heartbeat, row by
// row, with a timeout of 6s at heartbeatNow; and the trimmed object of the
// caches gives the same answer and the same recheck.
func TestStatusOfMountObjectHeartbeats(t *testing.T) {
	t.Parallel()
	const timeout = 6 * time.Second
	ago := func(d time.Duration) string { return heartbeatNow.Add(-d).Format(time.RFC3339) }
	ready := func(fields map[string]interface{}) map[string]interface{} {
		status := map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/clusters/x"}
		for k, v := range fields {
			status[k] = v
		}
		return status
	}
	condition := func(typ, heartbeat string) map[string]interface{} {
		return map[string]interface{}{"type": typ, "status": "True", "lastHeartbeatTime": heartbeat}
	}
	for _, tc := range []struct {
		name        string
		object      *unstructured.Unstructured
		timeout     time.Duration // timeout unless set; -1: off
		wantExpired bool
		wantRecheck time.Duration
		wantMessage []string // parts of the message
		wantAbsent  string   // not in the message
	}{
		{
			name:        "fresh status.lastHeartbeatTime: ready, rechecked when it would expire",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(2 * time.Second)})),
			wantRecheck: 4 * time.Second, wantMessage: []string{"is ready at https://proxy.example/clusters/x."}, wantAbsent: "heartbeat",
		},
		{
			name:        "expired status.lastHeartbeatTime",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(10 * time.Second)})),
			wantExpired: true,
			wantMessage: []string{
				"KubeCluster proxy (contrib.kcp.io/v1alpha1) has not heartbeated since 2026-11-29T11:59:50Z (status.lastHeartbeatTime), " +
					"longer than --mount-heartbeat-timeout=6s: its provider may be gone. Before, it said: KubeCluster proxy (contrib.kcp.io/v1alpha1) is ready at https://proxy.example/clusters/x.",
			},
		},
		{
			name:        "exactly the timeout old is expired",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(timeout)})),
			wantExpired: true, wantMessage: []string{"since 2026-11-29T11:59:54Z"},
		},
		{
			name:        "a nanosecond short of the timeout is fresh",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": heartbeatNow.Add(-timeout + time.Nanosecond).Format(time.RFC3339Nano)})),
			wantRecheck: time.Nanosecond,
		},
		{
			name:        "expired status.lastProxyHeartbeatTime (kcp-dev/contrib's mounts-vw)",
			object:      mountObject(ready(map[string]interface{}{"lastProxyHeartbeatTime": ago(time.Hour)})),
			wantExpired: true, wantMessage: []string{"since 2026-11-29T11:00:00Z (status.lastProxyHeartbeatTime)"},
		},
		{
			name:        "fresh status.lastProxyHeartbeatTime",
			object:      mountObject(ready(map[string]interface{}{"lastProxyHeartbeatTime": ago(time.Second)})),
			wantRecheck: 5 * time.Second,
		},
		{
			name: "expired conditions' lastHeartbeatTime",
			object: mountObject(ready(map[string]interface{}{"conditions": []interface{}{
				condition("ClusterReady", ago(time.Minute)), condition("AgentReady", ago(time.Hour)),
			}})),
			wantExpired: true, wantMessage: []string{"since 2026-11-29T11:59:00Z (status.conditions[*].lastHeartbeatTime)"},
		},
		{
			name: "fresh condition's lastHeartbeatTime",
			object: mountObject(ready(map[string]interface{}{"conditions": []interface{}{
				condition("AgentReady", ago(time.Hour)), condition("ClusterReady", ago(3*time.Second)),
			}})),
			wantRecheck: 3 * time.Second,
		},
		{
			name: "the newest wins: a fresh condition over old status fields",
			object: mountObject(ready(map[string]interface{}{
				"lastHeartbeatTime": ago(time.Hour), "lastProxyHeartbeatTime": ago(time.Minute),
				"conditions": []interface{}{condition("ClusterReady", ago(time.Second))},
			})),
			wantRecheck: 5 * time.Second,
		},
		{
			name: "the newest wins: fresh status.lastHeartbeatTime over old conditions",
			object: mountObject(ready(map[string]interface{}{
				"lastHeartbeatTime": ago(2 * time.Second), "conditions": []interface{}{condition("ClusterReady", ago(time.Hour))},
			})),
			wantRecheck: 4 * time.Second,
		},
		{
			name: "the newest wins, and is named, when all are old",
			object: mountObject(ready(map[string]interface{}{
				"lastHeartbeatTime": ago(time.Hour), "lastProxyHeartbeatTime": ago(time.Minute),
				"conditions": []interface{}{condition("ClusterReady", ago(2*time.Hour))},
			})),
			wantExpired: true, wantMessage: []string{"since 2026-11-29T11:59:00Z (status.lastProxyHeartbeatTime)"},
		},
		{
			name:        "no heartbeat: judged as without the flag",
			object:      mountObject(ready(nil)),
			wantMessage: []string{"is ready at https://proxy.example/clusters/x."}, wantAbsent: "heartbeat",
		},
		{
			name: "null and empty are no heartbeat",
			object: mountObject(ready(map[string]interface{}{
				"lastHeartbeatTime": nil, "lastProxyHeartbeatTime": "", "conditions": []interface{}{condition("ClusterReady", "")},
			})),
			wantAbsent: "heartbeat",
		},
		{
			name:        "garbage alone: no heartbeat, and the message says which field",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": "yesterday", "lastProxyHeartbeatTime": int64(7)})),
			wantMessage: []string{"is ready at https://proxy.example/clusters/x. Its status.lastHeartbeatTime is not an RFC 3339 time, so it is no heartbeat (--mount-heartbeat-timeout=6s)."},
		},
		{
			name:        "garbage in a condition",
			object:      mountObject(ready(map[string]interface{}{"conditions": []interface{}{condition("ClusterReady", "12:00")}})),
			wantMessage: []string{"Its status.conditions[*].lastHeartbeatTime is not an RFC 3339 time"},
		},
		{
			name: "garbage beside a heartbeat that can be read: ignored",
			object: mountObject(ready(map[string]interface{}{
				"lastHeartbeatTime": "soon", "conditions": []interface{}{condition("ClusterReady", ago(time.Second))},
			})),
			wantRecheck: 5 * time.Second, wantAbsent: "RFC 3339",
		},
		{
			name:        "ahead of the clock within the timeout (skew): counts as now, fresh until the timeout after it",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(-3 * time.Second)})),
			wantRecheck: 9 * time.Second,
		},
		{
			name:        "ahead of the clock by more than the timeout: expired until it is within",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(-time.Hour)})),
			wantExpired: true, wantRecheck: time.Hour - timeout,
			wantMessage: []string{"has its newest heartbeat (status.lastHeartbeatTime) at 2026-11-29T13:00:00Z, more than --mount-heartbeat-timeout=6s ahead of the plugin's clock"},
		},
		{
			name:        "another offset and fractional seconds",
			object:      mountObject(ready(map[string]interface{}{"lastHeartbeatTime": "2026-11-29T13:59:59.5+02:00"})),
			wantRecheck: 5500 * time.Millisecond,
		},
		{
			name: "an expired mount that is not ready: Unknown too, its failing condition quoted",
			object: mountObject(map[string]interface{}{"phase": "Connecting", "lastHeartbeatTime": ago(time.Minute), "conditions": []interface{}{
				map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "Dialing"},
			}}),
			wantExpired: true, wantMessage: []string{"Before, it said: KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting: condition ClusterReady is False (Dialing)."},
		},
		{
			name:        "an unmarked mount object's heartbeat counts too",
			object:      unmarked(mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(time.Minute)})), nil),
			wantExpired: true, wantMessage: []string{"has not heartbeated since", " " + mount.UnmarkedNote},
		},
		{
			name:    "off: an old heartbeat changes nothing",
			object:  mountObject(ready(map[string]interface{}{"lastHeartbeatTime": ago(time.Hour)})),
			timeout: -1, wantAbsent: "heartbeat",
		},
		{
			name:    "off: garbage is not mentioned",
			object:  mountObject(ready(map[string]interface{}{"lastHeartbeatTime": "yesterday"})),
			timeout: -1, wantAbsent: "heartbeat",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rule := heartbeatRule{timeout: timeout, now: heartbeatNow}
			if tc.timeout < 0 {
				rule.timeout = 0
			}
			s, recheck := statusOfMountObject(kubeClusterRef, tc.object, mount.URLRule{}, rule)
			without, _ := statusOfMountObject(kubeClusterRef, tc.object, mount.URLRule{}, heartbeatRule{})
			if tc.wantExpired {
				require.Equal(t, mount.PhaseUnknown, s.Phase)
				require.False(t, s.Ready)
				require.Equal(t, mount.ReasonMountHeartbeatExpired, s.Reason)
				require.Equal(t, without.URL, s.URL, "the URL stays for whoever looks")
				require.Equal(t, without.Conditions, s.Conditions)
			} else {
				require.Equal(t, without.Phase, s.Phase)
				require.Equal(t, without.Ready, s.Ready)
				require.Equal(t, without.Reason, s.Reason)
			}
			require.Equal(t, tc.wantRecheck, recheck)
			for _, part := range tc.wantMessage {
				require.Contains(t, s.Message, part)
			}
			if tc.wantAbsent != "" {
				require.NotContains(t, s.Message, tc.wantAbsent)
			}
			require.True(t, strings.HasSuffix(s.Message, "."), "message %q is a sentence", s.Message)

			// The caches' copy gives the same answer.
			trimmed, err := trimFullMountObject(tc.object.DeepCopy())
			require.NoError(t, err)
			fromTrimmed, trimmedRecheck := statusOfMountObject(kubeClusterRef, trimmed.(*trimmedMountObject).unstructured(), mount.URLRule{}, rule)
			require.Equal(t, s, fromTrimmed)
			require.Equal(t, recheck, trimmedRecheck)

			// The same judgement later, as the requeue makes it: what was
			// fresh has expired by then (or, ahead by more than the
			// timeout, is within it), and nothing else changed.
			if recheck > 0 {
				later, _ := statusOfMountObject(kubeClusterRef, tc.object, mount.URLRule{}, heartbeatRule{timeout: rule.timeout, now: heartbeatNow.Add(recheck)})
				require.NotEqual(t, s.Reason == mount.ReasonMountHeartbeatExpired, later.Reason == mount.ReasonMountHeartbeatExpired, "the judgement changes at the recheck")
			}
		})
	}
}

var heartbeatNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// TestMountStateRecheck: the reconciler asks for the Workspace again when
// its mount's heartbeat expires (mountState.recheckAfter), and not when
// nothing changes with time alone: an expired one waits for an update of
// its mount object, as one without heartbeat or with the flag off.
func TestMountStateRecheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		timeout   time.Duration
		heartbeat interface{}
		want      time.Duration
	}{
		{name: "fresh", timeout: time.Minute, heartbeat: heartbeatNow.Add(-20 * time.Second).Format(time.RFC3339), want: 40 * time.Second},
		{name: "ahead within the timeout", timeout: time.Minute, heartbeat: heartbeatNow.Add(30 * time.Second).Format(time.RFC3339), want: 90 * time.Second},
		{name: "ahead beyond the timeout", timeout: time.Minute, heartbeat: heartbeatNow.Add(time.Hour).Format(time.RFC3339), want: 59 * time.Minute},
		{name: "expired", timeout: time.Minute, heartbeat: heartbeatNow.Add(-time.Hour).Format(time.RFC3339), want: 0},
		{name: "no heartbeat", timeout: time.Minute, heartbeat: nil, want: 0},
		{name: "garbage", timeout: time.Minute, heartbeat: "x", want: 0},
		{name: "off", timeout: 0, heartbeat: heartbeatNow.Add(-20 * time.Second).Format(time.RFC3339), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &workspacesReconciler{
				resolve: servedEverywhere, informerDenied: neverDenied, heartbeatTimeout: tc.timeout,
				getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://x", "lastHeartbeatTime": tc.heartbeat}), nil),
				now:            func() time.Time { return heartbeatNow },
			}
			state, err := r.mountState(context.Background(), mountedWorkspace(kubeClusterRef))
			require.NoError(t, err)
			require.Equal(t, tc.want, state.recheckAfter)
		})
	}
}

// TestReconcileHeartbeatExpiresAndRecovers: a Ready mount whose heartbeat
// stops moving turns Unknown/MountHeartbeatExpired at the recheck (one
// write), stays so without a write, and is Ready again once the heartbeat
// moves; at level 2 its condition is False with severity Warning, or
// Unknown beside kcp's in-tree mounts controller (which keeps a mount whose
// object says Ready Ready).
func TestReconcileHeartbeatExpiresAndRecovers(t *testing.T) {
	t.Parallel()
	for _, inTree := range []bool{false, true} {
		now := heartbeatNow
		status := map[string]interface{}{"phase": "Ready", "URL": "https://x", "lastHeartbeatTime": now.Format(time.RFC3339)}
		r := &workspacesReconciler{
			resolve: servedEverywhere, informerDenied: neverDenied, heartbeatTimeout: 10 * time.Second,
			getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
				return mountObject(status), nil
			},
			routing: RoutingOptions{WorkspaceCondition: true, InTreeMountsController: inTree},
			now:     func() time.Time { return now },
		}
		ws := mountedWorkspace(kubeClusterRef)
		state, err := r.mountState(context.Background(), ws)
		require.NoError(t, err)
		require.Equal(t, 10*time.Second, state.recheckAfter)
		r.applyMetadataAndSpec(ws, state)
		r.applyStatus(ws, state)
		require.Equal(t, "Ready", ws.Annotations[mount.PhaseAnnotationKey])
		require.Equal(t, corev1.ConditionTrue, ownCondition(ws).Status)

		now = now.Add(10 * time.Second) // the recheck
		require.NoError(t, r.reconcile(context.Background(), ws))
		written, _ := mount.StatusOf(ws.Annotations)
		require.Equal(t, mount.PhaseUnknown, written.Phase)
		require.Equal(t, mount.ReasonMountHeartbeatExpired, written.Reason)
		require.Equal(t, now, written.LastTransitionTime.UTC())
		condition := ownCondition(ws)
		require.Equal(t, mount.ReasonMountHeartbeatExpired, condition.Reason)
		if inTree {
			require.Equal(t, corev1.ConditionUnknown, condition.Status)
			require.True(t, strings.HasSuffix(condition.Message, inTreeNote))
		} else {
			require.Equal(t, corev1.ConditionFalse, condition.Status)
			require.Equal(t, conditionsv1alpha1.ConditionSeverityWarning, condition.Severity)
		}

		before := ws.DeepCopy()
		now = now.Add(time.Hour)
		require.NoError(t, r.reconcile(context.Background(), ws))
		require.Equal(t, before, ws, "an expired mount stays so, without a write")

		status["lastHeartbeatTime"] = now.Add(-time.Second).Format(time.RFC3339) // the provider is back
		require.NoError(t, r.reconcile(context.Background(), ws))
		written, _ = mount.StatusOf(ws.Annotations)
		require.Equal(t, mount.PhaseReady, written.Phase)
		require.True(t, written.Ready)
		require.Equal(t, corev1.ConditionTrue, ownCondition(ws).Status)
	}
}
