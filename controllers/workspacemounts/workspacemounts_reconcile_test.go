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
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

var (
	kubeClusterGVK      = schema.GroupVersionKind{Group: "contrib.kcp.io", Version: "v1alpha1", Kind: "KubeCluster"}
	kubeClusterResource = restmapping.Resource{GroupVersionResource: kubeClusterGVK.GroupVersion().WithResource("kubeclusters"), Kind: "KubeCluster"}
	kubeClusterRef      = mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy"}
)

// reconcile sets, or removes, everything the controller owns on ws, which
// the caller owns (a copy), as processWorkspace's two patches do. An error
// means the mount object could not be read now: ws is left alone.
func (r *workspacesReconciler) reconcile(ctx context.Context, ws *tenancyv1alpha1.Workspace) error {
	state, err := r.mountState(ctx, ws)
	if err != nil {
		return err
	}
	r.applyMetadataAndSpec(ws, state)
	r.applyStatus(ws, state)
	return nil
}

func mountedWorkspace(ref mount.Reference) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "mounted",
			Annotations: map[string]string{logicalcluster.AnnotationKey: "root:org"},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference(ref)}},
	}
}

func legacyWorkspace(annotation string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name:        "legacy",
		Annotations: map[string]string{logicalcluster.AnnotationKey: "root:org", mount.LegacyAnnotationKey: annotation},
	}}
}

// mountObject is the KubeCluster proxy, marked as a mount object, with status.
func mountObject(status map[string]interface{}) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeCluster",
		"metadata": map[string]interface{}{
			"name":        "proxy",
			"annotations": map[string]interface{}{mount.IsMountAnnotationKey: mount.IsMountAnnotationValue},
		},
	}}
	if status != nil {
		obj.Object["status"] = status
	}
	return obj
}

// unmarked returns obj without the mark of a mount object (annotations
// given: those instead of the mark).
func unmarked(obj *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	obj.SetAnnotations(annotations)
	return obj
}

func servedEverywhere(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
	return kubeClusterResource, nil
}

// neverResolved is the resolver of a reference that must be refused before any request.
func neverResolved(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
	return restmapping.Resource{}, errors.New("must not be resolved")
}

func neverDenied(restmapping.Resource) bool { return false }

func returns(obj *unstructured.Unstructured, err error) func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
	return func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return obj, err
	}
}

// TestReconcileContract covers every row of the contract table, plus the
// reference checks around it.
func TestReconcileContract(t *testing.T) {
	t.Parallel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "contrib.kcp.io", Resource: "kubeclusters"}, "proxy")
	notServed := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
		return restmapping.Resource{}, restmapping.ErrKindNotServed
	}
	namespaced := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
		r := kubeClusterResource
		r.Namespaced = true
		return r, nil
	}

	for _, tc := range []struct {
		name          string
		ws            *tenancyv1alpha1.Workspace
		resolve       func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error)
		denied        bool // the resource has no informer slot
		object        *unstructured.Unstructured
		getErr        error
		wantPhase     mount.Phase
		wantReady     bool
		wantReason    string
		wantURL       string
		wantMessage   string // a part of the message
		wantErr       bool
		wantNoStatus  bool
		wantCondCount int
		wantAbsent    string // not anywhere in the status annotation
	}{
		{
			name: "ready with URL", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/clusters/x"}),
			wantPhase: mount.PhaseReady, wantReady: true, wantReason: mount.ReasonMountReady, wantURL: "https://proxy.example/clusters/x",
			wantMessage: "is ready at https://proxy.example/clusters/x",
		},
		{
			name: "ready without URL", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": "Ready"}),
			wantPhase: mount.PhaseReady, wantReason: mount.ReasonMountURLMissing, wantMessage: "no status.URL",
		},
		{
			name: "initializing", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": "Initializing"}),
			wantPhase: mount.PhaseInitializing, wantReason: mount.ReasonMountNotReady, wantMessage: "KubeCluster proxy (contrib.kcp.io/v1alpha1) is Initializing.",
		},
		{
			name: "connecting quotes the failing condition", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Connecting", "URL": "https://old", "conditions": []interface{}{
				map[string]interface{}{"type": "ClusterSecretReady", "status": "True"},
				map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "AgentDisconnected", "message": "no heartbeat for 5m"},
			}}),
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady, wantURL: "https://old",
			wantMessage: "is Connecting: condition ClusterReady is False (AgentDisconnected: no heartbeat for 5m)", wantCondCount: 2,
		},
		{
			name: "unknown", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": "Unknown"}),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountNotReady,
		},
		{
			name: "phase missing", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"URL": "https://x"}),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountPhaseUnrecognized, wantURL: "https://x", wantMessage: "no status.phase",
		},
		{
			name: "no status at all", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(nil),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountPhaseUnrecognized,
		},
		{
			name: "phase not a string", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": int64(3)}),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountPhaseUnrecognized, wantMessage: "not a string",
		},
		{
			name: "another word", ws: mountedWorkspace(kubeClusterRef),
			object:    mountObject(map[string]interface{}{"phase": "Connected"}),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountPhaseUnrecognized, wantMessage: `"Connected"`,
		},
		{
			name: "object does not exist", ws: mountedWorkspace(kubeClusterRef), getErr: notFound,
			wantPhase: mount.PhaseNotFound, wantReason: mount.ReasonMountObjectNotFound, wantMessage: "does not exist in cluster root:org",
		},
		{
			name: "kind not served", ws: mountedWorkspace(kubeClusterRef), resolve: notServed,
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountKindUnknown, wantMessage: "KubeCluster of contrib.kcp.io/v1alpha1 is not served in cluster root:org",
		},
		{
			name: "unparsable apiVersion", ws: mountedWorkspace(mount.Reference{APIVersion: "a/b/c", Kind: "KubeCluster", Name: "proxy"}),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `invalid apiVersion "a/b/c"`,
		},
		{
			name: "no name", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster"}),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "has no name",
		},
		{
			name: "namespaced kind without namespace", ws: mountedWorkspace(kubeClusterRef), resolve: namespaced,
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "is namespaced",
		},
		{
			name: "cluster-scoped kind with namespace", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy", Namespace: "default"}),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "is cluster-scoped",
		},
		{
			name:   "legacy annotation",
			ws:     legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}},"status":{"phase":"Ready","url":"https://stale"}}`),
			object: mountObject(map[string]interface{}{"phase": "Connecting"}),
			// The mount object, not the annotation's own status, is the truth.
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady,
		},
		{
			// What the plugin wrote while it honoured the annotation: without
			// --legacy-mount-annotation, it is removed.
			name: "legacy annotation, with what the plugin wrote",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`)
				ws.Annotations[mount.PhaseAnnotationKey] = string(mount.PhaseNotFound)
				ws.Annotations[mount.StatusAnnotationKey] = mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound}.Encode()
				return ws
			}(),
			object:    mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady,
		},
		{
			name: "legacy annotation with malformed JSON", ws: legacyWorkspace(`{"spec":`),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "the annotation experimental.tenancy.kcp.io/mount is not valid JSON",
		},
		{
			name: "legacy annotation without ref", ws: legacyWorkspace(`{"status":{}}`),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "has no spec.ref",
		},
		{
			name: "informer limit reached", ws: mountedWorkspace(kubeClusterRef), denied: true,
			object:    mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://x"}),
			wantPhase: mount.PhaseUnknown, wantReason: mount.ReasonMountInformerLimitReached,
			wantMessage: "at most 100 mount resources (--max-mount-informers)",
		},
		{
			name: "legacy annotation naming a/b", ws: legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `name "a/b" cannot be an object name`,
		},
		{
			name: "name ..", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: ".."}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `name ".." cannot be an object name`,
		},
		{
			name: "name with %", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "a%2Fb"}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "cannot be an object name",
		},
		{
			name: "name over 253 bytes", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: strings.Repeat("n", 254)}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: "is longer than 253 bytes",
		},
		{
			name: "namespace not a DNS-1123 label", ws: mountedWorkspace(mount.Reference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", Namespace: "Kube_System"}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `namespace "Kube_System" is not a DNS-1123 label`,
		},
		{
			name: "kind with a slash", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "Kube/Cluster", Name: "proxy"}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `kind "Kube/Cluster" is not a kind`,
		},
		{
			name: "group not a DNS-1123 subdomain", ws: mountedWorkspace(mount.Reference{APIVersion: "Contrib_KCP/v1alpha1", Kind: "KubeCluster", Name: "proxy"}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `the group "Contrib_KCP" of apiVersion`,
		},
		{
			name: "a 20,000-byte kind: a short message", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: strings.Repeat("K", 20000), Name: "proxy"}),
			getErr:    errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountReferenceInvalid, wantMessage: `KKK..." is not a kind`,
		},
		{
			name: "conditions with 20,000-byte types and reasons are cut", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
				map[string]interface{}{"type": strings.Repeat("T", 20000), "status": strings.Repeat("False", 5000), "reason": strings.Repeat("R", 20000), "message": strings.Repeat("M", 20000)},
			}}),
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady, wantCondCount: 1, wantMessage: "TTT... is FalseFalseFal...",
		},
		{
			name: "unmarked: no conditions, no quote, how to mark it", ws: mountedWorkspace(kubeClusterRef),
			object: unmarked(mountObject(map[string]interface{}{"phase": "Connecting", "URL": "https://old", "conditions": []interface{}{
				map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "AgentDisconnected", "message": "another team's secret"},
			}}), nil),
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady, wantURL: "https://old",
			wantMessage: "KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting. " + mount.UnmarkedNote, wantAbsent: "another team's secret",
		},
		{
			name: "unmarked ready: phase, URL and reason", ws: mountedWorkspace(kubeClusterRef),
			object: unmarked(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example", "conditions": []interface{}{
				map[string]interface{}{"type": "Ready", "status": "True", "message": "another team's secret"},
			}}), map[string]string{"team": "b"}),
			wantPhase: mount.PhaseReady, wantReady: true, wantReason: mount.ReasonMountReady, wantURL: "https://proxy.example",
			wantMessage: `experimental.tenancy.kcp.io/is-mount: "true"`, wantAbsent: "another team's secret",
		},
		{
			name: "is-mount other than \"true\" is unmarked", ws: mountedWorkspace(kubeClusterRef),
			object: unmarked(mountObject(map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
				map[string]interface{}{"type": "ClusterReady", "status": "False", "message": "another team's secret"},
			}}), map[string]string{mount.IsMountAnnotationKey: "True"}),
			wantPhase: mount.PhaseConnecting, wantReason: mount.ReasonMountNotReady, wantMessage: mount.UnmarkedNote, wantAbsent: "another team's secret",
		},
		{
			name: "unmarked, the longest reference and URL: the message is cut, the note is whole",
			ws: mountedWorkspace(mount.Reference{
				APIVersion: strings.Repeat(strings.Repeat("g", 63)+".", 3) + strings.Repeat("g", 61) + "/v1",
				Kind:       strings.Repeat("K", 63), Name: strings.Repeat("n", 253), Namespace: strings.Repeat("s", 63),
			}),
			resolve:   namespaced,
			object:    unmarked(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://" + strings.Repeat("u", 3000)}), nil),
			wantPhase: mount.PhaseReady, wantReady: true, wantReason: mount.ReasonMountReady,
			wantURL:     "https://" + strings.Repeat("u", mount.MaxURL-len("https://")-len(mount.TruncationMarker)) + mount.TruncationMarker,
			wantMessage: "... " + mount.UnmarkedNote,
		},
		{
			name: "tenancy.kcp.io Workspace is not a mount kind", ws: mountedWorkspace(mount.Reference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "ws-ready"}),
			resolve: neverResolved, getErr: errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountKindNotAllowed,
			wantMessage: "Workspace of tenancy.kcp.io/v1alpha1 is not a mount kind: the kinds of tenancy.kcp.io are kcp's or Kubernetes' own",
		},
		{
			name: "core v1 ConfigMap is not a mount kind", ws: mountedWorkspace(mount.Reference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", Namespace: "default"}),
			resolve: neverResolved, getErr: errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountKindNotAllowed, wantMessage: "the kinds of the core group",
		},
		{
			name: "legacy annotation naming apps Deployment", ws: legacyWorkspace(`{"spec":{"ref":{"apiVersion":"apps/v1","kind":"Deployment","name":"d","namespace":"default"}}}`),
			resolve: neverResolved, getErr: errors.New("must not be read"),
			wantPhase: mount.PhaseInvalid, wantReason: mount.ReasonMountKindNotAllowed, wantMessage: "fix the annotation experimental.tenancy.kcp.io/mount.",
		},
		{
			name: "transient read error keeps the annotations and retries", ws: mountedWorkspace(kubeClusterRef), getErr: errors.New("connection refused"),
			wantErr: true,
		},
		{
			name: "not mounted", ws: &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
			wantNoStatus: true,
		},
	} {
		// Each case with both rules: without --legacy-mount-annotation, a
		// Workspace with the legacy annotation alone is an unmounted one,
		// whatever the annotation says: no status, nothing resolved or read.
		for _, rule := range []mount.Rule{{LegacyAnnotation: true}, {}} {
			t.Run(fmt.Sprintf("%s, legacy annotation honoured %v", tc.name, rule.LegacyAnnotation), func(t *testing.T) {
				t.Parallel()
				wantErr, wantNoStatus := tc.wantErr, tc.wantNoStatus
				resolve, getMountObject := tc.resolve, returns(tc.object, tc.getErr)
				if resolve == nil {
					resolve = servedEverywhere
				}
				if !rule.IsMounted(tc.ws) {
					wantErr, wantNoStatus = false, true
					resolve = func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
						t.Fatal("resolved the kind of a Workspace that is not mounted")
						return restmapping.Resource{}, nil
					}
					getMountObject = returns(nil, errors.New("must not be read"))
				}
				r := &workspacesReconciler{
					rule:              rule,
					resolve:           resolve,
					getMountObject:    getMountObject,
					informerDenied:    func(restmapping.Resource) bool { return tc.denied },
					maxMountInformers: mount.DefaultMaxMountInformers,
					now:               func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) },
				}
				ws := tc.ws.DeepCopy()
				err := r.reconcile(context.Background(), ws)
				if wantErr {
					require.Error(t, err)
					require.Equal(t, tc.ws.Annotations, ws.Annotations, "a failed read must not touch the annotations")
					return
				}
				require.NoError(t, err)
				if wantNoStatus {
					require.NotContains(t, ws.Annotations, mount.PhaseAnnotationKey)
					require.NotContains(t, ws.Annotations, mount.StatusAnnotationKey)
					return
				}
				require.Equal(t, string(tc.wantPhase), ws.Annotations[mount.PhaseAnnotationKey])
				require.Less(t, len(ws.Annotations[mount.StatusAnnotationKey]), mount.MaxStatusAnnotationBytes)
				status, err := mount.ParseStatus(ws.Annotations[mount.StatusAnnotationKey])
				require.NoError(t, err)
				require.Equal(t, tc.wantPhase, status.Phase)
				require.Equal(t, tc.wantReady, status.Ready)
				require.Equal(t, tc.wantReason, status.Reason)
				require.Equal(t, tc.wantURL, status.URL)
				require.NotEmpty(t, status.Message)
				require.True(t, strings.HasSuffix(status.Message, "."), "message %q is a sentence", status.Message)
				require.Contains(t, status.Message, tc.wantMessage)
				require.Len(t, status.Conditions, tc.wantCondCount)
				if tc.wantAbsent != "" {
					require.NotContains(t, ws.Annotations[mount.StatusAnnotationKey], tc.wantAbsent)
				}
				require.LessOrEqual(t, len(status.Message), mount.MaxMessage)
				require.Equal(t, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), status.LastTransitionTime.UTC())
			})
		}
	}
}

func TestReconcileLastTransitionTime(t *testing.T) {
	t.Parallel()
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := first
	object := mountObject(map[string]interface{}{"phase": "Connecting"})
	r := &workspacesReconciler{
		resolve: servedEverywhere,
		getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
			return object, nil
		},
		informerDenied: neverDenied,
		now:            func() time.Time { return now },
	}
	ws := mountedWorkspace(kubeClusterRef)
	require.NoError(t, r.reconcile(context.Background(), ws))
	written := ws.Annotations[mount.StatusAnnotationKey]

	// Same phase, another message: the time stays.
	now = first.Add(time.Hour)
	object = mountObject(map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
		map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "Dialing"},
	}})
	require.NoError(t, r.reconcile(context.Background(), ws))
	status, _ := mount.StatusOf(ws.Annotations)
	require.Equal(t, first, status.LastTransitionTime.UTC())
	require.NotEqual(t, written, ws.Annotations[mount.StatusAnnotationKey])

	// Nothing changed: the annotations are byte for byte the same, so the
	// committer has nothing to patch.
	now = first.Add(2 * time.Hour)
	before := ws.Annotations[mount.StatusAnnotationKey]
	require.NoError(t, r.reconcile(context.Background(), ws))
	require.Equal(t, before, ws.Annotations[mount.StatusAnnotationKey])

	// Ready moves it.
	object = mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://x"})
	require.NoError(t, r.reconcile(context.Background(), ws))
	status, _ = mount.StatusOf(ws.Annotations)
	require.Equal(t, now, status.LastTransitionTime.UTC())
}

func TestReconcileUnmountedRemovesAnnotations(t *testing.T) {
	t.Parallel()
	ws := legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`)
	r := &workspacesReconciler{rule: mount.Rule{LegacyAnnotation: true}, resolve: servedEverywhere, getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready"}), nil), informerDenied: neverDenied, now: time.Now}
	require.NoError(t, r.reconcile(context.Background(), ws))
	require.Contains(t, ws.Annotations, mount.StatusAnnotationKey)

	delete(ws.Annotations, mount.LegacyAnnotationKey)
	require.NoError(t, r.reconcile(context.Background(), ws))
	require.NotContains(t, ws.Annotations, mount.PhaseAnnotationKey)
	require.NotContains(t, ws.Annotations, mount.StatusAnnotationKey)
	require.Contains(t, ws.Annotations, logicalcluster.AnnotationKey, "other annotations are left alone")
}

func TestConditionsAreBounded(t *testing.T) {
	t.Parallel()
	var conditions []interface{}
	for i := range 12 {
		conditions = append(conditions, map[string]interface{}{
			"type": "C" + string(rune('a'+i)), "status": "False", "message": strings.Repeat("é", 300),
		})
	}
	conditions = append([]interface{}{"not an object", map[string]interface{}{"status": "False"}}, conditions...)
	got := conditionsOf(mountObject(map[string]interface{}{"conditions": conditions}))
	require.Len(t, got, mount.MaxConditions)
	require.Equal(t, "Ca", got[0].Type, "entries without a type are skipped")
	for _, c := range got {
		require.LessOrEqual(t, len(c.Message), mount.MaxConditionMessage)
		require.True(t, strings.HasSuffix(c.Message, mount.TruncationMarker), "a cut is marked")
		require.True(t, strings.HasPrefix(strings.Repeat("é", 200), strings.TrimSuffix(c.Message, mount.TruncationMarker)), "cut on a character boundary")
	}
}

// TestConditionFieldLimits: every field of a copied condition has its limit,
// and control characters do not reach the annotation.
func TestConditionFieldLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		limit int
		get   func(mount.Condition) string
	}{
		{"type", mount.MaxConditionType, func(c mount.Condition) string { return c.Type }},
		{"status", mount.MaxConditionStatus, func(c mount.Condition) string { return c.Status }},
		{"reason", mount.MaxConditionReason, func(c mount.Condition) string { return c.Reason }},
		{"message", mount.MaxConditionMessage, func(c mount.Condition) string { return c.Message }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			t.Parallel()
			fields := map[string]interface{}{"type": "T", "status": "False", "reason": "R", "message": "M"}
			fields[tc.field] = "\x1b[31m" + strings.Repeat("界", 20000)
			got := conditionsOf(mountObject(map[string]interface{}{"conditions": []interface{}{fields}}))
			require.Len(t, got, 1)
			value := tc.get(got[0])
			require.LessOrEqual(t, len(value), tc.limit)
			require.True(t, strings.HasSuffix(value, mount.TruncationMarker))
			require.True(t, strings.HasPrefix(value, " [31m界"), "the escape character is replaced: %q", value)
		})
	}
}

// TestReconcileOwnsTheAnnotations: whatever a user wrote into the two
// annotations is replaced by the contract's answer.
func TestReconcileOwnsTheAnnotations(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	forged := mount.Status{
		Phase: mount.PhaseReady, Ready: true, URL: "https://evil.example", Reason: mount.ReasonMountReady, Message: "all good.",
		MountRef: kubeClusterRef, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour)),
	}
	inFuture := forged
	inFuture.Phase, inFuture.Ready, inFuture.URL, inFuture.Reason = mount.PhaseConnecting, false, "", mount.ReasonMountNotReady
	inFuture.LastTransitionTime = metav1.NewTime(now.Add(1000 * time.Hour))
	withAnnotations := func(ws *tenancyv1alpha1.Workspace, phase, status string) *tenancyv1alpha1.Workspace {
		ws.Annotations[mount.PhaseAnnotationKey] = phase
		ws.Annotations[mount.StatusAnnotationKey] = status
		return ws
	}
	for _, tc := range []struct {
		name      string
		ws        *tenancyv1alpha1.Workspace
		object    *unstructured.Unstructured
		wantPhase mount.Phase
		wantLTT   time.Time
	}{
		{
			name:      "a forged Ready on a reference that cannot name an object",
			ws:        withAnnotations(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`), "Ready", forged.Encode()),
			wantPhase: mount.PhaseInvalid, wantLTT: now,
		},
		{
			name:      "a forged Ready on a mount that is connecting",
			ws:        withAnnotations(mountedWorkspace(kubeClusterRef), "Ready", forged.Encode()),
			object:    mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantPhase: mount.PhaseConnecting, wantLTT: now,
		},
		{
			name:      "a transition time in the future is not kept",
			ws:        withAnnotations(mountedWorkspace(kubeClusterRef), "Connecting", inFuture.Encode()),
			object:    mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantPhase: mount.PhaseConnecting, wantLTT: now,
		},
		{
			name:      "a phase annotation that disagrees with the status",
			ws:        withAnnotations(mountedWorkspace(kubeClusterRef), "NotFound", forged.Encode()),
			object:    mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://evil.example"}),
			wantPhase: mount.PhaseReady, wantLTT: now.Add(-time.Hour),
		},
		{
			name:      "garbage",
			ws:        withAnnotations(mountedWorkspace(kubeClusterRef), "\x00", `{"phase":"Pwned"`),
			object:    mountObject(map[string]interface{}{"phase": "Initializing"}),
			wantPhase: mount.PhaseInitializing, wantLTT: now,
		},
		{
			name:      "a status too long to be the controller's",
			ws:        withAnnotations(mountedWorkspace(kubeClusterRef), "Ready", `{"phase":"Ready","message":"`+strings.Repeat("x", mount.MaxStatusAnnotationBytes)+`"}`),
			object:    mountObject(map[string]interface{}{"phase": "Ready"}),
			wantPhase: mount.PhaseReady, wantLTT: now,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &workspacesReconciler{
				rule:    mount.Rule{LegacyAnnotation: true},
				resolve: servedEverywhere, getMountObject: returns(tc.object, nil), informerDenied: neverDenied,
				now: func() time.Time { return now },
			}
			ws := tc.ws.DeepCopy()
			require.NoError(t, r.reconcile(context.Background(), ws))
			require.Equal(t, string(tc.wantPhase), ws.Annotations[mount.PhaseAnnotationKey])
			status, found := mount.StatusOf(ws.Annotations)
			require.True(t, found)
			require.Equal(t, tc.wantPhase, status.Phase)
			require.Equal(t, tc.wantLTT, status.LastTransitionTime.UTC())
			if tc.wantPhase != mount.PhaseReady {
				require.False(t, status.Ready)
				require.Empty(t, status.URL)
			}

			// And the next reconcile confirms it: no write.
			before := ws.Annotations[mount.StatusAnnotationKey]
			require.NoError(t, r.reconcile(context.Background(), ws))
			require.Equal(t, before, ws.Annotations[mount.StatusAnnotationKey])
		})
	}
}

// TestStatusOfMountObjectLimits: the top-level fields copied or built from a
// mount object have their limits too.
func TestStatusOfMountObjectLimits(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("\"<&>\\", 10000)
	for _, tc := range []struct {
		name   string
		status map[string]interface{}
		check  func(t *testing.T, s mount.Status)
	}{
		{
			name: "URL", status: map[string]interface{}{"phase": "Ready", "URL": "https://x/" + huge},
			check: func(t *testing.T, s mount.Status) {
				require.True(t, s.Ready)
				require.LessOrEqual(t, len(s.URL), mount.MaxURL)
				require.True(t, strings.HasSuffix(s.URL, mount.TruncationMarker))
			},
		},
		{
			name: "phase quoted in the message", status: map[string]interface{}{"phase": huge},
			check: func(t *testing.T, s mount.Status) {
				require.Equal(t, mount.ReasonMountPhaseUnrecognized, s.Reason)
				require.LessOrEqual(t, len(s.Message), 512)
			},
		},
		{
			name: "many conditions of the worst characters", status: func() map[string]interface{} {
				conditions := make([]interface{}, 0, 100)
				for range 100 {
					conditions = append(conditions, map[string]interface{}{"type": huge, "status": huge, "reason": huge, "message": huge})
				}
				return map[string]interface{}{"phase": "Connecting", "URL": huge, "conditions": conditions}
			}(),
			check: func(t *testing.T, s mount.Status) {
				require.LessOrEqual(t, len(s.Conditions), mount.MaxConditions)
				require.LessOrEqual(t, len(s.Message), mount.MaxMessage)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := statusOfMountObject(kubeClusterRef, mountObject(tc.status), mount.URLRule{}, heartbeatRule{})
			tc.check(t, s)
			encoded := s.Encode()
			require.Less(t, len(encoded), mount.MaxStatusAnnotationBytes)
			_, found := mount.StatusOf(map[string]string{mount.StatusAnnotationKey: encoded})
			require.True(t, found)
		})
	}
}

func TestRecheckInKeepsTheEarliest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		asks []time.Duration
		want time.Duration
	}{
		{name: "none", want: 0},
		{name: "one", asks: []time.Duration{time.Minute}, want: time.Minute},
		{name: "the earliest", asks: []time.Duration{time.Minute, 10 * time.Second, time.Hour}, want: 10 * time.Second},
		{name: "zero and negative ask for nothing", asks: []time.Duration{0, -time.Second, time.Minute}, want: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var state mountState
			for _, d := range tc.asks {
				state.recheckIn(d)
			}
			require.Equal(t, tc.want, state.recheckAfter)
		})
	}
}
