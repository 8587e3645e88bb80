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
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// statusOfMountObject applies the contract to a mount object that exists: only status.phase, status.URL,
// status.conditions and the annotation [mount.IsMountAnnotationKey] are read, the URL by the rule urls.
func statusOfMountObject(ref mount.Reference, obj *unstructured.Unstructured, urls mount.URLRule, heartbeats heartbeatRule) (status mount.Status, recheck time.Duration) {
	marked := mount.IsMarked(obj.GetAnnotations())
	status = mount.Status{MountRef: ref}
	if marked {
		status.Conditions = conditionsOf(obj)
	}
	rawURL, _, _ := unstructured.NestedString(obj.Object, "status", "URL")
	status.URL = mount.Truncate(mount.Sanitize(rawURL), mount.MaxURL)
	statusURL := status.URL
	what := describe(ref)

	phase, found, err := unstructured.NestedString(obj.Object, "status", "phase")
	var notRoutable error
	if statusURL != "" {
		notRoutable = urls.Check(statusURL)
	}
	switch {
	case err != nil:
		status.Phase, status.Reason = mount.PhaseUnknown, mount.ReasonMountPhaseUnrecognized
		status.Message = fmt.Sprintf("%s has a status.phase that is not a string; its controller should set one of Initializing, Connecting, Ready, Unknown.", what)
	case !found:
		status.Phase, status.Reason = mount.PhaseUnknown, mount.ReasonMountPhaseUnrecognized
		status.Message = fmt.Sprintf("%s reports no status.phase yet; look at its controller.", what)
	case phase == string(tenancyv1alpha1.MountPhaseReady) && statusURL != "" && notRoutable == nil:
		status.Phase, status.Ready, status.Reason = mount.PhaseReady, true, mount.ReasonMountReady
		status.Message = fmt.Sprintf("%s is ready at %s.", what, mount.Truncate(statusURL, maxQuotedURL))
	case phase == string(tenancyv1alpha1.MountPhaseReady) && statusURL != "":
		status.Phase, status.Reason = mount.PhaseReady, mount.ReasonMountURLInvalid
		status.Message = fmt.Sprintf("%s is Ready but its status.URL %s is not routable: %v; no traffic is sent to it. Look at its controller.",
			what, mount.Quote(mount.Truncate(statusURL, maxQuotedURL)), notRoutable)
	case phase == string(tenancyv1alpha1.MountPhaseReady):
		status.Phase, status.Reason = mount.PhaseReady, mount.ReasonMountURLMissing
		status.Message = fmt.Sprintf("%s is Ready but has no status.URL, so no traffic can reach the mount; look at its controller.", what)
	case phase == string(tenancyv1alpha1.MountPhaseInitializing),
		phase == string(tenancyv1alpha1.MountPhaseConnecting),
		phase == string(tenancyv1alpha1.MountPhaseUnknown):
		status.Phase, status.Reason = mount.Phase(phase), mount.ReasonMountNotReady
		status.Message = fmt.Sprintf("%s is %s%s.", what, phase, failingConditionQuote(status.Conditions))
	default:
		status.Phase, status.Reason = mount.PhaseUnknown, mount.ReasonMountPhaseUnrecognized
		status.Message = fmt.Sprintf("%s reports status.phase %s, which is none of Initializing, Connecting, Ready, Unknown.", what, mount.Quote(phase))
	}
	status, recheck = heartbeats.apply(status, heartbeatOf(obj.Object["status"]), what)
	if !marked {
		// The note is always whole: what comes before it is cut to leave room.
		status.Message = mount.Truncate(mount.Sanitize(status.Message), mount.MaxMessage-len(mount.UnmarkedNote)-1) + " " + mount.UnmarkedNote
	}
	return status.Bounded(), recheck
}

// StatusOfMountObject is the status the controller gives a Workspace whose mount object is obj, under the URL rule
// urls, without --mount-heartbeat-timeout.
func StatusOfMountObject(ref mount.Reference, obj *unstructured.Unstructured, urls mount.URLRule) mount.Status {
	status, _ := statusOfMountObject(ref, obj, urls, heartbeatRule{})
	return status
}

// maxQuotedURL bounds the URL quoted in a Ready message; the status has all of it.
const maxQuotedURL = 512

// describe names the mount object for a person: kind, name and API version.
func describe(ref mount.Reference) string {
	if ref.Namespace != "" {
		return fmt.Sprintf("%s %s/%s (%s)", ref.Kind, ref.Namespace, ref.Name, ref.APIVersion)
	}
	return fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, ref.APIVersion)
}

// conditionsOf copies the mount object's status.conditions: at most [mount.MaxConditions], each field cut to its limit.
func conditionsOf(obj *unstructured.Unstructured) []mount.Condition {
	items, found, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil || !found {
		return nil
	}
	var conditions []mount.Condition
	for _, item := range items {
		if len(conditions) == mount.MaxConditions {
			break
		}
		fields, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		c := mount.BoundedCondition(mount.Condition{
			Type:    stringField(fields, "type"),
			Status:  stringField(fields, "status"),
			Reason:  stringField(fields, "reason"),
			Message: stringField(fields, "message"),
		})
		if c.Type == "" {
			continue
		}
		conditions = append(conditions, c)
	}
	return conditions
}

// failingConditionQuote quotes the first False condition, else the first that is not True: when a mount is not ready,
// its own failing condition is usually the answer.
func failingConditionQuote(conditions []mount.Condition) string {
	var failing *mount.Condition
	for i := range conditions {
		if conditions[i].Status == "False" {
			failing = &conditions[i]
			break
		}
		if failing == nil && conditions[i].Status != "True" {
			failing = &conditions[i]
		}
	}
	if failing == nil {
		return ""
	}
	quote := fmt.Sprintf(": condition %s is %s", failing.Type, failing.Status)
	switch {
	case failing.Reason != "" && failing.Message != "":
		quote += fmt.Sprintf(" (%s: %s)", failing.Reason, failing.Message)
	case failing.Reason != "":
		quote += fmt.Sprintf(" (%s)", failing.Reason)
	case failing.Message != "":
		quote += fmt.Sprintf(" (%s)", failing.Message)
	}
	return quote
}

func stringField(fields map[string]interface{}, name string) string {
	s, _ := fields[name].(string)
	return s
}
