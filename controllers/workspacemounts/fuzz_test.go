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
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// checkWritten fails unless ws carries annotations the contract allows, and
// returns the status.
func checkWritten(t *testing.T, ws *tenancyv1alpha1.Workspace) mount.Status {
	t.Helper()
	value := ws.Annotations[mount.StatusAnnotationKey]
	if len(value) >= mount.MaxStatusAnnotationBytes || !json.Valid([]byte(value)) {
		t.Fatalf("a status annotation of %d bytes, or not JSON", len(value))
	}
	status, found := mount.StatusOf(ws.Annotations)
	if !found {
		t.Fatalf("StatusOf cannot read the annotation %q", value)
	}
	if status.Encode() != value {
		t.Fatalf("the annotation does not survive a round trip")
	}
	if !slices.Contains(mount.Phases, status.Phase) || ws.Annotations[mount.PhaseAnnotationKey] != string(status.Phase) {
		t.Fatalf("phase %q, phase annotation %q", status.Phase, ws.Annotations[mount.PhaseAnnotationKey])
	}
	if status.Ready && (status.Phase != mount.PhaseReady || status.URL == "" || status.Reason != mount.ReasonMountReady) {
		t.Fatalf("ready, but %+v", status)
	}
	if status.Message == "" || len(status.Message) > mount.MaxMessage {
		t.Fatalf("a message of %d bytes", len(status.Message))
	}
	return status
}

// FuzzStatusOfMountObject feeds the contract any status a mount object can
// have, and any value of the annotation that marks it (absent where
// hasMark is false), with --mount-heartbeat-timeout of timeout seconds (0:
// off): the JSON is decoded as the dynamic client decodes it. Only a marked
// object's conditions are published, a heartbeat changes nothing but the
// expiry (phase Unknown, reason MountHeartbeatExpired) and a note, and the
// cache's trimmed copy gives the same answer as the object, and the same
// recheck.
func FuzzStatusOfMountObject(f *testing.F) {
	for _, seed := range []string{
		`{"phase":"Ready","URL":"https://proxy.example/clusters/x"}`,
		`{"phase":"Ready"}`,
		`{"phase":"Connecting","URL":"https://old","conditions":[{"type":"ClusterSecretReady","status":"True"},` +
			`{"type":"ClusterReady","status":"False","reason":"AgentDisconnected","message":"no heartbeat for 5m"}]}`,
		`{"phase":"Initializing","conditions":[{"type":"` + strings.Repeat("T", 20000) + `","status":"False","reason":"` + strings.Repeat("R", 20000) + `"}]}`,
		`{"phase":"Unknown","conditions":"not a list"}`,
		`{"phase":3,"URL":true}`,
		`{"phase":"Connected","conditions":[null,1,"x",{"status":"False"},{"type":7}]}`,
		`{"conditions":[{"type":"a\u0000\u2028<&>\"\\","status":"\u001b[31mFalse"}]}`,
		`null`, `[]`, `"status"`, `{}`,
		// Heartbeats, around the fuzzer's clock (2026-11-29T12:00:00Z).
		`{"phase":"Ready","URL":"https://proxy.example/clusters/x","lastHeartbeatTime":"2026-11-29T11:59:58Z"}`,
		`{"phase":"Ready","URL":"https://proxy.example/clusters/x","lastProxyHeartbeatTime":"2026-11-29T11:00:00Z"}`,
		`{"phase":"Ready","URL":"https://x","lastHeartbeatTime":"2026-11-29T11:00:00Z","lastProxyHeartbeatTime":"2026-11-29T11:59:59.5+01:00",` +
			`"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-29T11:59:59Z"},{"lastHeartbeatTime":"2026-11-29T12:00:30Z"},` +
			`{"type":"Other","status":"False","lastHeartbeatTime":7}]}`,
		`{"phase":"Connecting","lastHeartbeatTime":"yesterday","lastProxyHeartbeatTime":null,"conditions":[{"type":"A","lastHeartbeatTime":""}]}`,
		`{"phase":"Ready","URL":"https://x","lastHeartbeatTime":"3026-11-29T12:00:00Z"}`,
		`{"phase":"Ready","URL":"https://x","lastHeartbeatTime":"2026-11-29T12:00:05Z","conditions":"x"}`,
	} {
		f.Add([]byte(seed), true, mount.IsMountAnnotationValue, uint16(0))
		f.Add([]byte(seed), false, "", uint16(0))
		f.Add([]byte(seed), true, mount.IsMountAnnotationValue, uint16(6))
		f.Add([]byte(seed), false, "", uint16(60))
	}
	f.Add([]byte(`{"phase":"Connecting","conditions":[{"type":"Ready","status":"False","message":"m"}]}`), true, "True", uint16(6))
	ref := kubeClusterRef
	// The rule at level 3, where the reconciler below checks hosts too.
	urls := mount.URLRule{ShardHosts: func() []string { return []string{"kcp.example", "10.0.0.1"} }}
	levelThree := urls
	levelThree.CheckHosts = true
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status []byte, hasMark bool, mark string, timeout uint16) {
		heartbeats := heartbeatRule{timeout: time.Duration(timeout) * time.Second, now: now}
		var value interface{}
		if json.Unmarshal(status, &value) != nil {
			return
		}
		metadata := map[string]interface{}{"name": ref.Name}
		if hasMark {
			metadata["annotations"] = map[string]interface{}{mount.IsMountAnnotationKey: mark, "other": "x"}
		}
		obj := &unstructured.Unstructured{}
		data, _ := json.Marshal(map[string]interface{}{
			"apiVersion": ref.APIVersion, "kind": ref.Kind, "metadata": metadata, "status": value,
		})
		if err := obj.UnmarshalJSON(data); err != nil {
			return
		}
		s, recheck := statusOfMountObject(ref, obj, levelThree, heartbeats)
		withoutHeartbeats, noRecheck := statusOfMountObject(ref, obj, levelThree, heartbeatRule{})
		switch {
		case noRecheck != 0 || recheck < 0 || (timeout == 0 && (recheck != 0 || !reflect.DeepEqual(s, withoutHeartbeats))):
			t.Fatalf("recheck %v, %v without heartbeats, for a timeout of %ds", recheck, noRecheck, timeout)
		case s.Reason == mount.ReasonMountHeartbeatExpired && (s.Phase != mount.PhaseUnknown || s.Ready || heartbeatOf(obj.Object["status"]).newest == heartbeatNone):
			t.Fatalf("expired: %+v", s)
		case s.Reason != mount.ReasonMountHeartbeatExpired &&
			(s.Phase != withoutHeartbeats.Phase || s.Ready != withoutHeartbeats.Ready || s.Reason != withoutHeartbeats.Reason || s.URL != withoutHeartbeats.URL):
			t.Fatalf("not expired, yet %+v and without heartbeats %+v", s, withoutHeartbeats)
		}
		marked := hasMark && mark == mount.IsMountAnnotationValue
		if marked != mount.IsMarked(obj.GetAnnotations()) {
			t.Fatalf("marked %v for the annotation %q", mount.IsMarked(obj.GetAnnotations()), mark)
		}
		if !marked && (len(s.Conditions) > 0 || !strings.HasSuffix(s.Message, " "+mount.UnmarkedNote)) {
			t.Fatalf("an unmarked mount object: %d conditions, message %q", len(s.Conditions), s.Message)
		}
		if marked && strings.HasSuffix(s.Message, " "+mount.UnmarkedNote) {
			t.Fatalf("a marked mount object: message %q", s.Message)
		}
		switch s.Reason {
		case mount.ReasonMountReady, mount.ReasonMountURLMissing, mount.ReasonMountURLInvalid, mount.ReasonMountNotReady, mount.ReasonMountPhaseUnrecognized, mount.ReasonMountHeartbeatExpired:
		default:
			t.Fatalf("reason %q for an existing mount object", s.Reason)
		}
		if s.Phase == mount.PhaseNotFound || s.Phase == mount.PhaseInvalid || s.MountRef != ref {
			t.Fatalf("phase %q, mountRef %+v for an existing mount object", s.Phase, s.MountRef)
		}
		if s.Encode() != s.Bounded().Encode() {
			t.Fatalf("not bounded")
		}
		// The full-object informers keep the object trimmed: the contract
		// must answer the same for it.
		trimmed, err := trimFullMountObject(obj.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if fromTrimmed, trimmedRecheck := statusOfMountObject(ref, trimmed.(*trimmedMountObject).unstructured(), levelThree, heartbeats); !reflect.DeepEqual(fromTrimmed, s) || trimmedRecheck != recheck {
			t.Fatalf("trimmed %+v (recheck %v), full %+v (recheck %v)", fromTrimmed, trimmedRecheck, s, recheck)
		}

		r := &workspacesReconciler{
			resolve: servedEverywhere, getMountObject: returns(obj, nil), informerDenied: neverDenied,
			routing:          RoutingOptions{WorkspaceCondition: true, WorkspaceURL: true, URLs: urls},
			heartbeatTimeout: heartbeats.timeout,
			now:              func() time.Time { return now },
		}
		ws := mountedWorkspace(ref)
		state, err := r.mountState(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if state.recheckAfter != recheck {
			t.Fatalf("the reconciler rechecks after %v, the contract said %v", state.recheckAfter, recheck)
		}
		if err := r.reconcile(context.Background(), ws); err != nil {
			t.Fatal(err)
		}
		written := checkWritten(t, ws)
		if written.Phase != s.Phase || written.Reason != s.Reason || written.Ready != s.Ready {
			t.Fatalf("written %+v, computed %+v", written, s)
		}
		// What kcp routes by: a URL kcp may be sent to, or none; the
		// condition True exactly when ready, and bounded.
		if ws.Spec.URL != "" && (levelThree.Check(ws.Spec.URL) != nil || ws.Spec.URL != s.URL) {
			t.Fatalf("spec.URL %q from status.URL %q", ws.Spec.URL, s.URL)
		}
		if s.Ready && ws.Spec.URL == "" {
			t.Fatalf("ready without spec.URL")
		}
		condition := ownCondition(ws)
		if condition == nil || (condition.Status == corev1.ConditionTrue) != s.Ready || len(condition.Message) > mount.MaxMessage ||
			(condition.Severity != "") != (condition.Status == corev1.ConditionFalse) {
			t.Fatalf("condition %+v for %+v", condition, s)
		}
	})
}

// FuzzReconcileReference feeds the Workspace reconciler any reference, in
// spec.mount or in the legacy annotation: an invalid one is always
// Invalid/MountReferenceInvalid and never read, one naming a kind of kcp's
// or Kubernetes' own groups Invalid/MountKindNotAllowed, never resolved,
// read nor indexed; a valid one is read in the Workspace's own cluster, by
// the name it names. The legacy annotation is honoured
// (--legacy-mount-annotation); FuzzReconcileLegacyNotHonoured has the default.
func FuzzReconcileReference(f *testing.F) {
	f.Add(false, "", "contrib.kcp.io/v1alpha1", "KubeCluster", "proxy", "")
	f.Add(false, "", "v1", "ConfigMap", "cm", "ns")
	f.Add(false, "", "tenancy.kcp.io/v1alpha1", "Workspace", "ws-ready", "")
	f.Add(false, "", "gateway.networking.k8s.io/v1", "Gateway", "gw", "ns")
	f.Add(true, `{"spec":{"ref":{"apiVersion":"apps/v1","kind":"Deployment","name":"d","namespace":"ns"}}}`, "", "", "", "")
	f.Add(false, "", "a/b/c", "K", "n", "")
	f.Add(false, "", "contrib.kcp.io/v1alpha1", strings.Repeat("K", 20000), "a/b", "Bad_NS")
	f.Add(true, `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`, "", "", "", "")
	f.Add(true, `{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}},"status":{"phase":"Ready"}}`, "", "", "", "")
	f.Add(true, `{"spec":`, "", "", "", "")
	f.Add(true, `{"spec":{"ref":{"apiVersion":"v1","kind":"K","name":"..","namespace":"`+strings.Repeat("n", 5000)+`"}}}`, "", "", "", "")
	f.Fuzz(func(t *testing.T, legacy bool, annotation, apiVersion, kind, name, namespace string) {
		ws := mountedWorkspace(mount.Reference{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: namespace})
		if legacy {
			ws = legacyWorkspace(annotation)
		}
		rule := mount.Rule{LegacyAnnotation: true}
		ref, refErr := rule.ReferenceOf(ws)
		read := false
		r := &workspacesReconciler{
			rule: rule,
			resolve: func(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error) {
				if refErr != nil {
					t.Fatalf("an invalid reference resolved: %v", refErr)
				}
				resource := kubeClusterResource
				resource.Namespaced = ref.Namespace != ""
				return resource, nil
			},
			getMountObject: func(_ context.Context, cluster logicalcluster.Name, _ restmapping.Resource, ns, n string) (*unstructured.Unstructured, error) {
				read = true
				if cluster != logicalcluster.From(ws) || ns != ref.Namespace || n != ref.Name {
					t.Fatalf("read %s/%s in %s for %+v", ns, n, cluster, ref)
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{}, n)
			},
			informerDenied: neverDenied,
			now:            time.Now,
		}
		if err := r.reconcile(context.Background(), ws); err != nil {
			t.Fatal(err)
		}
		status := checkWritten(t, ws)
		switch {
		case errors.Is(refErr, mount.ErrNotMounted):
			t.Fatalf("a mounted Workspace is not mounted")
		case errors.Is(refErr, mount.ErrKindNotAllowed):
			if status.Phase != mount.PhaseInvalid || status.Reason != mount.ReasonMountKindNotAllowed || read || mount.GroupAllowed(gvkOf(t, ref).Group) {
				t.Fatalf("kind not allowed (%v): phase %s, reason %s, read %v", refErr, status.Phase, status.Reason, read)
			}
		case refErr != nil:
			if status.Phase != mount.PhaseInvalid || status.Reason != mount.ReasonMountReferenceInvalid || read {
				t.Fatalf("invalid reference (%v): phase %s, reason %s, read %v", refErr, status.Phase, status.Reason, read)
			}
		default:
			if status.Phase != mount.PhaseNotFound || !read || status.MountRef != ref || !mount.GroupAllowed(gvkOf(t, ref).Group) {
				t.Fatalf("valid reference %+v: phase %s, reason %s, read %v", ref, status.Phase, status.Reason, read)
			}
		}
		// The indexes never fail, and index only valid references.
		kinds, err := indexByMountKind(rule, ws)
		if err != nil || (len(kinds) > 0) != (refErr == nil) {
			t.Fatalf("kind index %v, %v for reference error %v", kinds, err, refErr)
		}
		for _, key := range kinds {
			if gvk, ok := parseKindKey(key); !ok || gvk.Kind != ref.Kind {
				t.Fatalf("kind key %q does not parse back", key)
			}
		}
	})
}

// gvkOf parses a valid reference's apiVersion.
func gvkOf(t *testing.T, ref mount.Reference) schema.GroupVersionKind {
	t.Helper()
	gvk, err := ref.GroupVersionKind()
	if err != nil {
		t.Fatalf("a valid reference %+v: %v", ref, err)
	}
	return gvk
}

// FuzzReconcileLegacyNotHonoured: without --legacy-mount-annotation, a
// Workspace with the legacy annotation alone, whatever it says and whatever
// the plugin wrote there before (the two annotations, the condition), is
// an unmounted one: nothing is resolved or read, it is in no index, and
// what the plugin wrote is removed.
func FuzzReconcileLegacyNotHonoured(f *testing.F) {
	f.Add(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}}}`, true)
	f.Add(`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`, false)
	f.Add(`{"spec":`, true)
	f.Fuzz(func(t *testing.T, annotation string, written bool) {
		ws := legacyWorkspace(annotation)
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
		if written {
			ws.Annotations[mount.PhaseAnnotationKey] = string(mount.PhaseNotFound)
			ws.Annotations[mount.StatusAnnotationKey] = mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound}.Encode()
			setCondition(ws, conditionOf(mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound}, false, metav1.Now()))
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
		}
		r := &workspacesReconciler{
			resolve: func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) {
				t.Fatalf("resolved the kind of a legacy annotation that is not honoured")
				return restmapping.Resource{}, nil
			},
			getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
				t.Fatalf("read the mount object of a legacy annotation that is not honoured")
				return nil, nil
			},
			informerDenied: neverDenied,
			routing:        RoutingOptions{WorkspaceCondition: true},
			now:            time.Now,
		}
		if err := r.reconcile(context.Background(), ws); err != nil {
			t.Fatal(err)
		}
		_, phase := ws.Annotations[mount.PhaseAnnotationKey]
		_, status := ws.Annotations[mount.StatusAnnotationKey]
		if phase || status || ownCondition(ws) != nil || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			t.Fatalf("after a reconcile: annotations %v, condition %v, phase %s", ws.Annotations, ownCondition(ws), ws.Status.Phase)
		}
		if ws.Annotations[mount.LegacyAnnotationKey] != annotation {
			t.Fatalf("the legacy annotation changed")
		}
		for _, index := range mountIndexers(mount.Rule{}) {
			if keys, err := index(ws); err != nil || len(keys) > 0 {
				t.Fatalf("indexed as %v, %v", keys, err)
			}
		}
	})
}
