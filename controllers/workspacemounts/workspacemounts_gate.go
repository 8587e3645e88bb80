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
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// unavailableLimit is how many of mounted Workspaces may have the condition False at once.
func unavailableLimit(maxUnavailable intstr.IntOrString, mounted int) int {
	limit, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, mounted, false)
	if err != nil { // ParseMaxUnavailable let no such value through
		return 0
	}
	return limit
}

// gateVerdict is what the gate decided for a Workspace whose condition would be False: the zero value lets it be False.
type gateVerdict struct {
	// reason is [mount.ReasonGateDelayed] or [mount.ReasonGateHeld].
	reason string
	// note says why the condition is not False, after the contract's message.
	note string
	// slot tells that the condition is False with a slot of --max-unavailable.
	slot bool
}

// apply makes a False condition Unknown with the verdict's reason, the contract's message cut to leave room for the
// note.
func (v gateVerdict) apply(condition conditionsv1alpha1.Condition) conditionsv1alpha1.Condition {
	if v.reason == "" || condition.Status != corev1.ConditionFalse {
		return condition
	}
	condition.Status = corev1.ConditionUnknown
	condition.Severity = ""
	condition.Reason = v.reason
	condition.Message = mount.Truncate(condition.Message, mount.MaxMessage-len(v.note)) + v.note
	return condition
}

func delayedVerdict(delay time.Duration, since metav1.Time) gateVerdict {
	return gateVerdict{reason: mount.ReasonGateDelayed, note: fmt.Sprintf(
		" Not False before the mount has been not ready for %s (--workspace-condition-delay; not ready since %s): until then kcp keeps the Workspace Ready and sends its requests to its spec.URL.",
		delay, since.UTC().Format(time.RFC3339))}
}

func heldVerdict(maxUnavailable intstr.IntOrString) gateVerdict {
	return gateVerdict{reason: mount.ReasonGateHeld, note: fmt.Sprintf(
		" Not False: as many Workspaces of this shard as --max-unavailable=%s allows already have %s False, shared fairly between tenants; kcp keeps the Workspace Ready and sends its requests to its spec.URL.",
		maxUnavailable.String(), mount.ConditionType)}
}

// notReadySince is when ws's mount turned not ready, as ws tells it.
func notReadySince(ws *tenancyv1alpha1.Workspace, at metav1.Time) metav1.Time {
	since := at
	if previous := priorStatus(ws); previous != nil && !previous.Ready && previous.LastTransitionTime.Before(&since) {
		since = previous.LastTransitionTime
	}
	if c := ownCondition(ws); c != nil && c.Status != corev1.ConditionTrue && c.LastTransitionTime.Before(&since) {
		since = c.LastTransitionTime
	}
	if created := ws.CreationTimestamp; since.Before(&created) {
		since = created
	}
	return since
}

// delayRemaining is how long the condition of ws, whose mount is not ready at at, waits before it may turn False, and
// since when the mount is not ready.
func delayRemaining(ws *tenancyv1alpha1.Workspace, at metav1.Time, delay time.Duration) (time.Duration, metav1.Time) {
	if delay <= 0 {
		return 0, at
	}
	if c := ownCondition(ws); c != nil && c.Status == corev1.ConditionFalse {
		return 0, at
	}
	since := notReadySince(ws, at)
	remaining := since.Add(delay).Sub(at.Time)
	if remaining <= 0 {
		return 0, since
	}
	return time.Duration(math.Ceil(remaining.Seconds())) * time.Second, since
}

// gate decides, for the Workspace of key, whether a condition that would be False is (state.gate left zero, or with a
// slot), or is Unknown.
func (c *Controller) gate(key string, ws *tenancyv1alpha1.Workspace, state *mountState) {
	routing := c.workspaces.routing
	if !c.workspaces.conditionFalse(ws, *state) {
		c.unavailable.release(key)
		return
	}
	if remaining, since := delayRemaining(ws, state.at, routing.ConditionDelay); remaining > 0 {
		c.unavailable.release(key)
		state.gate = delayedVerdict(routing.ConditionDelay, since)
		state.recheckIn(remaining)
		return
	}
	switch {
	case c.unavailable == nil:
	case !budgeted(ws):
		c.unavailable.release(key)
	case c.unavailable.admit(key):
		state.gate.slot = true
	default:
		state.gate = heldVerdict(*routing.MaxUnavailable)
	}
}

// budgeted tells whether a False condition of ws takes a slot of --max-unavailable: its mount was ready at some time
// its status annotation tells of ([mount.Status.EverReady], since ws was created).
func budgeted(ws *tenancyv1alpha1.Workspace) bool {
	previous := priorStatus(ws)
	return previous != nil && previous.EverReady()
}

// EventReasonGateReleased is the reason of the event of a Workspace no longer held by --max-unavailable (the one of a
// Workspace newly held is [mount.ReasonGateHeld]).
const EventReasonGateReleased = "GateReleased"

// noteGate is the one point where a Workspace is newly held by --max-unavailable (its condition written GateHeld, where
// it was not), or released (written otherwise, where it was GateHeld).
func (c *Controller) noteGate(logger klog.Logger, ws *tenancyv1alpha1.Workspace, before *conditionsv1alpha1.Condition, state mountState) {
	wasHeld := before != nil && before.Reason == mount.ReasonGateHeld
	isHeld := state.gate.reason == mount.ReasonGateHeld
	switch {
	case isHeld && !wasHeld:
		logger.V(2).Info("Workspace held by --max-unavailable: its condition is Unknown, not False", "reason", state.status.Reason)
		c.recordEvent(ws, corev1.EventTypeWarning, mount.ReasonGateHeld,
			fmt.Sprintf("The mount is %s (%s).%s", state.status.Phase, state.status.Reason, state.gate.note))
	case wasHeld && !isHeld:
		logger.V(2).Info("Workspace no longer held by --max-unavailable", "reason", state.status.Reason)
		c.recordEvent(ws, corev1.EventTypeNormal, EventReasonGateReleased,
			fmt.Sprintf("No longer held by --max-unavailable: the mount is %s (%s), and %s says so.", state.status.Phase, state.status.Reason, mount.ConditionType))
	}
}
