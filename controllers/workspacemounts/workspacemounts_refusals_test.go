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
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

const (
	routedURL  = "https://mounts.example.com/clusters/routed"
	refusedURL = "https://refused.example.com/clusters/refused"
	policyNote = "ValidatingAdmissionPolicy 'kcp-v0-33-mount-url' denied request: spec.URL is refused"
)

var workspacesResource = schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}

// refusingKCP is a fakeKCP that answers err to every patch that sets
// spec.URL to refusedURL, as kcp's admission (or a conflict, a server
// error) does, and counts them.
type refusingKCP struct {
	*fakeKCP
	err     error
	refused int
}

func (k *refusingKCP) patch(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
	if k.err != nil && bytes.Contains(patch, []byte(`"URL":"`+refusedURL+`"`)) {
		k.refused++
		return nil, k.err
	}
	return k.fakeKCP.patch(ctx, cluster, name, patch, subresources...)
}

// refusalHarness is a controller at level 3 over a refusingKCP, with a
// clock it moves and a mount object whose status.URL it sets.
type refusalHarness struct {
	k        *refusingKCP
	c        *Controller
	key      string
	now      time.Time
	mountURL string
	sync     func() string
}

func newRefusalHarness(t *testing.T, refusal error) *refusalHarness {
	t.Helper()
	ws := mountedWorkspace(kubeClusterRef)
	ws.Spec.URL = routedURL
	ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, Conditions: kcpConditions}
	h := &refusalHarness{k: &refusingKCP{fakeKCP: newFakeKCP(ws), err: refusal}, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), mountURL: routedURL}
	getMountObject := func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
		return mountObject(map[string]interface{}{"phase": "Ready", "URL": h.mountURL}), nil
	}
	c, indexer := testController(h.k.fakeKCP, RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}, getMountObject)
	c.patchWorkspace = h.k.patch
	c.workspaces.now = func() time.Time { return h.now }
	c.workspacesQueue = newQueue("refusals")
	t.Cleanup(c.workspacesQueue.ShutDown)
	h.c = c
	h.sync = func() string { return syncCache(t, h.k.fakeKCP, indexer, "mounted") }
	h.key = h.sync()
	require.NoError(t, c.processWorkspace(context.Background(), h.key), "routed at %s", routedURL)
	return h
}

// process reconciles the Workspace from the cache, as its informer holds
// it after the last write.
func (h *refusalHarness) process() error {
	h.key = h.sync()
	return h.c.processWorkspace(context.Background(), h.key)
}

func (h *refusalHarness) workspace() *tenancyv1alpha1.Workspace { return h.k.workspaces["mounted"] }

// TestURLRefusalRecorded: a patch that sets spec.URL answered 422 or 403
// is remembered, and the key reconciled again at once; that reconcile
// writes the annotations and the status without spec.URL: MountURLInvalid
// with kcp's message, the condition False, the Workspace Unavailable, the
// previous spec.URL kept; after that, nothing is written and nothing
// tried until the recheck. A conflict, a server error or a timeout is
// not a refusal: it is returned, for the backoff, and not remembered.
func TestURLRefusalRecorded(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err     error
		refusal bool
	}{
		"invalid (422)":   {err: apierrors.NewInvalid(schema.GroupKind{Group: "tenancy.kcp.io", Kind: "Workspace"}, "mounted", nil), refusal: true},
		"forbidden (403)": {err: apierrors.NewForbidden(workspacesResource, "mounted", errors.New(policyNote)), refusal: true},
		"conflict (409)":  {err: apierrors.NewConflict(workspacesResource, "mounted", errors.New("the object has been modified"))},
		"internal (500)":  {err: apierrors.NewInternalError(errors.New("etcd leader changed"))},
		"timeout (504)":   {err: apierrors.NewTimeoutError("request did not complete", 0)},
		"unavailable":     {err: apierrors.NewServiceUnavailable("kcp is starting")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newRefusalHarness(t, tc.err)
			before := len(h.k.patches)
			h.mountURL = refusedURL
			err := h.process()
			require.Equal(t, 1, h.k.refused, "the write of %s was tried", refusedURL)
			_, recorded := h.c.workspaces.refusals.get(h.key)
			if !tc.refusal {
				require.Error(t, err, "retried with the backoff")
				require.False(t, recorded, "not a refusal")
				require.Zero(t, h.c.workspacesQueue.Len(), "the backoff decides when")
				return
			}
			require.NoError(t, err)
			require.True(t, recorded)
			require.Equal(t, 1, h.c.workspacesQueue.Len(), "reconciled again at once")

			require.NoError(t, h.process())
			require.Equal(t, 1, h.k.refused, "the refused URL is not tried again")
			require.Len(t, h.k.patches, before+2, "the annotations, then the status")
			ws := h.workspace()
			require.Equal(t, routedURL, ws.Spec.URL, "the previous spec.URL is kept")
			status, found := mount.StatusOf(ws.Annotations)
			require.True(t, found)
			require.Equal(t, mount.ReasonMountURLInvalid, status.Reason)
			require.Equal(t, mount.PhaseReady, status.Phase)
			require.False(t, status.Ready)
			require.Equal(t, refusedURL, status.URL)
			require.Contains(t, status.Message, `kcp refused spec.URL "`+refusedURL+`": `+tc.err.Error())
			own := ownCondition(ws)
			require.Equal(t, corev1.ConditionFalse, own.Status)
			require.Equal(t, mount.ReasonMountURLInvalid, own.Reason)
			require.Equal(t, conditionsv1alpha1.ConditionSeverityError, own.Severity)
			require.Equal(t, status.Message, own.Message)
			require.True(t, conditions.IsTrue(ws, tenancyv1alpha1.MountConditionReady), "kcp's form accepts the URL, as for one the host rules refuse")
			require.Equal(t, corev1alpha1.LogicalClusterPhaseUnavailable, ws.Status.Phase, "out of traffic")

			patches := len(h.k.patches)
			h.now = h.now.Add(URLRefusalRecheck - time.Second)
			require.NoError(t, h.process())
			require.Equal(t, 1, h.k.refused, "not tried again before the recheck")
			require.Len(t, h.k.patches, patches, "a steady state writes nothing")
		})
	}
}

// TestURLRefusalForgotten: a refusal is forgotten, and the URL the mount
// then has written, when the mount's URL changes (to one kcp accepts, or
// back to the one refused), or once the recheck is due, which tries the
// refused URL once more: kcp may accept it now.
func TestURLRefusalForgotten(t *testing.T) {
	t.Parallel()
	refusal := apierrors.NewForbidden(workspacesResource, "mounted", errors.New(policyNote))
	for name, tc := range map[string]struct {
		change func(h *refusalHarness)
		// tried is how many writes of refusedURL kcp saw, wantURL spec.URL after.
		tried   int
		wantURL string
		// recorded: refused again, remembered again.
		recorded bool
	}{
		"a URL kcp accepts": {
			change: func(h *refusalHarness) { h.mountURL = "https://mounts.example.com/clusters/moved" },
			tried:  1, wantURL: "https://mounts.example.com/clusters/moved",
		},
		"the recheck, still refused": {
			change: func(h *refusalHarness) { h.now = h.now.Add(URLRefusalRecheck) },
			tried:  2, wantURL: routedURL, recorded: true,
		},
		"the recheck, accepted now": {
			change: func(h *refusalHarness) { h.now, h.k.err = h.now.Add(URLRefusalRecheck), nil },
			tried:  1, wantURL: refusedURL,
		},
		"away and back": {
			change: func(h *refusalHarness) {
				h.mountURL = "https://mounts.example.com/clusters/moved"
				if err := h.process(); err != nil {
					panic(err)
				}
				h.mountURL = refusedURL
			},
			tried: 2, wantURL: "https://mounts.example.com/clusters/moved", recorded: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newRefusalHarness(t, refusal)
			h.mountURL = refusedURL
			require.NoError(t, h.process())
			require.NoError(t, h.process())
			require.Equal(t, mount.ReasonMountURLInvalid, ownCondition(h.workspace()).Reason)

			tc.change(h)
			require.NoError(t, h.process())
			require.Equal(t, tc.tried, h.k.refused, "writes of %s kcp refused", refusedURL)
			require.Equal(t, tc.wantURL, h.workspace().Spec.URL)
			_, recorded := h.c.workspaces.refusals.get(h.key)
			require.Equal(t, tc.recorded, recorded)
			if !recorded {
				require.Equal(t, mount.ReasonMountReady, ownCondition(h.workspace()).Reason)
				require.Equal(t, corev1alpha1.LogicalClusterPhaseReady, h.workspace().Status.Phase)
			}
		})
	}
}

// TestApplyRefusal: what a remembered refusal does to a reconcile's state,
// and when it is forgotten, row by row.
func TestApplyRefusal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, URL: refusedURL, MountRef: kubeClusterRef}
	connecting := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady, URL: refusedURL, MountRef: kubeClusterRef}
	for name, tc := range map[string]struct {
		status   mount.Status
		unmount  bool
		level    *RoutingOptions // nil: level 3
		elapsed  time.Duration
		refused  bool // state.urlRefused
		reason   string
		recheck  time.Duration
		remember bool
	}{
		"ready, just refused": {status: ready, refused: true, reason: mount.ReasonMountURLInvalid, recheck: URLRefusalRecheck, remember: true},
		"ready, a minute later": {status: ready, elapsed: time.Minute, refused: true, reason: mount.ReasonMountURLInvalid,
			recheck: URLRefusalRecheck - time.Minute, remember: true},
		"connecting at that URL": {status: connecting, refused: true, reason: mount.ReasonMountNotReady, recheck: URLRefusalRecheck, remember: true},
		"the recheck is due":     {status: ready, elapsed: URLRefusalRecheck, reason: mount.ReasonMountReady},
		"another URL": {status: mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, URL: routedURL, MountRef: kubeClusterRef},
			reason: mount.ReasonMountReady},
		"no URL":    {status: mount.Status{Phase: mount.PhaseReady, Reason: mount.ReasonMountURLMissing, MountRef: kubeClusterRef}, reason: mount.ReasonMountURLMissing},
		"unmounted": {unmount: true},
		"level 2":   {status: ready, level: &RoutingOptions{WorkspaceCondition: true}, reason: mount.ReasonMountReady},
		"level 1":   {status: ready, level: &RoutingOptions{}, reason: mount.ReasonMountReady},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			level := RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true}
			if tc.level != nil {
				level = *tc.level
			}
			r := &workspacesReconciler{routing: level}
			r.recordRefusal("key", &urlRefusedError{url: refusedURL, err: apierrors.NewForbidden(workspacesResource, "mounted", errors.New(policyNote))}, at)
			state := mountState{status: tc.status, mounted: !tc.unmount}
			r.applyRefusal("key", mountedWorkspace(kubeClusterRef), &state, at.Add(tc.elapsed))
			require.Equal(t, tc.refused, state.urlRefused)
			require.Equal(t, tc.reason, state.status.Reason)
			require.Equal(t, tc.recheck, state.recheckAfter)
			_, remembered := r.refusals.get("key")
			require.Equal(t, tc.remember, remembered)
			if tc.reason == mount.ReasonMountURLInvalid {
				require.False(t, state.status.Ready)
				require.Contains(t, state.status.Message, `kcp refused spec.URL "`+refusedURL+`": workspaces.tenancy.kcp.io "mounted" is forbidden: `+policyNote)
			}
		})
	}
}

// TestRecordRefusalBoundsTheMessage: kcp's message is quoted, cut to
// maxRefusalMessage, and the status stays within its bounds.
func TestRecordRefusalBoundsTheMessage(t *testing.T) {
	t.Parallel()
	r := &workspacesReconciler{routing: RoutingOptions{WorkspaceURL: true}}
	long := string(bytes.Repeat([]byte("policy says no\u202e "), 200))
	r.recordRefusal("key", &urlRefusedError{url: refusedURL, err: apierrors.NewForbidden(workspacesResource, "mounted", errors.New(long))}, time.Now())
	refusal, _ := r.refusals.get("key")
	require.LessOrEqual(t, len(refusal.message), maxRefusalMessage)
	require.NotContains(t, refusal.message, "\u202e")
	state := mountState{status: mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, URL: refusedURL, MountRef: kubeClusterRef}, mounted: true}
	r.applyRefusal("key", mountedWorkspace(kubeClusterRef), &state, time.Now())
	require.Equal(t, mount.ReasonMountURLInvalid, state.status.Reason)
	require.LessOrEqual(t, len(state.status.Message), mount.MaxMessage)
}
