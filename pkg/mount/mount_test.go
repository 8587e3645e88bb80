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

package mount

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// TestReferenceOf runs every case with both rules: with the legacy
// annotation honoured, the case's own answer; without, a Workspace whose
// mount is the legacy annotation (legacy) is not mounted at all.
func TestReferenceOf(t *testing.T) {
	t.Parallel()
	ref := Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "a"}
	for _, tc := range []struct {
		name        string
		ws          tenancyv1alpha1.Workspace
		want        Reference
		wantErr     string
		wantMounted bool
		// legacy: the mount is the legacy annotation's.
		legacy bool
	}{
		{name: "not mounted", wantErr: ErrNotMounted.Error()},
		{
			name: "spec.mount", wantMounted: true, want: ref,
			ws: tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference(ref)}}},
		},
		{
			name: "spec.mount wins over the legacy annotation", wantMounted: true, want: ref,
			ws: tenancyv1alpha1.Workspace{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LegacyAnnotationKey: `{"spec":{"ref":{"apiVersion":"example.io/v1","kind":"Other","name":"b"}}}`}},
				Spec:       tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference(ref)}},
			},
		},
		{
			name: "legacy annotation", wantMounted: true, legacy: true, want: Reference{APIVersion: "example.io/v1", Kind: "Other", Name: "b", Namespace: "ns"},
			ws: tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				LegacyAnnotationKey: `{"spec":{"ref":{"apiVersion":"example.io/v1","kind":"Other","name":"b","namespace":"ns"}},"status":{"phase":"Ready"}}`,
			}}},
		},
		{
			name: "kcp's Workspace", wantMounted: true, wantErr: "Workspace of tenancy.kcp.io/v1alpha1 is not a mount kind",
			want: Reference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "ws-ready"},
			ws: tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
				APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "ws-ready",
			}}}},
		},
		{
			name: "legacy annotation, a ConfigMap", wantMounted: true, legacy: true, wantErr: "the kinds of the core group are kcp's or Kubernetes' own",
			want: Reference{APIVersion: "v1", Kind: "ConfigMap", Name: "b", Namespace: "ns"},
			ws: tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				LegacyAnnotationKey: `{"spec":{"ref":{"apiVersion":"v1","kind":"ConfigMap","name":"b","namespace":"ns"}}}`,
			}}},
		},
		{
			name: "legacy annotation, empty", wantMounted: true, legacy: true, wantErr: "not valid JSON",
			ws: tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LegacyAnnotationKey: ""}}},
		},
		{
			name: "legacy annotation, JSON of another shape", wantMounted: true, legacy: true, wantErr: "not valid JSON",
			ws: tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{LegacyAnnotationKey: `{"spec":[]}`}}},
		},
		{
			name: "apiVersion without version", wantMounted: true, wantErr: "invalid apiVersion", want: Reference{APIVersion: "/", Kind: "K", Name: "n"},
			ws: tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "/", Kind: "K", Name: "n"}}}},
		},
		{
			name: "missing fields", wantMounted: true, wantErr: "no apiVersion, kind, name",
			ws: tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{}}},
		},
	} {
		for _, rule := range []Rule{{LegacyAnnotation: true}, {}} {
			t.Run(fmt.Sprintf("%s, legacy annotation honoured %v", tc.name, rule.LegacyAnnotation), func(t *testing.T) {
				t.Parallel()
				want, wantErr, wantMounted := tc.want, tc.wantErr, tc.wantMounted
				if tc.legacy && !rule.LegacyAnnotation {
					want, wantErr, wantMounted = Reference{}, ErrNotMounted.Error(), false
				}
				got, err := rule.ReferenceOf(&tc.ws)
				require.Equal(t, wantMounted, rule.IsMounted(&tc.ws))
				if wantErr != "" {
					require.ErrorContains(t, err, wantErr)
					require.Equal(t, wantMounted, !errors.Is(err, ErrNotMounted))
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, want, got)
			})
		}
	}
}

func TestGroupAllowed(t *testing.T) {
	t.Parallel()
	for group, want := range map[string]bool{
		// kcp's own
		"tenancy.kcp.io": false, "core.kcp.io": false, "apis.kcp.io": false, "topology.kcp.io": false, "cache.kcp.io": false,
		// Kubernetes' own
		"": false, "apps": false, "autoscaling": false, "batch": false, "extensions": false, "policy": false,
		"rbac.authorization.k8s.io": false, "apiextensions.k8s.io": false, "coordination.k8s.io": false, "k8s.io": false,
		"gateway.networking.k8s.io": false,
		// tenants'
		"contrib.kcp.io": true, "mounts.contrib.kcp.io": true, "kcp.io": true, "example.io": true, "apps.example.io": true,
		"k8s.io.example.com": true, "xk8s.io": true, "policy.example.com": true, "cert-manager.io": true,
	} {
		require.Equal(t, want, GroupAllowed(group), "group %q", group)
	}
}

func TestIsMarked(t *testing.T) {
	t.Parallel()
	require.True(t, IsMarked(map[string]string{IsMountAnnotationKey: "true"}))
	for _, annotations := range []map[string]string{nil, {}, {IsMountAnnotationKey: ""}, {IsMountAnnotationKey: "True"}, {IsMountAnnotationKey: "yes"}, {"is-mount": "true"}} {
		require.False(t, IsMarked(annotations), "%v", annotations)
	}
	require.LessOrEqual(t, len(UnmarkedNote), MaxMessage/4, "the note leaves room for the rest of a message")
}

func TestStatusRoundTrip(t *testing.T) {
	t.Parallel()
	s := Status{
		Phase: PhaseConnecting, URL: "https://x", Reason: ReasonMountNotReady, Message: "m.",
		MountRef:           Reference{APIVersion: "v1", Kind: "K", Name: "n"},
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)),
		Conditions:         []Condition{{Type: "Ready", Status: "False"}},
	}
	encoded := s.Encode()
	require.JSONEq(t, `{"phase":"Connecting","ready":false,"url":"https://x","reason":"MountNotReady","message":"m.",
		"mountRef":{"apiVersion":"v1","kind":"K","name":"n"},"lastTransitionTime":"2026-11-29T01:02:03Z",
		"conditions":[{"type":"Ready","status":"False"}]}`, encoded)
	parsed, found := StatusOf(map[string]string{StatusAnnotationKey: encoded})
	require.True(t, found)
	require.Equal(t, encoded, parsed.Encode())

	_, found = StatusOf(map[string]string{StatusAnnotationKey: "{"})
	require.False(t, found)
	_, found = StatusOf(nil)
	require.False(t, found)
}
