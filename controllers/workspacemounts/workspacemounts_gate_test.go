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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

func TestParseMaxUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value   string
		want    *intstr.IntOrString
		wantErr string
	}{
		{value: "", want: nil},
		{value: "0", want: ptrTo(intstr.FromInt32(0))},
		{value: "3", want: ptrTo(intstr.FromInt32(3))},
		{value: "0%", want: ptrTo(intstr.FromString("0%"))},
		{value: "10%", want: ptrTo(intstr.FromString("10%"))},
		{value: "100%", want: ptrTo(intstr.FromString("100%"))},
		{value: "101%", wantErr: `"101%" is not a percentage from 0% to 100%`},
		{value: "-1%", wantErr: "not a percentage"},
		{value: "%", wantErr: "not a percentage"},
		{value: "1.5%", wantErr: "not a percentage"},
		{value: "-1", wantErr: `"-1" is neither a number of Workspaces (0 or more) nor a percentage`},
		{value: "+1", wantErr: "neither a number"},
		{value: "1.5", wantErr: "neither a number"},
		{value: " 3", wantErr: "neither a number"},
		{value: "ten", wantErr: "neither a number"},
		{value: "3000000000", wantErr: "neither a number"},
	} {
		got, err := ParseMaxUnavailable(tc.value)
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, "%q", tc.value)
			continue
		}
		require.NoError(t, err, "%q", tc.value)
		require.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestUnavailableLimit: a percentage of the mounted Workspaces rounds down,
// as a Deployment's maxUnavailable does.
func TestUnavailableLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max     string
		mounted int
		want    int
	}{
		{"3", 0, 3}, {"3", 100, 3}, {"0", 100, 0},
		{"10%", 25, 2}, {"10%", 9, 0}, {"10%", 10, 1}, {"10%", 0, 0},
		{"34%", 3, 1}, {"50%", 3, 1}, {"100%", 7, 7}, {"0%", 7, 0},
	} {
		v, err := ParseMaxUnavailable(tc.max)
		require.NoError(t, err)
		require.Equal(t, tc.want, unavailableLimit(*v, tc.mounted), "%s of %d", tc.max, tc.mounted)
	}
}

// TestDelayRemaining: how long a condition that would be False waits, from
// when the Workspace tells its mount turned not ready.
func TestDelayRemaining(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(at.Add(-d)) }
	annotated := func(ready bool, since metav1.Time) *tenancyv1alpha1.Workspace {
		ws := mountedWorkspace(kubeClusterRef)
		status := mount.Status{Phase: mount.PhaseConnecting, Ready: ready, Reason: mount.ReasonMountNotReady, LastTransitionTime: since}
		if ready {
			status.Phase, status.Reason = mount.PhaseReady, mount.ReasonMountReady
		}
		ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
		return ws
	}
	withCondition := func(ws *tenancyv1alpha1.Workspace, status corev1.ConditionStatus, reason string, since metav1.Time) *tenancyv1alpha1.Workspace {
		ws.Status.Conditions = append(ws.Status.Conditions, conditionsv1alpha1.Condition{Type: mount.ConditionType, Status: status, Reason: reason, LastTransitionTime: since})
		return ws
	}
	for _, tc := range []struct {
		name      string
		ws        *tenancyv1alpha1.Workspace
		delay     time.Duration
		want      time.Duration
		wantSince metav1.Time
	}{
		{name: "no delay", ws: annotated(true, ago(time.Hour)), delay: 0, want: 0, wantSince: at},
		{name: "ready until now: the whole delay", ws: annotated(true, ago(time.Hour)), delay: 30 * time.Second, want: 30 * time.Second, wantSince: at},
		{name: "no annotation yet: the whole delay", ws: mountedWorkspace(kubeClusterRef), delay: 30 * time.Second, want: 30 * time.Second, wantSince: at},
		{name: "not ready for 10s of 30s", ws: annotated(false, ago(10*time.Second)), delay: 30 * time.Second, want: 20 * time.Second, wantSince: ago(10 * time.Second)},
		{name: "not ready for exactly the delay", ws: annotated(false, ago(30*time.Second)), delay: 30 * time.Second, want: 0, wantSince: ago(30 * time.Second)},
		{name: "not ready for longer than the delay", ws: annotated(false, ago(time.Hour)), delay: 30 * time.Second, want: 0, wantSince: ago(time.Hour)},
		{
			name: "already False, the annotation's time moved with a new phase: stays False",
			ws:   withCondition(annotated(false, ago(time.Second)), corev1.ConditionFalse, mount.ReasonMountNotReady, ago(time.Minute)), delay: 30 * time.Second,
			want: 0, wantSince: at,
		},
		{
			name: "delayed since earlier than a new not-ready phase: the earlier counts",
			ws:   withCondition(annotated(false, ago(time.Second)), corev1.ConditionUnknown, mount.ReasonGateDelayed, ago(25*time.Second)), delay: 30 * time.Second,
			want: 5 * time.Second, wantSince: ago(25 * time.Second),
		},
		{
			name: "a condition True tells nothing",
			ws:   withCondition(annotated(false, ago(5*time.Second)), corev1.ConditionTrue, mount.ReasonMountReady, ago(time.Hour)), delay: 30 * time.Second,
			want: 25 * time.Second, wantSince: ago(5 * time.Second),
		},
		{name: "a time in the future is no one's the controller wrote", ws: annotated(false, ago(-time.Hour)), delay: 30 * time.Second, want: 30 * time.Second, wantSince: at},
		{name: "a status annotation older than the Workspace is not believed", ws: createdAt(annotated(false, ago(time.Hour)), ago(10*time.Second)), delay: 30 * time.Second, want: 30 * time.Second, wantSince: at},
		{name: "a condition's time before creation too", ws: createdAt(withCondition(mountedWorkspace(kubeClusterRef), corev1.ConditionUnknown, mount.ReasonGateDelayed, ago(time.Hour)), ago(10*time.Second)), delay: 30 * time.Second, want: 20 * time.Second, wantSince: ago(10 * time.Second)},
		{name: "a fraction of a second is rounded up", ws: annotated(false, ago(time.Second)), delay: 1500 * time.Millisecond, want: time.Second, wantSince: ago(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, since := delayRemaining(tc.ws, at, tc.delay)
			require.Equal(t, tc.want, got)
			require.True(t, since.Equal(&tc.wantSince), "since %s, want %s", since, tc.wantSince)
		})
	}
}

// TestProcessWorkspaceGate: with --max-unavailable=1, two mounts not ready
// give one Workspace False (kcp: Unavailable) and one Unknown GateHeld
// (kcp: Ready); when the False one recovers, the held one is enqueued and
// its reconcile turns it False, its mount unchanged. With a delay, a
// reconcile is asked for when it ends.
func TestProcessWorkspaceGate(t *testing.T) {
	t.Parallel()
	workspace := func(name string) *tenancyv1alpha1.Workspace {
		ref := kubeClusterRef
		ref.Name = name
		ws := mountedWorkspace(ref)
		ws.Name = name
		ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, Conditions: kcpConditions}
		return ws
	}
	k := newFakeKCP(workspace("a"), workspace("b"))
	phases := map[string]string{"a": "Ready", "b": "Ready"}
	var lock sync.Mutex
	getMountObject := func(_ context.Context, _ logicalcluster.Name, _ restmapping.Resource, _, name string) (*unstructured.Unstructured, error) {
		lock.Lock()
		defer lock.Unlock()
		obj := mountObject(map[string]interface{}{"phase": phases[name], "URL": "https://mounts.example/" + name})
		obj.SetName(name)
		return obj, nil
	}
	one := intstr.FromInt32(1)
	c, indexer := testController(k, RoutingOptions{WorkspaceCondition: true, MaxUnavailable: &one}, getMountObject)
	var enqueued []string
	c.unavailable = newUnavailableGate(&one, "test-"+t.Name(), func() int { return 2 }, keyTenant(c.tenantOf), func(key string) { enqueued = append(enqueued, key) })
	var recorded []recordedEvent
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c.events = eventsTo(10, &recorded, &now)
	gateEvents := func() []string {
		var events []string
		for _, e := range recorded {
			if e.reason == mount.ReasonGateHeld || e.reason == EventReasonGateReleased {
				events = append(events, e.regarding.Name+" "+e.eventType+" "+e.reason+": "+e.note)
			}
		}
		return events
	}
	ctx := context.Background()

	keyA, keyB := syncCache(t, k, indexer, "a"), syncCache(t, k, indexer, "b")
	require.NoError(t, c.processWorkspace(ctx, keyA))
	require.NoError(t, c.processWorkspace(ctx, keyB))
	lock.Lock()
	phases["a"], phases["b"] = "Connecting", "Connecting"
	lock.Unlock()
	keyA, keyB = syncCache(t, k, indexer, "a"), syncCache(t, k, indexer, "b")
	require.NoError(t, c.processWorkspace(ctx, keyA))
	require.NoError(t, c.processWorkspace(ctx, keyB))
	a, b := k.workspaces["a"], k.workspaces["b"]
	require.Equal(t, corev1.ConditionFalse, ownCondition(a).Status)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, a.Status.Phase)
	held := ownCondition(b)
	require.Equal(t, corev1.ConditionUnknown, held.Status)
	require.Equal(t, mount.ReasonGateHeld, held.Reason)
	require.Empty(t, held.Severity)
	require.True(t, strings.HasPrefix(held.Message, "KubeCluster b (contrib.kcp.io/v1alpha1) is Connecting. Not False: as many Workspaces"), held.Message)
	require.Contains(t, held.Message, "--max-unavailable=1 allows")
	require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, b.Status.Phase, "kcp keeps routing it")
	require.Equal(t, "Connecting", b.Annotations[mount.PhaseAnnotationKey], "the annotation tells the mount's own state")

	require.Equal(t, []string{"b Warning GateHeld: The mount is Connecting (MountNotReady). Not False: as many Workspaces of this shard as --max-unavailable=1 allows already have WorkspaceMountAvailable False, shared fairly between tenants; kcp keeps the Workspace Ready and sends its requests to its spec.URL."},
		gateEvents(), "held: one event")

	patches := len(k.patches)
	keyB = syncCache(t, k, indexer, "b")
	require.NoError(t, c.processWorkspace(ctx, keyB))
	require.Len(t, k.patches, patches, "a Workspace that stays held is not written again")

	lock.Lock()
	phases["a"] = "Ready"
	lock.Unlock()
	keyA = syncCache(t, k, indexer, "a")
	require.NoError(t, c.processWorkspace(ctx, keyA))
	require.Equal(t, corev1.ConditionTrue, ownCondition(k.workspaces["a"]).Status)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, k.workspaces["a"].Status.Phase)
	require.Equal(t, []string{keyB}, enqueued, "the held Workspace is offered the slot")
	require.NoError(t, c.processWorkspace(ctx, keyB))
	b = k.workspaces["b"]
	require.Equal(t, corev1.ConditionFalse, ownCondition(b).Status)
	require.Equal(t, mount.ReasonMountNotReady, ownCondition(b).Reason)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, b.Status.Phase)
	require.Len(t, gateEvents(), 2, "staying held is no event; released is one")
	require.Equal(t, "b Normal GateReleased: No longer held by --max-unavailable: the mount is Connecting (MountNotReady), and WorkspaceMountAvailable says so.", gateEvents()[1])

	t.Log("a held Workspace again, then both deleted: the gate forgets them, the slot is free")
	require.False(t, c.unavailable.admit("root:org|c"))
	require.Equal(t, 2, c.unavailable.len())
	c.mountsQueue, c.workspacesQueue = newQueue(""), newQueue("")
	c.handleWorkspace(k.workspaces["b"], nil)
	require.Equal(t, 1, c.unavailable.len(), "the delete handler forgot b; c is held")
	require.True(t, c.unavailable.admit("root:org|c"), "b's slot is free")
	c.forget("root:org|c")
	require.Zero(t, c.unavailable.len())
}

// TestGateDelay: a mount turning not ready is Unknown GateDelayed until the
// delay is over (a reconcile is asked for then), False after; one that
// recovers before is True, never False. At level 3, kcp's own condition
// follows.
func TestGateDelay(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	notReady := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, Message: "KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting."}
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, Message: "ready"}
	c := &Controller{mountObjects: NewMountObjectIndex(mount.Rule{}), workspaces: &workspacesReconciler{routing: RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true, ConditionDelay: 30 * time.Second}}}

	reconcile := func(ws *tenancyv1alpha1.Workspace, status mount.Status, at metav1.Time) (*tenancyv1alpha1.Workspace, mountState) {
		state := mountState{status: status, mounted: true, at: at}
		c.gate("root:org|mounted", ws, &state)
		ws = ws.DeepCopy()
		c.workspaces.applyMetadataAndSpec(ws, state)
		c.workspaces.applyStatus(ws, state)
		return ws, state
	}
	ws := mountedWorkspace(kubeClusterRef)
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	ws, _ = reconcile(ws, ready, metav1.NewTime(at.Add(-time.Hour)))
	require.Equal(t, corev1.ConditionTrue, ownCondition(ws).Status)

	t.Log("not ready: delayed, the whole delay to wait")
	delayed, state := reconcile(ws, notReady, at)
	require.Equal(t, 30*time.Second, state.recheckAfter)
	condition := ownCondition(delayed)
	require.Equal(t, corev1.ConditionUnknown, condition.Status)
	require.Equal(t, mount.ReasonGateDelayed, condition.Reason)
	require.Equal(t, "KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting. Not False before the mount has been not ready for 30s "+
		"(--workspace-condition-delay; not ready since 2026-12-01T10:00:00Z): until then kcp keeps the Workspace Ready and sends its requests to its spec.URL.",
		condition.Message)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, delayed.Status.Phase)
	kcpCondition := findCondition(delayed, tenancyv1alpha1.MountConditionReady)
	require.Equal(t, corev1.ConditionUnknown, kcpCondition.Status, "kcp's own condition does not take it out of traffic either")
	require.Equal(t, mount.ReasonGateDelayed, kcpCondition.Reason)

	t.Log("10s later, the same: no write (nothing changed), 20s to wait")
	again, state := reconcile(delayed, notReady, metav1.NewTime(at.Add(10*time.Second)))
	require.Equal(t, 20*time.Second, state.recheckAfter)
	requireSemanticEqual(t, delayed.Status, again.Status)
	requireSemanticEqual(t, delayed.Annotations, again.Annotations)

	t.Log("recovered before the delay: True, never False")
	recovered, state := reconcile(delayed, ready, metav1.NewTime(at.Add(20*time.Second)))
	require.Zero(t, state.recheckAfter)
	require.Equal(t, corev1.ConditionTrue, ownCondition(recovered).Status)

	t.Log("the delay over: False, Unavailable")
	over, state := reconcile(delayed, notReady, metav1.NewTime(at.Add(30*time.Second)))
	require.Zero(t, state.recheckAfter)
	require.Equal(t, corev1.ConditionFalse, ownCondition(over).Status)
	require.Equal(t, mount.ReasonMountNotReady, ownCondition(over).Reason)
	require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, over.Status.Phase)
	require.Equal(t, corev1.ConditionFalse, findCondition(over, tenancyv1alpha1.MountConditionReady).Status)

	t.Log("another not-ready phase moves the annotation's time: it stays False")
	notFound := mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, Message: "gone"}
	gone, state := reconcile(over, notFound, metav1.NewTime(at.Add(40*time.Second)))
	require.Zero(t, state.recheckAfter)
	require.Equal(t, corev1.ConditionFalse, ownCondition(gone).Status)
}

// createdAt sets the creationTimestamp of ws.
func createdAt(ws *tenancyv1alpha1.Workspace, created metav1.Time) *tenancyv1alpha1.Workspace {
	ws.CreationTimestamp = created
	return ws
}

func findCondition(ws *tenancyv1alpha1.Workspace, t conditionsv1alpha1.ConditionType) *conditionsv1alpha1.Condition {
	for i := range ws.Status.Conditions {
		if ws.Status.Conditions[i].Type == t {
			return &ws.Status.Conditions[i]
		}
	}
	return nil
}

// FuzzParseMaxUnavailable: any value is refused with an error, or parsed
// to a limit that parses the same once written, and bounds a shard of any size to
// between 0 and its mounted Workspaces (a percentage) or the number itself.
func FuzzParseMaxUnavailable(f *testing.F) {
	for _, seed := range []string{"", "0", "1", "10%", "100%", "101%", "-1", "+1", "1.5%", "%", "2147483647", "2147483648", "0x10", "1e3", "10 %", "00", "010%"} {
		f.Add(seed, 25)
	}
	f.Fuzz(func(t *testing.T, value string, mounted int) {
		v, err := ParseMaxUnavailable(value)
		if err != nil {
			require.Nil(t, v)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", value))
			return
		}
		if value == "" {
			require.Nil(t, v)
			return
		}
		again, err := ParseMaxUnavailable(v.String())
		require.NoError(t, err, "written as %q", v.String())
		require.Equal(t, v, again, "the same limit once written")
		mounted = max(mounted, 0) % 1_000_000
		limit := unavailableLimit(*v, mounted)
		require.GreaterOrEqual(t, limit, 0)
		if v.Type == intstr.String {
			require.LessOrEqual(t, limit, mounted)
		} else {
			require.Equal(t, v.IntValue(), limit)
		}
	})
}

// TestGateNeverReadyTakesNoSlot: a mount never ready since its Workspace
// was created (the object not found from the start) is False without a slot
// of --max-unavailable; one ready once takes one.
func TestGateNeverReadyTakesNoSlot(t *testing.T) {
	t.Parallel()
	one := intstr.FromInt32(1)
	c := &Controller{mountObjects: NewMountObjectIndex(mount.Rule{}), workspaces: &workspacesReconciler{routing: RoutingOptions{WorkspaceCondition: true, MaxUnavailable: &one}}}
	c.unavailable = newUnavailableGate(&one, "test-"+t.Name(), func() int { return 10 }, testKeyTenant, func(string) {})
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	notFound := mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, Message: "gone"}
	for i := range 4 {
		ws := mountedWorkspace(kubeClusterRef)
		ws.Annotations[mount.StatusAnnotationKey] = notFound.WithHistory(nil, at).Encode()
		state := mountState{status: notFound, mounted: true, at: at}
		c.gate(fmt.Sprintf("org-a|throwaway-%d", i), ws, &state)
		require.Zero(t, state.gate, "False, without a slot")
	}
	require.Zero(t, c.unavailable.len())

	ws := mountedWorkspace(kubeClusterRef)
	setEverReady(ws)
	state := mountState{status: notFound, mounted: true, at: at}
	c.gate("org-b|serving", ws, &state)
	require.Equal(t, gateVerdict{slot: true}, state.gate, "the slot is free for a Workspace that served")

	t.Log("a forged history of a ready mount older than the Workspace does not count")
	forged := mountedWorkspace(kubeClusterRef)
	setEverReady(forged)
	forged.CreationTimestamp = at
	state = mountState{status: notFound, mounted: true, at: at}
	c.gate("org-a|forged", forged, &state)
	require.Zero(t, state.gate)
}

// TestHistoryBeforeCreationDropped: a status annotation forged back to 1970
// feeds no histogram and is not carried on: what the controller writes
// starts no earlier than the Workspace's creation.
func TestHistoryBeforeCreationDropped(t *testing.T) {
	t.Parallel()
	created := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	epoch := metav1.NewTime(time.Unix(0, 0).UTC())
	r := &workspacesReconciler{}
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, Message: "ready"}
	notReady := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, Message: "connecting"}

	ws := mountedWorkspace(kubeClusterRef)
	ws.CreationTimestamp = created
	ws.Annotations[mount.StatusAnnotationKey] = mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady,
		LastTransitionTime: metav1.NewTime(created.Add(time.Minute)), Since: &epoch,
		History: []mount.Transition{{Phase: mount.PhaseReady, Ready: true, Time: epoch}, {Phase: mount.PhaseConnecting, Time: metav1.NewTime(epoch.Add(time.Second))}}}.Encode()
	at := metav1.NewTime(created.Add(time.Hour))
	r.applyAnnotations(ws, mountState{status: ready, mounted: true, at: at})
	written, err := mount.ParseStatus(ws.Annotations[mount.StatusAnnotationKey])
	require.NoError(t, err)
	for _, tr := range written.History {
		require.False(t, tr.Time.Before(&created), "transition at %s kept", tr.Time)
	}
	firstSeen := written.FirstSeen()
	require.True(t, firstSeen.Equal(&created), "first seen %s", firstSeen)
	_, spell := written.NotReadySpell()
	require.False(t, spell, "the ready state of 1970 is gone: no not-ready spell to observe")
	took, first := written.TimeToReady()
	require.True(t, first)
	require.Equal(t, time.Hour, took, "time to ready counts from the creation, not 1970")

	t.Log("a lastTransitionTime before the creation: the status starts over")
	ws.Annotations[mount.StatusAnnotationKey] = notReady.WithHistory(nil, epoch).Encode()
	r.applyAnnotations(ws, mountState{status: ready, mounted: true, at: at})
	written, err = mount.ParseStatus(ws.Annotations[mount.StatusAnnotationKey])
	require.NoError(t, err)
	require.Empty(t, written.History)
	require.True(t, written.LastTransitionTime.Equal(&at))
}
