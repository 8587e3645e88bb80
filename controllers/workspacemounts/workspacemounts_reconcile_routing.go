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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	"github.com/kcp-dev/sdk/apis/third_party/conditions/util/conditions"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// conditionOf is the condition for a mount status: True when ready.
func conditionOf(status mount.Status, inTreeMountsController bool, now metav1.Time) conditionsv1alpha1.Condition {
	condition := conditionsv1alpha1.Condition{
		Type:               mount.ConditionType,
		Reason:             status.Reason,
		Message:            status.Message,
		LastTransitionTime: now,
	}
	switch {
	case status.Ready:
		condition.Status = corev1.ConditionTrue
	case status.Reason == mount.ReasonMountInformerLimitReached || status.Reason == mount.ReasonMountKindNotAnswering:
		condition.Status = corev1.ConditionUnknown
	case (status.Reason == mount.ReasonMountURLMissing || status.Reason == mount.ReasonMountURLInvalid || status.Reason == mount.ReasonMountHeartbeatExpired) && inTreeMountsController:
		// kcp's in-tree controller knows nothing of heartbeats.
		condition.Status = corev1.ConditionUnknown
		condition.Message = mount.Truncate(status.Message, mount.MaxMessage-len(inTreeNote)) + inTreeNote
	default:
		condition.Status = corev1.ConditionFalse
		condition.Severity = severityOf(status)
	}
	return condition
}

// inTreeNote says why a mount without a routable URL is Unknown rather than False.
const inTreeNote = " Not False: kcp's in-tree mounts controller runs on this shard and marks the Workspace Ready whenever the mount object's status.phase is Ready."

// severityOf classifies a mount that is not ready: Info while its controller is getting it ready, Warning when it does
// not know, Error when someone has to act.
func severityOf(status mount.Status) conditionsv1alpha1.ConditionSeverity {
	switch {
	case status.Reason == mount.ReasonMountNotReady && status.Phase == mount.PhaseUnknown,
		status.Reason == mount.ReasonMountHeartbeatExpired:
		return conditionsv1alpha1.ConditionSeverityWarning
	case status.Reason == mount.ReasonMountNotReady:
		return conditionsv1alpha1.ConditionSeverityInfo
	default:
		return conditionsv1alpha1.ConditionSeverityError
	}
}

// setCondition puts condition on ws, in place of an earlier one of its type, whose lastTransitionTime it keeps if the
// status is the same.
func setCondition(ws *tenancyv1alpha1.Workspace, condition conditionsv1alpha1.Condition) {
	putCondition(ws, condition, func(existing conditionsv1alpha1.Condition) bool { return existing.Status == condition.Status })
}

// putCondition puts condition on ws, in place of an earlier one of its type, whose lastTransitionTime it keeps where
// unchanged says so.
func putCondition(ws *tenancyv1alpha1.Workspace, condition conditionsv1alpha1.Condition, unchanged func(existing conditionsv1alpha1.Condition) bool) {
	for i := range ws.Status.Conditions {
		existing := &ws.Status.Conditions[i]
		if existing.Type != condition.Type {
			continue
		}
		if unchanged(*existing) {
			condition.LastTransitionTime = existing.LastTransitionTime
		}
		*existing = condition
		return
	}
	ws.Status.Conditions = append(ws.Status.Conditions, condition)
}

// ownCondition returns (a copy of) the controller's condition on ws, or nil.
func ownCondition(ws *tenancyv1alpha1.Workspace) *conditionsv1alpha1.Condition {
	return conditions.Get(ws, mount.ConditionType)
}

// applyURL sets spec.URL of a Workspace with spec.mount to its mount's URL.
func applyURL(ws *tenancyv1alpha1.Workspace, state mountState, urls mount.URLRule) {
	if ws.Spec.Mount == nil || !state.mounted || state.urlRefused || state.status.URL == "" || urls.Check(state.status.URL) != nil {
		return
	}
	ws.Spec.URL = state.status.URL
}

// kcpIsDone tells whether kcp has finished scheduling and initializing a Workspace: its phase is Ready or Unavailable.
func kcpIsDone(ws *tenancyv1alpha1.Workspace) bool {
	return ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady || ws.Status.Phase == corev1alpha1.LogicalClusterPhaseUnavailable
}

// kcpPhaseRule is kcp's own rule for a Workspace's phase from its conditions (updateTerminalConditionPhase in
// pkg/reconciler/tenancy/workspace, v0.27 to v0.32.3).
func kcpPhaseRule(ws *tenancyv1alpha1.Workspace) {
	notReady := false
	for _, c := range ws.Status.Conditions {
		if makesUnavailable(c) {
			notReady = true
			break
		}
	}
	switch {
	case notReady && ws.Status.Phase != corev1alpha1.LogicalClusterPhaseUnavailable:
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
	case !notReady && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseUnavailable:
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	}
}

// makesUnavailable tells whether kcp's phase rule makes a Workspace with condition c Unavailable: a False condition
// whose type starts with "Workspace".
func makesUnavailable(c conditionsv1alpha1.Condition) bool {
	return c.Status == corev1.ConditionFalse && strings.HasPrefix(string(c.Type), "Workspace")
}

// applyPhase moves a Workspace with spec.mount from Scheduling to Ready once its mount is ready, as kcp's in-tree
// controller does.
func applyPhase(ws *tenancyv1alpha1.Workspace, state mountState) {
	if ws.Spec.Mount == nil || !state.mounted || !state.status.Ready {
		return
	}
	if ws.Status.Phase == "" || ws.Status.Phase == corev1alpha1.LogicalClusterPhaseScheduling {
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	}
}

// applyKCPMountCondition keeps kcp's own condition WorkspaceMountReady on a Workspace with spec.mount as kcp's in-tree
// mounts controller writes it.
func applyKCPMountCondition(ws *tenancyv1alpha1.Workspace, status mount.Status, gate gateVerdict, now metav1.Time) {
	ref := ws.Spec.Mount.Reference
	var refused error
	if status.Phase == mount.PhaseReady && status.URL != "" {
		refused = kcpRefusesURL(status.URL)
	}
	var condition *conditionsv1alpha1.Condition
	switch {
	case status.Reason == mount.ReasonMountObjectNotFound:
		condition = conditions.FalseCondition(tenancyv1alpha1.MountConditionReady, tenancyv1alpha1.MountObjectNotFoundReason,
			conditionsv1alpha1.ConditionSeverityError, "%s %q not found", ref.Kind, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
	case status.Phase == mount.PhaseReady && status.URL == "":
		condition = conditions.FalseCondition(tenancyv1alpha1.MountConditionReady, kcpMountObjectInvalidURLReason,
			conditionsv1alpha1.ConditionSeverityError, "Mount is Ready but has no status.URL. See %s %q status for more details", ref.Kind, ref.Name)
	case refused != nil:
		condition = conditions.FalseCondition(tenancyv1alpha1.MountConditionReady, kcpMountObjectInvalidURLReason,
			conditionsv1alpha1.ConditionSeverityError, "Mount status.URL is invalid: %v. See %s %q status for more details", refused, ref.Kind, ref.Name)
	case status.Phase == mount.PhaseReady:
		condition = conditions.TrueCondition(tenancyv1alpha1.MountConditionReady)
	case status.Reason == mount.ReasonMountNotReady, status.Reason == mount.ReasonMountPhaseUnrecognized:
		condition = conditions.FalseCondition(tenancyv1alpha1.MountConditionReady, tenancyv1alpha1.MountObjectNotReadyReason,
			conditionsv1alpha1.ConditionSeverityError, "Mount is not reporting ready. See %s %q status for more details", ref.Kind, ref.Name)
	default:
		return
	}
	gated := gate.apply(*condition)
	condition = &gated
	// As kcp's conditions.Set, the transition time moves when any of status, reason, severity and message does.
	condition.LastTransitionTime = now
	putCondition(ws, *condition, func(existing conditionsv1alpha1.Condition) bool {
		return existing.Status == condition.Status && existing.Reason == condition.Reason &&
			existing.Severity == condition.Severity && existing.Message == condition.Message
	})
}

// kcpMountObjectInvalidURLReason is the reason of kcp's condition WorkspaceMountReady for a Ready mount whose URL kcp
// refuses, from kcp v0.33.
const kcpMountObjectInvalidURLReason = "MountObjectInvalidURL"

// kcpRefusesURL is kcp v0.33's verdict on a mount URL: its form alone.
func kcpRefusesURL(rawURL string) error {
	return mount.URLRule{Form: mount.URLFormHTTPS}.Check(rawURL)
}

// RemoveOwned removes from ws what the controller keeps on it, as the controller itself does for a Workspace that is
// not mounted, or without --workspace-condition and --workspace-url.
func RemoveOwned(ws *tenancyv1alpha1.Workspace, inTreeMountsController bool) (metadata bool, removed []conditionsv1alpha1.ConditionType) {
	_, hadPhase := ws.Annotations[mount.PhaseAnnotationKey]
	_, hadStatus := ws.Annotations[mount.StatusAnnotationKey]
	before := map[conditionsv1alpha1.ConditionType]bool{}
	for _, c := range ws.Status.Conditions {
		before[c.Type] = true
	}
	r := &workspacesReconciler{routing: RoutingOptions{InTreeMountsController: inTreeMountsController}}
	r.applyMetadataAndSpec(ws, mountState{})
	r.applyStatus(ws, mountState{})
	after := map[conditionsv1alpha1.ConditionType]bool{}
	for _, c := range ws.Status.Conditions {
		after[c.Type] = true
	}
	for _, t := range []conditionsv1alpha1.ConditionType{mount.ConditionType, tenancyv1alpha1.MountConditionReady} {
		if before[t] && !after[t] {
			removed = append(removed, t)
		}
	}
	return hadPhase || hadStatus, removed
}
