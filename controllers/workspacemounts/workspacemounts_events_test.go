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
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// TestTransitionEvent: a change of phase or of ready is an event, Warning
// when not ready and Normal when ready, with the contract's reason and
// message; a new message alone is none.
func TestTransitionEvent(t *testing.T) {
	t.Parallel()
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, Message: "KubeCluster proxy is ready at https://a."}
	connecting := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, Message: "KubeCluster proxy is Connecting."}
	urlMissing := mount.Status{Phase: mount.PhaseReady, Reason: mount.ReasonMountURLMissing, Message: "KubeCluster proxy is Ready but has no status.URL."}
	notFound := mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, Message: "KubeCluster proxy does not exist."}
	for name, tc := range map[string]struct {
		before    mount.Status
		found     bool
		after     mount.Status
		eventType string
		none      bool
	}{
		"first status, ready":              {after: ready, eventType: corev1.EventTypeNormal},
		"first status, not ready":          {after: notFound, eventType: corev1.EventTypeWarning},
		"ready to not ready":               {before: ready, found: true, after: connecting, eventType: corev1.EventTypeWarning},
		"not ready to ready":               {before: connecting, found: true, after: ready, eventType: corev1.EventTypeNormal},
		"phase changes, still not ready":   {before: connecting, found: true, after: notFound, eventType: corev1.EventTypeWarning},
		"ready changes, same phase":        {before: ready, found: true, after: urlMissing, eventType: corev1.EventTypeWarning},
		"same phase and ready, new text":   {before: connecting, found: true, after: func() mount.Status { s := connecting; s.Message = "other"; return s }(), none: true},
		"same phase and ready, new reason": {before: urlMissing, found: true, after: func() mount.Status { s := urlMissing; s.Reason = mount.ReasonMountNotReady; return s }(), none: true},
		"unreadable status before":         {before: ready, found: false, after: ready, eventType: corev1.EventTypeNormal},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var previous *mount.Status
			if tc.found {
				previous = &tc.before
			}
			if tc.none {
				require.False(t, tc.after.TransitionFrom(previous))
				return
			}
			require.True(t, tc.after.TransitionFrom(previous))
			require.Equal(t, tc.eventType, transitionEventType(tc.after))
		})
	}
}

// TestRecordTransition: a Workspace's first status is an event unless it
// only says that its mount object is not ready yet; every later transition
// is one, a not-ready one too.
func TestRecordTransition(t *testing.T) {
	t.Parallel()
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, Message: "ready"}
	connecting := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, Message: "connecting"}
	notFound := mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, Message: "not found"}
	for name, tc := range map[string]struct {
		prior *mount.Status
		after mount.Status
		want  []string
	}{
		"first status, not ready yet":     {after: connecting},
		"first status, ready":             {after: ready, want: []string{"Normal MountReady"}},
		"first status, mount object gone": {after: notFound, want: []string{"Warning MountObjectNotFound"}},
		"not ready after ready":           {prior: &ready, after: connecting, want: []string{"Warning MountNotReady"}},
		"not ready after not found":       {prior: &notFound, after: connecting, want: []string{"Warning MountNotReady"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var recorded []recordedEvent
			now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			c := &Controller{events: eventsTo(10, &recorded, &now)}
			ws := eventWorkspace("root:org", "a", "uid-a")
			if tc.prior != nil {
				prior := *tc.prior
				prior.LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
				ws.Annotations[mount.StatusAnnotationKey] = prior.Encode()
			}
			c.recordTransition(ws, tc.after)
			got := make([]string, 0, len(recorded))
			for _, event := range recorded {
				got = append(got, event.eventType+" "+event.reason)
			}
			require.Equal(t, strings.Join(tc.want, ", "), strings.Join(got, ", "))
		})
	}
}

// recordedEvent is an event handed to the broadcaster.
type recordedEvent struct {
	regarding                       *corev1.ObjectReference
	eventType, reason, action, note string
}

// eventsTo returns a workspaceEvents handing its events to *recorded, at
// the time *now.
func eventsTo(maxPerHour int, recorded *[]recordedEvent, now *time.Time) *workspaceEvents {
	e := newWorkspaceEvents(maxPerHour, func(_ logicalcluster.Name, regarding *corev1.ObjectReference, eventType, reason, note string) {
		*recorded = append(*recorded, recordedEvent{regarding, eventType, reason, EventAction, note})
	})
	e.now = func() time.Time { return *now }
	return e
}

func eventWorkspace(cluster, name string, uid types.UID) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: uid, ResourceVersion: "42",
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
	}}
}

// TestProcessWorkspaceRecordsTransitions: the writes of processWorkspace
// that change the phase or ready are events regarding the Workspace (no
// resourceVersion, so that series can form), one per write even when a
// conflict made it try twice; a first status that only says the mount
// object is not ready yet, a new message in the same phase, and a steady
// state, are none.
func TestProcessWorkspaceRecordsTransitions(t *testing.T) {
	t.Parallel()
	ws := mountedWorkspace(kubeClusterRef)
	ws.UID = "uid-1"
	k := newFakeKCP(ws)
	status := map[string]interface{}{"phase": "Connecting"}
	c, indexer := testController(k, RoutingOptions{}, func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return mountObject(status), nil
	})
	var recorded []recordedEvent
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c.events = eventsTo(10, &recorded, &now)
	ctx := context.Background()
	process := func() {
		t.Helper()
		key := syncCache(t, k, indexer, "mounted")
		require.NoError(t, c.processWorkspace(ctx, key))
	}

	process()
	process() // steady state
	status["conditions"] = []interface{}{map[string]interface{}{"type": "Ready", "status": "False", "reason": "Dialing"}}
	process() // a new message, the same phase
	status = map[string]interface{}{"phase": "Ready", "URL": "https://shard.example/clusters/target"}
	// Someone else writes first: the patch conflicts, the retry succeeds.
	key := syncCache(t, k, indexer, "mounted")
	k.workspaces["mounted"].ResourceVersion = "99"
	k.version = 99
	require.True(t, apierrors.IsConflict(c.processWorkspace(ctx, key)))
	require.NoError(t, c.processWorkspace(ctx, key))
	status = map[string]interface{}{"phase": "Connecting"}
	process() // not ready again: a transition

	require.Len(t, recorded, 2)
	ref := &corev1.ObjectReference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "mounted", UID: "uid-1"}
	require.Equal(t, recordedEvent{ref, corev1.EventTypeNormal, mount.ReasonMountReady, EventAction,
		"KubeCluster proxy (contrib.kcp.io/v1alpha1) is ready at https://shard.example/clusters/target."}, recorded[0])
	require.Equal(t, recordedEvent{ref, corev1.EventTypeWarning, mount.ReasonMountNotReady, EventAction,
		"KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting."}, recorded[1])
	cluster, found := c.events.clusterOf("uid-1")
	require.True(t, found)
	require.Equal(t, logicalcluster.Name("root:org"), cluster)
}

// TestRecordEventBoundsItsText: reason and note are sanitized and cut to
// the events API's limits; with events off nothing is recorded.
func TestRecordEventBoundsItsText(t *testing.T) {
	t.Parallel()
	var recorded []recordedEvent
	now := time.Now()
	c := &Controller{events: eventsTo(10, &recorded, &now), mountObjects: NewMountObjectIndex(mount.Rule{})}
	ws := eventWorkspace("root:org", "a", "uid-a")
	c.recordEvent(ws, corev1.EventTypeWarning, "GateHeld\n", "line one\x1b[31m\u202e"+strings.Repeat("é", 2000)+" 100%s")
	require.Len(t, recorded, 1)
	require.Equal(t, "GateHeld ", recorded[0].reason)
	require.LessOrEqual(t, len(recorded[0].note), maxEventNote)
	require.True(t, strings.HasPrefix(recorded[0].note, "line one [31m "), recorded[0].note)
	require.True(t, strings.HasSuffix(recorded[0].note, mount.TruncationMarker))

	off := &Controller{mountObjects: NewMountObjectIndex(mount.Rule{})}
	off.recordEvent(ws, corev1.EventTypeWarning, "GateHeld", "held")
}

// TestWorkspaceEventsHourlyBound: at most maxPerHour events of one
// Workspace in any hour, each Workspace on its own; a dropped event is
// counted; a deleted Workspace is forgotten, its cluster with it, and one
// created again under the same name starts afresh.
func TestWorkspaceEventsHourlyBound(t *testing.T) {
	t.Parallel()
	var recorded []recordedEvent
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	e := eventsTo(3, &recorded, &now)
	dropped := &drops{}
	e.dropped = dropped.count
	a, b := eventWorkspace("root:org", "a", "uid-a"), eventWorkspace("root:other", "a", "uid-b")
	record := func(ws *tenancyv1alpha1.Workspace, at time.Duration) {
		now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(at)
		e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
	}
	record(a, 0)
	record(a, 10*time.Minute)
	record(a, 20*time.Minute)
	record(a, 30*time.Minute) // the fourth within the hour
	record(b, 30*time.Minute) // another Workspace (same name, another cluster)
	require.Len(t, recorded, 4)
	require.Equal(t, map[string]int{metrics.EventDropRateLimited: 1}, dropped.counted())

	record(a, 59*time.Minute) // the first is 59 minutes old: still the fourth
	record(a, 60*time.Minute) // the first is an hour old
	record(a, 61*time.Minute) // the second is 51 minutes old
	require.Len(t, recorded, 5)
	require.Equal(t, map[string]int{metrics.EventDropRateLimited: 3}, dropped.counted())

	cluster, found := e.clusterOf("uid-b")
	require.True(t, found)
	require.Equal(t, logicalcluster.Name("root:other"), cluster)
	e.forget("root:other|a")
	_, found = e.clusterOf("uid-b")
	require.False(t, found, "forgotten with the Workspace")
	_, found = e.byKey["root:other|a"]
	require.False(t, found)

	again := eventWorkspace("root:org", "a", "uid-a2") // deleted and created again, the delete not seen yet
	record(again, 62*time.Minute)
	require.Len(t, recorded, 6, "a new Workspace starts afresh")
	_, found = e.clusterOf("uid-a")
	require.False(t, found, "the old UID is forgotten")

	// Hours later, a quiet Workspace's entry holds no times.
	record(again, 5*time.Hour)
	require.Len(t, e.byKey["root:org|a"].times, 1)
	require.Len(t, e.byKey, 1)
	require.Len(t, e.clusters, 1)
}

// BenchmarkWorkspaceEventsMemory: what workspaceEvents keeps of 10,000
// Workspaces that each had DefaultMaxWorkspaceEventsPerHour events within
// the hour (full-B/workspace), of the same an hour later, each with one
// event (quiet-B/workspace), and once all are deleted (forgotten-B/workspace).
func BenchmarkWorkspaceEventsMemory(b *testing.B) {
	const n = 10000
	workspaces := make([]*tenancyv1alpha1.Workspace, n)
	keys := make([]string, n)
	for i := range workspaces {
		workspaces[i] = eventWorkspace("root:org"+strconv.Itoa(i%100), fmt.Sprintf("ws-%05d", i), types.UID(fmt.Sprintf("0b0c9a4e-6f1d-4c1e-9a39-%012d", i)))
		keys[i] = workspaces[i].Annotations[logicalcluster.AnnotationKey] + "|" + workspaces[i].Name
	}
	for b.Loop() {
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		e := newWorkspaceEvents(DefaultMaxWorkspaceEventsPerHour, func(logicalcluster.Name, *corev1.ObjectReference, string, string, string) {})
		e.now = func() time.Time { return now }
		before := liveHeap()
		for range DefaultMaxWorkspaceEventsPerHour {
			for _, ws := range workspaces {
				e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
			}
			now = now.Add(time.Minute)
		}
		full := liveHeap()
		now = now.Add(2 * time.Hour)
		for _, ws := range workspaces {
			e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
		}
		quiet := liveHeap()
		for _, key := range keys {
			e.forget(key)
		}
		forgotten := liveHeap()
		b.ReportMetric((float64(full)-float64(before))/n, "full-B/workspace")
		b.ReportMetric((float64(quiet)-float64(before))/n, "quiet-B/workspace")
		b.ReportMetric((float64(forgotten)-float64(before))/n, "forgotten-B/workspace")
		runtime.KeepAlive(e)
	}
}
