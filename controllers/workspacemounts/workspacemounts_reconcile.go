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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// workspacesReconciler is the logic of workspacemounts-workspaces: it reads a Workspace's mount object and sets what
// the controller owns on the Workspace.
type workspacesReconciler struct {
	rule    mount.Rule
	resolve func(cluster logicalcluster.Name, gvk schema.GroupVersionKind) (restmapping.Resource, error)
	// getMountObject reads the mount object from kcp; a NotFound error means it does not exist.
	getMountObject    func(ctx context.Context, cluster logicalcluster.Name, resource restmapping.Resource, namespace, name string) (*unstructured.Unstructured, error)
	cachedMountObject func(cluster logicalcluster.Name, resource restmapping.Resource, namespace, name string) (obj *unstructured.Unstructured, found, cached bool)
	reads             lastReads
	refusals          urlRefusals
	breaker           *mountBreaker
	requestTimeout    time.Duration
	// informerDenied tells whether a resource was refused a mount object informer because maxMountInformers others run:
	// its mount objects are not read until a slot frees (workspacemounts-mounts then sends its Workspaces here).
	informerDenied    func(resource restmapping.Resource) bool
	maxMountInformers int
	routing           RoutingOptions
	heartbeatTimeout  time.Duration
	now               func() time.Time
}

// mountState is what the reconciler found out about a Workspace's mount.
type mountState struct {
	status  mount.Status
	mounted bool
	at      metav1.Time
	// recheckAfter, when positive, is how soon the state changes with time alone.
	recheckAfter time.Duration
	// gate is what the gate of --workspace-condition decided for a condition that would be False.
	gate gateVerdict
	// urlRefused tells that kcp refused the mount's URL as spec.URL: [applyURL] leaves spec.URL as it is.
	urlRefused bool
}

// recheckIn asks for the Workspace to be reconciled again within d: the earliest of the times asked for wins.
func (s *mountState) recheckIn(d time.Duration) {
	if d > 0 && (s.recheckAfter <= 0 || d < s.recheckAfter) {
		s.recheckAfter = d
	}
}

// mountState finds out the mount status of ws, with a spec.URL kcp refused.
func (r *workspacesReconciler) mountState(ctx context.Context, ws *tenancyv1alpha1.Workspace) (mountState, error) {
	now := r.now()
	status, mounted, recheck, err := r.status(ctx, ws, now)
	if err != nil {
		return mountState{}, err
	}
	state := mountState{status: status, mounted: mounted, at: metav1.NewTime(now.UTC().Truncate(time.Second))}
	state.recheckIn(recheck)
	r.applyRefusal(kcpcache.ToClusterAwareKey(logicalcluster.From(ws).String(), "", ws.Name), ws, &state, now)
	return state, nil
}

// applyMetadataAndSpec sets what the controller owns in ws's metadata and spec, the part of a Workspace one patch
// writes: the annotations, and with --workspace-url spec.URL.
func (r *workspacesReconciler) applyMetadataAndSpec(ws *tenancyv1alpha1.Workspace, state mountState) {
	r.applyAnnotations(ws, state)
	if r.routing.WorkspaceURL {
		applyURL(ws, state, r.urlRule(ws))
	}
}

// applyStatus sets what the controller owns in ws's status, the part the status subresource writes.
func (r *workspacesReconciler) applyStatus(ws *tenancyv1alpha1.Workspace, state mountState) {
	// kcp's WorkspaceMountReady is the controller's unless kcp's in-tree mounts controller runs.
	ownsKCPCondition := !r.routing.InTreeMountsController
	had := ownCondition(ws) != nil || (ownsKCPCondition && conditions.Has(ws, tenancyv1alpha1.MountConditionReady))
	switch keep, remove := r.keepsCondition(ws, state); {
	case remove:
		conditions.Delete(ws, mount.ConditionType)
	case keep:
		setCondition(ws, state.gate.apply(conditionOf(state.status, r.routing.InTreeMountsController, state.at)))
	}
	keepsKCPCondition := r.routing.WorkspaceURL && ws.Spec.Mount != nil && state.mounted && ownsKCPCondition
	switch {
	case keepsKCPCondition:
		applyKCPMountCondition(ws, state.status, state.gate, state.at)
	case ownsKCPCondition:
		conditions.Delete(ws, tenancyv1alpha1.MountConditionReady)
	}
	if r.routing.WorkspaceURL {
		applyPhase(ws, state)
	}
	// kcp applies its rule to a Workspace it is done with.
	if (r.routing.WorkspaceCondition || keepsKCPCondition || had) && (ws.Spec.Mount != nil || kcpIsDone(ws)) {
		kcpPhaseRule(ws)
	}
}

// keepsCondition tells what applyStatus does with the condition of ws: keep it (set it from state), remove it, or
// neither (leave it as it is).
func (r *workspacesReconciler) keepsCondition(ws *tenancyv1alpha1.Workspace, state mountState) (keep, remove bool) {
	switch {
	case !r.routing.WorkspaceCondition || !state.mounted:
		return false, true
	case ws.Spec.Mount == nil && !kcpIsDone(ws):
		// A Workspace mounted by the legacy annotation is an ordinary one that kcp schedules and initializes first: a
		// False condition now would make it Unavailable, where kcp stops initializing it.
		return false, false
	default:
		return true, false
	}
}

// conditionFalse tells whether applyStatus would set the condition of ws False, but for the gate.
func (r *workspacesReconciler) conditionFalse(ws *tenancyv1alpha1.Workspace, state mountState) bool {
	keep, _ := r.keepsCondition(ws, state)
	return keep && conditionOf(state.status, r.routing.InTreeMountsController, state.at).Status == corev1.ConditionFalse
}

// applyAnnotations sets, or removes, the two mount annotations.
func (r *workspacesReconciler) applyAnnotations(ws *tenancyv1alpha1.Workspace, state mountState) {
	if !state.mounted {
		delete(ws.Annotations, mount.PhaseAnnotationKey)
		delete(ws.Annotations, mount.StatusAnnotationKey)
		return
	}

	// lastTransitionTime and the history move only at a transition, when phase or ready does.
	status := state.status.WithHistory(priorStatus(ws), state.at)

	if ws.Annotations == nil {
		ws.Annotations = map[string]string{}
	}
	ws.Annotations[mount.PhaseAnnotationKey] = string(status.Phase)
	ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
}

// priorStatus is the status ws's annotation holds, nil where none can be read, without what precedes ws's creation: the
// one the controller carries on, observes transitions from and gates by.
func priorStatus(ws *tenancyv1alpha1.Workspace) *mount.Status {
	written, found := mount.StatusOf(ws.Annotations)
	if !found {
		return nil
	}
	if written, found = written.NotBefore(ws.CreationTimestamp); !found {
		return nil
	}
	return &written
}

// status computes the mount status of ws, row by row of the contract, and whether ws is mounted at all.
func (r *workspacesReconciler) status(ctx context.Context, ws *tenancyv1alpha1.Workspace, now time.Time) (mount.Status, bool, time.Duration, error) {
	cluster := logicalcluster.From(ws)
	wsKey := kcpcache.ToClusterAwareKey(cluster.String(), "", ws.Name)
	ref, err := r.rule.ReferenceOf(ws)
	if errors.Is(err, mount.ErrNotMounted) {
		r.reads.forget(wsKey)
		return mount.Status{}, false, 0, nil
	}
	if errors.Is(err, mount.ErrKindNotAllowed) {
		return invalid(ref, mount.ReasonMountKindNotAllowed,
			fmt.Sprintf("Workspace %s cannot be mounted: %v; fix %s.", ws.Name, err, referenceField(ws))), true, 0, nil
	}
	if err != nil {
		return invalid(ref, mount.ReasonMountReferenceInvalid,
			fmt.Sprintf("Workspace %s cannot be mounted: %v; fix %s.", ws.Name, err, referenceField(ws))), true, 0, nil
	}

	gvk, _ := ref.GroupVersionKind() // validated by rule.ReferenceOf
	resource, err := r.resolve(cluster, gvk)
	if errors.Is(err, restmapping.ErrKindNotServed) {
		return invalid(ref, mount.ReasonMountKindUnknown,
			fmt.Sprintf("Kind %s of %s is not served in cluster %s; create its CRD or bind its APIExport there, or fix %s.",
				gvk.Kind, gvk.GroupVersion(), cluster, referenceField(ws))), true, 0, nil
	}
	if err != nil {
		return mount.Status{}, true, 0, err
	}

	switch {
	case resource.Namespaced && ref.Namespace == "":
		return invalid(ref, mount.ReasonMountReferenceInvalid,
			fmt.Sprintf("%s is namespaced, but the reference names no namespace; set it in %s.", gvk.Kind, referenceField(ws))), true, 0, nil
	case !resource.Namespaced && ref.Namespace != "":
		return invalid(ref, mount.ReasonMountReferenceInvalid,
			fmt.Sprintf("%s is cluster-scoped, but the reference names namespace %q; remove it from %s.", gvk.Kind, ref.Namespace, referenceField(ws))), true, 0, nil
	}

	if r.informerDenied(resource) {
		return mount.Status{
			Phase:  mount.PhaseUnknown,
			Reason: mount.ReasonMountInformerLimitReached,
			Message: fmt.Sprintf("%s is not watched: the plugin watches at most %d mount resources (--max-mount-informers) and all are in use; "+
				"this Workspace converges by itself once a resource is no longer mounted anywhere, or the limit is raised.", describe(ref), r.maxMountInformers),
			MountRef: ref,
		}, true, 0, nil
	}

	obj, err := r.readMountObject(ctx, wsKey, cluster, resource, ref.Namespace, ref.Name)
	if retryIn, open := notAnsweringFor(err); open {
		return mount.Status{
			Phase:  mount.PhaseUnknown,
			Reason: mount.ReasonMountKindNotAnswering,
			Message: fmt.Sprintf("%s cannot be read: kcp does not answer for %s in cluster %s within %s "+
				"(a conversion webhook of its CRD that does not answer, say); the plugin reads it again after a backoff, and at once when kcp answers.",
				describe(ref), resource.GroupVersionResource.GroupResource(), cluster, r.requestTimeout),
			MountRef: ref,
		}, true, retryIn, nil
	}
	if apierrors.IsNotFound(err) {
		return mount.Status{
			Phase:    mount.PhaseNotFound,
			Reason:   mount.ReasonMountObjectNotFound,
			Message:  fmt.Sprintf("%s does not exist in cluster %s; create it, or fix %s.", describe(ref), cluster, referenceField(ws)),
			MountRef: ref,
		}, true, 0, nil
	}
	if err != nil {
		return mount.Status{}, true, 0, fmt.Errorf("reading %s in cluster %s: %w", describe(ref), cluster, err)
	}
	status, recheck := statusOfMountObject(ref, obj, r.urlRule(ws), heartbeatRule{timeout: r.heartbeatTimeout, now: now})
	return status, true, recheck, nil
}

// urlRule is the rule for ws's mount URL.
func (r *workspacesReconciler) urlRule(ws *tenancyv1alpha1.Workspace) mount.URLRule {
	rule := r.routing.URLs
	rule.CheckHosts = r.routing.WorkspaceURL && ws.Spec.Mount != nil
	if rule.CheckHosts {
		rule.Form = mount.URLFormHTTPS
	}
	return rule
}

func invalid(ref mount.Reference, reason, message string) mount.Status {
	return mount.Status{Phase: mount.PhaseInvalid, Reason: reason, Message: message, MountRef: ref}
}

// referenceField names where the Workspace's reference is, for messages.
func referenceField(ws *tenancyv1alpha1.Workspace) string {
	if ws.Spec.Mount != nil {
		return "spec.mount.ref"
	}
	return "the annotation " + mount.LegacyAnnotationKey
}
