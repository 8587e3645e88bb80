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

// Package workspacemounts is the read-only storage of WorkspaceMounts, in the
// style of metrics-server: a [Store] derived from each shard's Workspace
// informer, and [REST] over it; no read goes to kcp.
package workspacemounts

import (
	"errors"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// ReasonPending is the reason of a mounted Workspace the controller has not reached yet.
const ReasonPending = mount.ReasonPending

// FromWorkspace is the WorkspaceMount of a Workspace, nil for one rule says
// is not mounted, with the labels [mount.BoundedLabels] keeps; clusterPath,
// the path of the Workspace's cluster if known, gives its kcp.io/path and
// status.workspacePath.
func FromWorkspace(rule mount.Rule, ws *tenancyv1alpha1.Workspace, clusterPath logicalcluster.Path) *wsmv1alpha1.WorkspaceMount {
	ref, err := rule.ReferenceOf(ws)
	if errors.Is(err, mount.ErrNotMounted) {
		return nil
	}
	labels, cut := mount.BoundedLabels(ws.Labels)
	cut += mount.LabelsCut(ws.Annotations)
	wsm := &wsmv1alpha1.WorkspaceMount{
		TypeMeta: metav1.TypeMeta{APIVersion: wsmv1alpha1.SchemeGroupVersion.String(), Kind: wsmv1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:              ws.Name,
			UID:               ws.UID,
			ResourceVersion:   ws.ResourceVersion,
			CreationTimestamp: ws.CreationTimestamp,
			Labels:            labels,
			Annotations:       map[string]string{logicalcluster.AnnotationKey: logicalcluster.From(ws).String()},
		},
		Spec:   wsmv1alpha1.WorkspaceMountSpec{MountRef: wsmv1alpha1.MountReference(ref.Bounded())}, // bounded: an invalid reference is any text
		Status: wsmv1alpha1.WorkspaceMountStatus{WorkspacePhase: string(ws.Status.Phase)},
	}
	if cut > 0 {
		wsm.Annotations[mount.LabelsCutAnnotationKey] = strconv.Itoa(cut)
	}
	if !clusterPath.Empty() {
		wsm.Annotations[core.LogicalClusterPathAnnotationKey] = clusterPath.String()
		wsm.Status.WorkspacePath = clusterPath.Join(ws.Name).String()
	}
	status := mount.CurrentStatus(ws.Annotations)
	wsm.Status.Phase = string(status.Phase)
	wsm.Status.Ready = status.Ready
	wsm.Status.URL = status.URL
	wsm.Status.Reason = status.Reason
	wsm.Status.Message = status.Message
	if !status.LastTransitionTime.IsZero() {
		wsm.Status.LastTransitionTime = status.LastTransitionTime.DeepCopy()
	}
	for _, c := range status.Conditions {
		wsm.Status.Conditions = append(wsm.Status.Conditions, wsmv1alpha1.MountCondition(c))
	}
	if !status.LastTransitionTime.IsZero() && (len(status.History) > 0 || status.Since != nil || status.ReadySeconds > 0) {
		for _, tr := range status.Transitions() {
			wsm.Status.Transitions = append(wsm.Status.Transitions, wsmv1alpha1.MountTransition{
				Phase: string(tr.Phase), Ready: tr.Ready, Reason: tr.Reason, Time: tr.Time})
		}
		wsm.Status.Availability = &wsmv1alpha1.MountAvailability{Since: status.FirstSeen(), ReadySeconds: status.ReadySeconds, ObservedSeconds: status.ObservedSeconds()}
	}
	if wsm.Spec.MountRef == (wsmv1alpha1.MountReference{}) {
		// An unparsable legacy annotation: the status still names what the controller read.
		wsm.Spec.MountRef = wsmv1alpha1.MountReference(status.MountRef)
	}
	return wsm
}
