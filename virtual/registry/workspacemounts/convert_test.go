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
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

func TestFromWorkspace(t *testing.T) {
	t.Parallel()

	created := metav1.NewTime(time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC))
	transition := metav1.NewTime(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	ref := tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "kc", Namespace: "ns"}
	wantRef := wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "kc", Namespace: "ns"}
	status := mount.Status{
		Phase: mount.PhaseConnecting, Ready: false, URL: "https://kc.example.io", Reason: mount.ReasonMountNotReady,
		Message:  "KubeCluster ns/kc is Connecting.",
		MountRef: mount.Reference(ref), LastTransitionTime: transition,
		Conditions: []mount.Condition{
			{Type: "Ready", Status: "False", Reason: "Dialing", Message: "dialing the cluster"},
			{Type: "Synced", Status: "True"},
		},
	}

	base := func(annotations map[string]string) *tenancyv1alpha1.Workspace {
		all := map[string]string{logicalcluster.AnnotationKey: "root-cluster", "other.io/annotation": "kept out"}
		for k, v := range annotations {
			all[k] = v
		}
		return &tenancyv1alpha1.Workspace{
			ObjectMeta: metav1.ObjectMeta{
				Name: "team-a", UID: types.UID("uid-1"), ResourceVersion: "1234", Generation: 3,
				CreationTimestamp: created,
				Labels:            map[string]string{"team": "a"},
				Annotations:       all,
				Finalizers:        []string{"kept-out"},
			},
			Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady},
		}
	}
	wantMeta := metav1.ObjectMeta{
		Name: "team-a", UID: types.UID("uid-1"), ResourceVersion: "1234", CreationTimestamp: created,
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{logicalcluster.AnnotationKey: "root-cluster"},
	}
	typeMeta := metav1.TypeMeta{APIVersion: "workspacemounts.io/v1alpha1", Kind: "WorkspaceMount"}
	pending := wsmv1alpha1.WorkspaceMountStatus{
		Phase: "Unknown", Reason: ReasonPending, Message: "The workspacemounts controller has not reached this Workspace yet.",
		WorkspacePhase: "Ready",
	}

	// Each case runs with both rules: a Workspace mounted by the legacy
	// annotation (legacy) has a WorkspaceMount only with the annotation
	// honoured (--legacy-mount-annotation); the others the same with both.
	for _, tc := range []struct {
		name   string
		ws     func() *tenancyv1alpha1.Workspace
		want   *wsmv1alpha1.WorkspaceMount
		legacy bool
	}{
		{
			name: "not mounted",
			ws:   func() *tenancyv1alpha1.Workspace { return base(nil) },
		},
		{
			name: "not mounted, with a stale status annotation",
			ws: func() *tenancyv1alpha1.Workspace {
				return base(map[string]string{mount.StatusAnnotationKey: status.Encode()})
			},
		},
		{
			name: "spec.mount with a status",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := base(map[string]string{mount.StatusAnnotationKey: status.Encode(), mount.PhaseAnnotationKey: "Connecting"})
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: wsmv1alpha1.WorkspaceMountStatus{
					Phase: "Connecting", Ready: false, URL: "https://kc.example.io", Reason: "MountNotReady",
					Message: "KubeCluster ns/kc is Connecting.", LastTransitionTime: &transition,
					Conditions: []wsmv1alpha1.MountCondition{
						{Type: "Ready", Status: "False", Reason: "Dialing", Message: "dialing the cluster"},
						{Type: "Synced", Status: "True"},
					},
					WorkspacePhase: "Ready", // one state since first seen: no transitions, no availability
				},
			},
		},
		{
			name: "a history",
			ws: func() *tenancyv1alpha1.Workspace {
				s := mount.Status{Phase: mount.PhaseReady, Ready: true, URL: "https://u", Reason: mount.ReasonMountReady, MountRef: mount.Reference(ref),
					LastTransitionTime: transition,
					History:            []mount.Transition{{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, Time: metav1.NewTime(transition.Add(-time.Hour))}},
					Since:              &metav1.Time{Time: transition.Add(-2 * time.Hour)}, ReadySeconds: 1800}
				ws := base(map[string]string{mount.StatusAnnotationKey: s.Encode()})
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: wsmv1alpha1.WorkspaceMountStatus{
					Phase: "Ready", Ready: true, URL: "https://u", Reason: "MountReady", LastTransitionTime: &transition,
					Transitions: []wsmv1alpha1.MountTransition{
						{Phase: "Connecting", Reason: "MountNotReady", Time: metav1.NewTime(transition.Add(-time.Hour))},
						{Phase: "Ready", Ready: true, Reason: "MountReady", Time: transition},
					},
					// Up to lastTransitionTime: ready 1800 of 7200 seconds.
					Availability:   &wsmv1alpha1.MountAvailability{Since: metav1.NewTime(transition.Add(-2 * time.Hour)), ReadySeconds: 1800, ObservedSeconds: 7200},
					WorkspacePhase: "Ready",
				},
			},
		},
		{
			name: "ready, without conditions and transition time",
			ws: func() *tenancyv1alpha1.Workspace {
				s := mount.Status{Phase: mount.PhaseReady, Ready: true, URL: "https://u", Reason: mount.ReasonMountReady, MountRef: mount.Reference(ref)}
				ws := base(map[string]string{mount.StatusAnnotationKey: s.Encode()})
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				ws.Status.Phase = corev1alpha1.LogicalClusterPhaseInitializing
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: wsmv1alpha1.WorkspaceMountStatus{
					Phase: "Ready", Ready: true, URL: "https://u", Reason: "MountReady", WorkspacePhase: "Initializing",
				},
			},
		},
		{
			name: "spec.mount without a status annotation",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := base(nil)
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec:   wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: pending,
			},
		},
		{
			name: "spec.mount with an unreadable status annotation",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := base(map[string]string{mount.StatusAnnotationKey: "{not json"})
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec:   wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: pending,
			},
		},
		{
			name: "legacy annotation", legacy: true,
			ws: func() *tenancyv1alpha1.Workspace {
				return base(map[string]string{
					mount.LegacyAnnotationKey: `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"kc","namespace":"ns"}}}`,
				})
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec:   wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: pending,
			},
		},
		{
			name: "invalid legacy JSON, with a status naming the reference", legacy: true,
			ws: func() *tenancyv1alpha1.Workspace {
				s := mount.Status{Phase: mount.PhaseInvalid, Reason: mount.ReasonMountReferenceInvalid, Message: "bad", MountRef: mount.Reference(ref)}
				return base(map[string]string{mount.LegacyAnnotationKey: "{oops", mount.StatusAnnotationKey: s.Encode()})
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef},
				Status: wsmv1alpha1.WorkspaceMountStatus{
					Phase: "Invalid", Reason: "MountReferenceInvalid", Message: "bad", WorkspacePhase: "Ready",
				},
			},
		},
		{
			name: "invalid legacy JSON, without a status", legacy: true,
			ws: func() *tenancyv1alpha1.Workspace {
				return base(map[string]string{mount.LegacyAnnotationKey: "{oops"})
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Status: pending,
			},
		},
		{
			name: "invalid reference in spec.mount is still a mount",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := base(nil)
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "a/b/c", Kind: "K", Name: "n"}}
				return ws
			},
			want: &wsmv1alpha1.WorkspaceMount{
				TypeMeta: typeMeta, ObjectMeta: wantMeta,
				Spec:   wsmv1alpha1.WorkspaceMountSpec{MountRef: wsmv1alpha1.MountReference{APIVersion: "a/b/c", Kind: "K", Name: "n"}},
				Status: pending,
			},
		},
		{
			name: "workspace phase empty before scheduling",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := base(nil)
				ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: ref}
				ws.Status.Phase = ""
				return ws
			},
			want: func() *wsmv1alpha1.WorkspaceMount {
				p := pending
				p.WorkspacePhase = ""
				return &wsmv1alpha1.WorkspaceMount{
					TypeMeta: typeMeta, ObjectMeta: wantMeta,
					Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wantRef}, Status: p,
				}
			}(),
		},
	} {
		for _, rule := range []mount.Rule{{LegacyAnnotation: true}, {}} {
			t.Run(fmt.Sprintf("%s, legacy annotation honoured %v", tc.name, rule.LegacyAnnotation), func(t *testing.T) {
				t.Parallel()
				ws := tc.ws()
				pristine := ws.DeepCopy()
				got := FromWorkspace(rule, ws, logicalcluster.Path{})
				require.Equal(t, pristine, ws, "FromWorkspace changed the Workspace")
				if tc.want == nil || tc.legacy && !rule.LegacyAnnotation {
					require.Nil(t, got)
					return
				}
				// The time went through JSON: compare it as an instant, the rest exactly.
				if tc.want.Status.LastTransitionTime != nil {
					require.NotNil(t, got.Status.LastTransitionTime)
					require.True(t, tc.want.Status.LastTransitionTime.Equal(got.Status.LastTransitionTime),
						"lastTransitionTime %v, want %v", got.Status.LastTransitionTime, tc.want.Status.LastTransitionTime)
					got = got.DeepCopy()
					got.Status.LastTransitionTime = tc.want.Status.LastTransitionTime
				}
				for i := range got.Status.Transitions {
					got.Status.Transitions[i].Time = metav1.NewTime(got.Status.Transitions[i].Time.UTC())
				}
				if got.Status.Availability != nil {
					got.Status.Availability.Since = metav1.NewTime(got.Status.Availability.Since.UTC())
				}
				require.Equal(t, tc.want, got)
			})
		}
	}
}

func TestFromWorkspaceDoesNotAliasTheStatusTime(t *testing.T) {
	t.Parallel()
	ws := mounted("root", "a", mount.PhaseReady, nil)
	wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{})
	require.NotNil(t, wsm.Status.LastTransitionTime)
	wsm.Status.LastTransitionTime.Time = time.Time{}
	again := FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{})
	require.False(t, again.Status.LastTransitionTime.IsZero())
}

// TestFromWorkspaceWithItsClusterPath: the cluster's path is the annotation
// kcp.io/path, as kcp puts it on objects; joined with the name, the
// Workspace's own path.
func TestFromWorkspaceWithItsClusterPath(t *testing.T) {
	t.Parallel()
	ws := mounted("c1", "team-a", mount.PhaseReady, nil)
	wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.NewPath("root:org"))
	require.Equal(t, "root:org", wsm.Annotations["kcp.io/path"])
	require.Equal(t, "c1", wsm.Annotations[logicalcluster.AnnotationKey])
	require.Equal(t, "root:org:team-a", wsm.Status.WorkspacePath)

	wsm = FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{})
	require.NotContains(t, wsm.Annotations, "kcp.io/path")
	require.Empty(t, wsm.Status.WorkspacePath)
}

// TestFromWorkspaceClusterAnnotations: a WorkspaceMount carries its
// cluster, and its path once known, as kcp puts them on objects.
func TestFromWorkspaceClusterAnnotations(t *testing.T) {
	t.Parallel()
	path := logicalcluster.NewPath("root:shared")
	a := FromWorkspace(mount.Rule{}, mounted("c-shared", "a", mount.PhaseReady, nil), path)
	require.Equal(t, map[string]string{logicalcluster.AnnotationKey: "c-shared", "kcp.io/path": "root:shared"}, a.Annotations)
	unknown := FromWorkspace(mount.Rule{}, mounted("c-shared", "c", mount.PhaseReady, nil), logicalcluster.Path{})
	require.Equal(t, map[string]string{logicalcluster.AnnotationKey: "c-shared"}, unknown.Annotations)
	other := FromWorkspace(mount.Rule{}, mounted("c-other", "a", mount.PhaseReady, nil), path)
	require.Equal(t, "c-other", other.Annotations[logicalcluster.AnnotationKey])
}

// TestFromWorkspaceBoundsLabels: a WorkspaceMount keeps the labels
// mount.BoundedLabels keeps of its Workspace's, and counts the others, so
// that its JSON stays small whatever a tenant writes; label selectors see
// only those kept.
func TestFromWorkspaceBoundsLabels(t *testing.T) {
	t.Parallel()
	many := map[string]string{"zz-last": "x"}
	for i := range 1500 {
		many[fmt.Sprintf("team.tenant.example.io/label-%04d", i)] = "value"
	}
	ws := mounted("c1", "many", mount.PhaseReady, many)
	wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{})
	require.Len(t, wsm.Labels, mount.MaxLabels)
	require.Contains(t, wsm.Labels, "team.tenant.example.io/label-0063")
	require.NotContains(t, wsm.Labels, "zz-last")
	require.Equal(t, "1437", wsm.Annotations[mount.LabelsCutAnnotationKey])
	entry, err := newEntry(wsm)
	require.NoError(t, err)
	require.Less(t, len(entry.json), 8<<10, "the JSON the store keeps")

	// As the informer's transform left it: the count goes on.
	trimmed := ws.DeepCopy()
	trimmed.Labels, _ = mount.BoundedLabels(ws.Labels)
	trimmed.Annotations[mount.LabelsCutAnnotationKey] = "1437"
	require.Equal(t, wsm, FromWorkspace(mount.Rule{}, trimmed, logicalcluster.Path{}))

	few := FromWorkspace(mount.Rule{}, mounted("c1", "few", mount.PhaseReady, map[string]string{"team": "x"}), logicalcluster.Path{})
	require.Equal(t, map[string]string{"team": "x"}, few.Labels)
	require.NotContains(t, few.Annotations, mount.LabelsCutAnnotationKey)

	h := newHarness(t, ws, mounted("c1", "few", mount.PhaseReady, map[string]string{"zz-last": "x"}))
	h.flush()
	r := NewREST(h.store, allVisible)
	require.Equal(t, []string{"c1/few"}, names(list(t, r, "*", &metainternalversion.ListOptions{LabelSelector: mustParseLabels(t, "zz-last")})),
		"a label not kept is not selected")
	require.Equal(t, []string{"c1/many"}, names(list(t, r, "*", &metainternalversion.ListOptions{LabelSelector: mustParseLabels(t, "team.tenant.example.io/label-0000")})))
}
