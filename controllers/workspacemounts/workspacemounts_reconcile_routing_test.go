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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// TestReconcileRouting: the condition, spec.URL and the phase for every row
// of the contract, with both routing options on.
func TestReconcileRouting(t *testing.T) {
	t.Parallel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "contrib.kcp.io", Resource: "kubeclusters"}, "proxy")
	notServed := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
		return restmapping.Resource{}, restmapping.ErrKindNotServed
	}
	const oldURL = "https://old.example/clusters/x"
	allowed, err := mount.ParseAllowedHosts([]string{"example", "10.0.0.0/8"})
	require.NoError(t, err)
	urls := mount.URLRule{Allowed: allowed, ShardHosts: func() []string { return []string{"kcp.example"} }}
	withURL := func(ws *tenancyv1alpha1.Workspace) *tenancyv1alpha1.Workspace {
		ws.Spec.URL = oldURL
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
		return ws
	}
	kcpDone := func(ws *tenancyv1alpha1.Workspace) *tenancyv1alpha1.Workspace {
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
		return ws
	}

	for _, tc := range []routingCase{
		{
			name: "ready with URL", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/clusters/a"}),
			wantStatus: corev1.ConditionTrue, wantReason: mount.ReasonMountReady,
			wantURL: "https://proxy.example/clusters/a", wantPhase: corev1alpha1.LogicalClusterPhaseReady,
		},
		{
			name: "ready without URL", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLMissing, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "ready without URL beside kcp's in-tree controller is Unknown", ws: mountedWorkspace(kubeClusterRef), inTree: true,
			object:     mountObject(map[string]interface{}{"phase": "Ready"}),
			wantStatus: corev1.ConditionUnknown, wantReason: mount.ReasonMountURLMissing,
		},
		{
			name: "ready with a refused URL beside kcp's in-tree controller is Unknown", ws: mountedWorkspace(kubeClusterRef), inTree: true,
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://u:p@proxy.example/"}),
			wantStatus: corev1.ConditionUnknown, wantReason: mount.ReasonMountURLInvalid, wantWhy: "not routable: it carries user information",
		},
		{
			name: "ready with a URL kcp must not be sent to", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "file:///etc/passwd"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "ready with user information in the URL", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://admin:secret@proxy.example/"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "ready at a loopback URL: not routable, the URL kept", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://127.0.0.1:6443/clusters/root"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable, wantWhy: `"https://127.0.0.1:6443/clusters/root" is not routable: loopback host`,
		},
		{
			name: "ready at a shard's host", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://KCP.example.:443/clusters/root"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable, wantWhy: "not routable: the host of a kcp shard",
		},
		{
			name: "ready at a host out of the allowed ones", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example.net/"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountURLInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable, wantWhy: "not routable: host not in --workspace-url-allowed-hosts",
		},
		{
			name: "ready at an allowed address", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://10.1.2.3:6443/clusters/a"}),
			wantStatus: corev1.ConditionTrue, wantReason: mount.ReasonMountReady,
			wantURL: "https://10.1.2.3:6443/clusters/a", wantPhase: corev1alpha1.LogicalClusterPhaseReady,
		},
		{
			name: "connecting at a link-local URL: spec.URL is not set to it", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Connecting", "URL": "http://169.254.169.254/latest/meta-data"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name:       "legacy mount at a loopback URL: the plugin routes none, the form alone is checked",
			ws:         kcpDone(withURL(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`))),
			object:     mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://127.0.0.1/"}),
			wantStatus: corev1.ConditionTrue, wantReason: mount.ReasonMountReady,
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseReady,
		},
		{
			name: "initializing", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Initializing", "URL": "https://proxy.example/clusters/a"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
			wantURL: "https://proxy.example/clusters/a", wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "connecting", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "the mount says Unknown", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Unknown"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityWarning,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "unrecognized phase", ws: withURL(mountedWorkspace(kubeClusterRef)),
			object:     mountObject(map[string]interface{}{"phase": "Happy"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountPhaseUnrecognized, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "mount object not found", ws: withURL(mountedWorkspace(kubeClusterRef)), getErr: notFound,
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountObjectNotFound, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "kind not served", ws: withURL(mountedWorkspace(kubeClusterRef)), resolve: notServed,
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountKindUnknown, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "informer limit reached: Unknown, the URL left alone", ws: withURL(mountedWorkspace(kubeClusterRef)), denied: true,
			wantStatus: corev1.ConditionUnknown, wantReason: mount.ReasonMountInformerLimitReached,
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseScheduling,
		},
		{
			name: "invalid reference", ws: withURL(mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "a/b"})),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountReferenceInvalid, severity: conditionsv1alpha1.ConditionSeverityError,
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name:       "legacy mount: the condition, never the URL",
			ws:         kcpDone(withURL(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`))),
			object:     mountObject(map[string]interface{}{"phase": "Connecting", "URL": "https://proxy.example/clusters/a"}),
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountNotReady, severity: conditionsv1alpha1.ConditionSeverityInfo,
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name:    "legacy mount kcp has not initialized yet: no condition, or it would stop there",
			ws:      withURL(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`)),
			object:  mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseScheduling,
		},
		{
			name: "legacy mount kcp is initializing, its own condition False: the phase is kcp's alone",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := withURL(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`))
				ws.Status.Phase = corev1alpha1.LogicalClusterPhaseInitializing
				ws.Status.Conditions = conditionsv1alpha1.Conditions{{Type: tenancyv1alpha1.WorkspaceInitialized, Status: corev1.ConditionFalse}}
				return ws
			}(),
			object:  mountObject(map[string]interface{}{"phase": "Connecting"}),
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseInitializing,
		},
		{
			// The finding of issue 33: anyone who may patch a Ready
			// Workspace points the annotation at a missing object. With
			// --legacy-mount-annotation it goes Unavailable, as before;
			// without, a condition the plugin wrote before goes, and it is
			// Ready again.
			name: "legacy mount of a missing object on a Ready Workspace",
			ws: func() *tenancyv1alpha1.Workspace {
				ws := kcpDone(withURL(legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"missing"}}}`)))
				// (Written at the reconcile's time, which the table checks.)
				setCondition(ws, conditionOf(mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, Message: "gone."}, false,
					metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))))
				ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
				return ws
			}(),
			getErr:     notFound,
			wantStatus: corev1.ConditionFalse, wantReason: mount.ReasonMountObjectNotFound, severity: conditionsv1alpha1.ConditionSeverityError,
			wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
			notHonoured: ptr.To(corev1alpha1.LogicalClusterPhaseReady),
		},
		{
			name: "a transient error touches nothing", ws: withURL(mountedWorkspace(kubeClusterRef)), getErr: errors.New("connection refused"),
			wantErr: true, wantURL: oldURL, wantPhase: corev1alpha1.LogicalClusterPhaseScheduling,
		},
	} {
		for _, rule := range []mount.Rule{{LegacyAnnotation: true}, {}} {
			t.Run(fmt.Sprintf("%s, legacy annotation honoured %v", tc.name, rule.LegacyAnnotation), func(t *testing.T) {
				t.Parallel()
				reconcileRouting(t, tc, rule, urls)
			})
		}
	}
}

// routingCase is a case of TestReconcileRouting.
type routingCase struct {
	name       string
	ws         *tenancyv1alpha1.Workspace
	resolve    func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error)
	denied     bool
	inTree     bool
	object     *unstructured.Unstructured
	getErr     error
	wantStatus corev1.ConditionStatus // "": no condition
	wantReason string
	severity   conditionsv1alpha1.ConditionSeverity
	wantURL    string // "": the Workspace's own, kept
	wantPhase  corev1alpha1.LogicalClusterPhaseType
	// notHonoured is what becomes of a legacy mount (the legacy annotation
	// alone) without --legacy-mount-annotation: no condition, and this
	// phase; nil: the Workspace's own. Each case runs with both rules; a
	// case that is not a legacy mount gives the same with both.
	notHonoured *corev1alpha1.LogicalClusterPhaseType
	wantErr     bool
	// wantWhy is in the message, unless empty.
	wantWhy string
}

func reconcileRouting(t *testing.T, tc routingCase, rule mount.Rule, urls mount.URLRule) {
	resolve := tc.resolve
	if resolve == nil {
		resolve = servedEverywhere
	}
	getMountObject := returns(tc.object, tc.getErr)
	if !rule.IsMounted(tc.ws) {
		// Not mounted: nothing read, no condition, the phase by kcp's rule.
		tc.wantStatus, tc.wantErr, tc.wantURL = "", false, ""
		tc.wantPhase = tc.ws.Status.Phase
		if tc.notHonoured != nil {
			tc.wantPhase = *tc.notHonoured
		}
		getMountObject = returns(nil, errors.New("must not be read"))
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &workspacesReconciler{
		rule:              rule,
		resolve:           resolve,
		getMountObject:    getMountObject,
		informerDenied:    func(restmapping.Resource) bool { return tc.denied },
		maxMountInformers: mount.DefaultMaxMountInformers,
		routing:           RoutingOptions{WorkspaceCondition: true, WorkspaceURL: !tc.inTree, InTreeMountsController: tc.inTree, URLs: urls},
		now:               func() time.Time { return now },
	}
	ws := tc.ws.DeepCopy()
	err := r.reconcile(context.Background(), ws)
	if tc.wantErr {
		require.Error(t, err)
	} else {
		require.NoError(t, err)
	}
	wantURL := tc.wantURL
	if wantURL == "" {
		wantURL = tc.ws.Spec.URL // no usable URL: kept, kcp refuses to unset it
	}
	require.Equal(t, wantURL, ws.Spec.URL)
	require.Equal(t, tc.wantPhase, ws.Status.Phase)
	condition := ownCondition(ws)
	if tc.wantStatus == "" {
		require.Nil(t, condition)
		return
	}
	require.NotNil(t, condition)
	require.Equal(t, tc.wantStatus, condition.Status)
	require.Equal(t, tc.wantReason, condition.Reason)
	require.Equal(t, tc.severity, condition.Severity, "a severity only when False")
	require.Equal(t, now, condition.LastTransitionTime.Time)
	require.NotEmpty(t, condition.Message)
	require.LessOrEqual(t, len(condition.Message), mount.MaxMessage)
	require.Contains(t, condition.Message, tc.wantWhy)
	status, _ := mount.StatusOf(ws.Annotations)
	if tc.inTree {
		require.True(t, strings.HasSuffix(condition.Message, inTreeNote))
	} else {
		require.Equal(t, status.Message, condition.Message, "the contract's message")
	}
}

// TestReconcileRoutingOff: without the options, the controller's condition
// is removed, and kcp's WorkspaceMountReady too unless kcp's in-tree
// controller runs (then it is kcp's), with the phase kcp's rule gives;
// spec.URL is not touched.
func TestReconcileRoutingOff(t *testing.T) {
	t.Parallel()
	for _, inTree := range []bool{false, true} {
		ws := mountedWorkspace(kubeClusterRef)
		ws.Spec.URL = "https://kept.example"
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
		ws.Status.Conditions = conditionsv1alpha1.Conditions{
			{Type: "WorkspaceScheduled", Status: corev1.ConditionTrue},
			{Type: mount.ConditionType, Status: corev1.ConditionFalse, Reason: mount.ReasonMountNotReady},
			{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse},
		}
		r := &workspacesReconciler{
			resolve: servedEverywhere, getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://new.example"}), nil),
			informerDenied: neverDenied, now: time.Now, routing: RoutingOptions{InTreeMountsController: inTree},
		}
		require.NoError(t, r.reconcile(context.Background(), ws))
		require.Equal(t, "https://kept.example", ws.Spec.URL)
		require.Equal(t, "Ready", ws.Annotations[mount.PhaseAnnotationKey])
		if inTree {
			require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, ws.Status.Phase, "kcp's False condition stays")
			require.Equal(t, conditionsv1alpha1.Conditions{
				{Type: "WorkspaceScheduled", Status: corev1.ConditionTrue},
				{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse},
			}, ws.Status.Conditions, "beside kcp's in-tree controller only the controller's own condition goes")
			continue
		}
		require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, ws.Status.Phase)
		require.Equal(t, conditionsv1alpha1.Conditions{
			{Type: "WorkspaceScheduled", Status: corev1.ConditionTrue},
		}, ws.Status.Conditions, "the controller's condition and WorkspaceMountReady, which level 3 kept, go")
	}
}

// TestReconcileKCPMountCondition: at level 3 kcp's own condition
// WorkspaceMountReady, row by row as kcp's in-tree controller writes it
// (workspaceStatusUpdater, kcp v0.28.1 and v0.32.3), beside the plugin's.
func TestReconcileKCPMountCondition(t *testing.T) {
	t.Parallel()
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "contrib.kcp.io", Resource: "kubeclusters"}, "proxy")
	notServed := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
		return restmapping.Resource{}, restmapping.ErrKindNotServed
	}
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	wasTrue := &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier}
	const notReady = `Mount is not reporting ready. See KubeCluster "proxy" status for more details`
	const noURL = `Mount is Ready but has no status.URL. See KubeCluster "proxy" status for more details`
	namespacedRef := mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Namespace: "ns", Name: "proxy"}
	namespaced := func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
		r := kubeClusterResource
		r.Namespaced = true
		return r, nil
	}
	for _, tc := range []struct {
		name       string
		ws         *tenancyv1alpha1.Workspace
		before     *conditionsv1alpha1.Condition // kcp's condition before
		resolve    func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error)
		denied     bool
		object     *unstructured.Unstructured
		getErr     error
		condition  bool                          // --workspace-condition too
		want       *conditionsv1alpha1.Condition // nil: none
		wantPhase  corev1alpha1.LogicalClusterPhaseType
		keepsTime  bool
		wantOthers int // the plugin's own condition beside it
	}{
		{
			name: "ready", ws: mountedWorkspace(kubeClusterRef), condition: true,
			object:    mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/clusters/a"}),
			want:      &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue},
			wantPhase: corev1alpha1.LogicalClusterPhaseReady, wantOthers: 1,
		},
		{
			name: "ready again keeps the transition time", ws: mountedWorkspace(kubeClusterRef), before: wasTrue,
			object:    mountObject(map[string]interface{}{"phase": "Ready", "URL": "https://proxy.example/clusters/a"}),
			want:      &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue},
			wantPhase: corev1alpha1.LogicalClusterPhaseReady, keepsTime: true,
		},
		{
			name: "ready without URL is invalid for kcp v0.33", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Ready"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: kcpMountObjectInvalidURLReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: noURL},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "ready without URL, with the plugin's condition: both False", ws: mountedWorkspace(kubeClusterRef), condition: true,
			object: mountObject(map[string]interface{}{"phase": "Ready"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: kcpMountObjectInvalidURLReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: noURL},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable, wantOthers: 1,
		},
		{
			name: "connecting", ws: mountedWorkspace(kubeClusterRef), before: wasTrue,
			object: mountObject(map[string]interface{}{"phase": "Connecting", "URL": "https://proxy.example/clusters/a"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "initializing", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Initializing"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "the mount says Unknown", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Unknown"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "an unrecognized phase", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": "Happy"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "no status.phase", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"URL": "https://proxy.example/clusters/a"}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "a status.phase that is not a string", ws: mountedWorkspace(kubeClusterRef),
			object: mountObject(map[string]interface{}{"phase": int64(3)}),
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotReadyReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: notReady},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "no mount object", ws: mountedWorkspace(kubeClusterRef), getErr: notFound,
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotFoundReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: `KubeCluster "/proxy" not found`},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "no namespaced mount object", ws: mountedWorkspace(namespacedRef), getErr: notFound, resolve: namespaced,
			want: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
				Reason: tenancyv1alpha1.MountObjectNotFoundReason, Severity: conditionsv1alpha1.ConditionSeverityError, Message: `KubeCluster "ns/proxy" not found`},
			wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable,
		},
		{
			name: "kind not served: kcp's controller writes nothing, neither does the plugin", ws: mountedWorkspace(kubeClusterRef), before: wasTrue,
			resolve: notServed, condition: true,
			want: wasTrue, keepsTime: true, wantPhase: corev1alpha1.LogicalClusterPhaseUnavailable, wantOthers: 1,
		},
		{
			name: "kind not served, no condition yet", ws: mountedWorkspace(kubeClusterRef), resolve: notServed,
		},
		{
			name: "informer limit reached: left as it is", ws: mountedWorkspace(kubeClusterRef), before: wasTrue, denied: true,
			want: wasTrue, keepsTime: true,
		},
		{
			name: "invalid reference: left as it is", ws: mountedWorkspace(mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "a/b"}),
			before: wasTrue, want: wasTrue, keepsTime: true,
		},
		{
			name:   "legacy mount: kcp's controller never sees it, its condition goes",
			ws:     legacyWorkspace(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`),
			before: &conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse},
			object: mountObject(map[string]interface{}{"phase": "Connecting"}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resolve := tc.resolve
			if resolve == nil {
				resolve = servedEverywhere
			}
			ws := tc.ws.DeepCopy()
			if tc.before != nil {
				ws.Status.Conditions = conditionsv1alpha1.Conditions{*tc.before}
			}
			r := &workspacesReconciler{
				rule:    mount.Rule{LegacyAnnotation: true},
				resolve: resolve, getMountObject: returns(tc.object, tc.getErr),
				informerDenied: func(restmapping.Resource) bool { return tc.denied }, maxMountInformers: mount.DefaultMaxMountInformers,
				routing: RoutingOptions{WorkspaceCondition: tc.condition, WorkspaceURL: true},
				now:     time.Now,
			}
			began := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
			require.NoError(t, r.reconcile(context.Background(), ws))
			got := conditions.Get(ws, tenancyv1alpha1.MountConditionReady)
			if tc.want == nil {
				require.Nil(t, got)
			} else {
				require.NotNil(t, got)
				want := *tc.want
				if tc.keepsTime {
					require.Equal(t, earlier, got.LastTransitionTime)
				} else {
					require.False(t, got.LastTransitionTime.Before(&began), "a new condition, a new transition time")
				}
				want.LastTransitionTime = got.LastTransitionTime
				require.Equal(t, want, *got)
			}
			require.Len(t, ws.Status.Conditions, tc.wantOthers+map[bool]int{true: 1}[tc.want != nil])
			require.Equal(t, tc.wantOthers == 1, ownCondition(ws) != nil)
			require.Equal(t, tc.wantPhase, ws.Status.Phase)
		})
	}
}

// TestSetConditionKeepsTheTransitionTime: the time moves when the status
// does, not when only the reason or message does.
func TestSetConditionKeepsTheTransitionTime(t *testing.T) {
	t.Parallel()
	first := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	ws := &tenancyv1alpha1.Workspace{}
	setCondition(ws, conditionsv1alpha1.Condition{Type: mount.ConditionType, Status: corev1.ConditionFalse, Reason: "A", LastTransitionTime: first})
	setCondition(ws, conditionsv1alpha1.Condition{Type: mount.ConditionType, Status: corev1.ConditionFalse, Reason: "B", LastTransitionTime: later})
	require.Len(t, ws.Status.Conditions, 1)
	require.Equal(t, "B", ws.Status.Conditions[0].Reason)
	require.Equal(t, first, ws.Status.Conditions[0].LastTransitionTime)
	setCondition(ws, conditionsv1alpha1.Condition{Type: mount.ConditionType, Status: corev1.ConditionTrue, Reason: "C", LastTransitionTime: later})
	require.Equal(t, later, ws.Status.Conditions[0].LastTransitionTime)
}
