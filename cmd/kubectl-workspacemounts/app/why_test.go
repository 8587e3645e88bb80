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

package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

func at(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }

// flapping is a mount that flapped: Ready, Connecting, Ready, Connecting.
func flapping() *wsmv1alpha1.WorkspaceMount {
	m := wsMount("org", "team-a", "Connecting", "MountNotReady", false, 5*time.Minute)
	m.Status.WorkspacePhase = "Unavailable"
	m.Status.WorkspacePath = "root:org:team-a"
	m.Status.Message = "KubeCluster team-a-cluster is Connecting: the agent has not connected yet"
	m.Status.Conditions = []wsmv1alpha1.MountCondition{
		{Type: "AgentConnected", Status: "False", Reason: "NoHeartbeat", Message: "the agent has not connected yet"},
		{Type: "Ready", Status: "False"},
	}
	m.Status.Transitions = []wsmv1alpha1.MountTransition{
		{Phase: "Ready", Ready: true, Reason: "MountReady", Time: at(3 * time.Hour)},
		{Phase: "Connecting", Ready: false, Reason: "MountNotReady", Time: at(2 * time.Hour)},
		{Phase: "Ready", Ready: true, Reason: "MountReady", Time: at(90 * time.Minute)},
		{Phase: "Connecting", Ready: false, Reason: "MountNotReady", Time: at(5 * time.Minute)},
	}
	m.Status.Availability = &wsmv1alpha1.MountAvailability{
		Since: at(3 * time.Hour), ReadySeconds: 30*60 + 85*60, ObservedSeconds: 175 * 60,
	}
	return &m
}

// wsUID is the UID of team-a, the Workspace of why's tests.
const wsUID = types.UID("3f1c2a9e-team-a")

func kcpWorkspace(mounted bool) *tenancyv1alpha1.Workspace {
	ws := workspace("org", "team-a", mounted, "Unavailable")
	ws.UID = wsUID
	ws.Status.Conditions = conditionsv1alpha1.Conditions{
		{Type: "WorkspaceMountAvailable", Status: "False", Severity: conditionsv1alpha1.ConditionSeverityError, Reason: "MountNotReady", Message: "KubeCluster team-a-cluster is Connecting", LastTransitionTime: at(5 * time.Minute)},
		{Type: "WorkspaceScheduled", Status: "True", LastTransitionTime: at(3 * time.Hour)},
	}
	return &ws
}

// regarding is a reference to a Workspace named team-a with uid.
func regarding(uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "team-a", UID: uid}
}

// events are the events of the cluster holding team-a: the controller's
// regarding it, and others' or regarding another team-a, which why does
// not show.
func events() []corev1.Event {
	return []corev1.Event{
		{InvolvedObject: regarding(wsUID), Type: "Warning", Reason: "MountNotReady", Message: "KubeCluster team-a-cluster is Connecting", ReportingController: reportingController,
			EventTime: metav1.NewMicroTime(now.Add(-2 * time.Hour)), Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Minute))}},
		{InvolvedObject: regarding(wsUID), Type: "Normal", Reason: "MountReady", Message: "the mount is ready", ReportingController: reportingController,
			EventTime: metav1.NewMicroTime(now.Add(-90 * time.Minute))},
		// Anyone who may create events in the cluster may write this one: escapes and new lines are blanked.
		{InvolvedObject: regarding(wsUID), Type: "Normal", Reason: "Hostile\x1b[2J", Message: "line one\nline two \x1b]8;;http://evil\x07click\u202e", ReportingController: reportingController,
			LastTimestamp: at(time.Hour), FirstTimestamp: at(time.Hour), Count: 1},
		// Another controller's, and the events of a team-a deleted and created again: not shown.
		{InvolvedObject: regarding(wsUID), Type: "Warning", Reason: "Forged", Message: "another controller's", Source: corev1.EventSource{Component: "someone"},
			LastTimestamp: at(time.Minute), Count: 1},
		{InvolvedObject: regarding(wsUID), Type: "Warning", Reason: "Forged", Message: "another controller's", ReportingController: "workspacemounts.io/controller-not",
			LastTimestamp: at(time.Minute), Count: 1},
		{InvolvedObject: regarding("an-older-team-a"), Type: "Warning", Reason: "MountNotReady", Message: "the previous team-a's", ReportingController: reportingController,
			LastTimestamp: at(time.Minute), Count: 1},
		{InvolvedObject: corev1.ObjectReference{Kind: "KubeCluster", Name: "team-a", UID: wsUID}, Type: "Warning", Reason: "Forged", Message: "not a Workspace", ReportingController: reportingController,
			LastTimestamp: at(time.Minute), Count: 1},
	}
}

// workspaceEvents are events as why lists them: through WorkspaceEvents,
// from a server that ignores the field selector.
func workspaceEvents(t *testing.T, all []corev1.Event) []corev1.Event {
	t.Helper()
	got, cut, err := WorkspaceEvents(context.Background(), func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.EventList{Items: append([]corev1.Event(nil), all...)}, nil
	}, "team-a", wsUID)
	require.NoError(t, err)
	require.False(t, cut)
	return got
}

func TestRenderWhyGolden(t *testing.T) {
	t.Parallel()
	path := logicalcluster.NewPath("root:org:team-a")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "workspacemounts.io", Resource: "workspacemounts"}, "team-a")
	for _, tc := range []struct {
		file   string
		report WhyReport
	}{
		{file: "why-flapping.golden", report: WhyReport{Path: path, Mount: flapping(), Workspace: kcpWorkspace(true), Events: workspaceEvents(t, events())}},
		{file: "why-ready-no-history.golden", report: WhyReport{Path: path, Mount: func() *wsmv1alpha1.WorkspaceMount {
			m := wsMount("org", "team-a", "Ready", "MountReady", true, 26*time.Hour)
			m.Status.URL = "https://mount.example.com/clusters/team-a"
			m.Status.Shard = "root"
			return &m
		}(), Workspace: func() *tenancyv1alpha1.Workspace {
			ws := kcpWorkspace(true)
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
			ws.Status.Conditions = nil
			return ws
		}()}},
		{file: "why-not-mounted.golden", report: WhyReport{Path: path, MountErr: nil, Workspace: kcpWorkspace(false), EventsErr: forbidden}},
		{file: "why-not-served.golden", report: WhyReport{Path: path, MountErr: notFound, WorkspaceErr: apierrors.NewForbidden(schema.GroupResource{Resource: "workspaces"}, "team-a", errors.New("no")), EventsErr: forbidden}},
		{file: "why-vw-unreachable.golden", report: WhyReport{Path: path, MountErr: errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), Workspace: kcpWorkspace(true)}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			require.NoError(t, RenderWhy(&out, tc.report, now))
			requireClean(t, out.String())
			golden(t, tc.file, out.String())
		})
	}
}

func TestLatestEvents(t *testing.T) {
	t.Parallel()
	list := make([]corev1.Event, 0, 15)
	for i := range 15 {
		list = append(list, corev1.Event{Reason: strings.Repeat("x", i+1), LastTimestamp: at(time.Duration(i) * time.Minute)})
	}
	got := LatestEvents(list)
	require.Len(t, got, maxEvents)
	// Oldest first, the most recent last: the 10 of the last 10 minutes.
	require.Equal(t, strings.Repeat("x", 10), got[0].Reason)
	require.Equal(t, "x", got[maxEvents-1].Reason)
}

func TestParseWorkspaceArg(t *testing.T) {
	t.Parallel()
	current := logicalcluster.NewPath("root:org")
	for _, tc := range []struct {
		arg, wantParent, wantName, wantErr string
		current                            logicalcluster.Path
	}{
		{arg: "team-a", current: current, wantParent: "root:org", wantName: "team-a"},
		{arg: "root:other:team-b", current: current, wantParent: "root:other", wantName: "team-b"},
		{arg: "Team", current: current, wantErr: "neither"},
		{arg: "*", current: current, wantErr: "neither"},
		{arg: "", current: current, wantErr: "neither"},
		{arg: "team-a", wantErr: "give its path"},
	} {
		parent, name, err := ParseWorkspaceArg(tc.arg, tc.current)
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, tc.arg)
			continue
		}
		require.NoError(t, err, tc.arg)
		require.Equal(t, tc.wantParent, parent.String())
		require.Equal(t, tc.wantName, name)
	}
}
