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
	"strconv"
	"unicode/utf8"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// keptWorkspaceAnnotations are the only annotations anything here reads, and the legacy annotation where the rule
// honours it.
var keptWorkspaceAnnotations = []string{
	logicalcluster.AnnotationKey, mount.PhaseAnnotationKey, mount.StatusAnnotationKey,
}

// Bounds of what the cache keeps of a Workspace, whatever a tenant writes there (besides the labels:
// [mount.BoundedLabels]).
const (
	maxCachedPhase    = mount.MaxPhase + 4
	maxCachedStatus   = mount.MaxStatusAnnotationBytes + 4
	maxCachedLegacy   = mount.MaxLegacyAnnotationBytes + 4
	maxCachedRefField = mount.MaxReferenceField + 4
	maxCachedURL      = mount.MaxURL + 4
	maxCachedCluster  = 256 // spec.cluster: a logical cluster's name
	// maxCachedReason, maxCachedMessage and maxCachedSeverity bound the two conditions kept whole.
	maxCachedReason   = mount.MaxReason + 4
	maxCachedMessage  = mount.MaxMessage + 4
	maxCachedSeverity = 64
	// maxUnavailableConditions and maxUnavailableType bound the other False Workspace* conditions kept.
	maxUnavailableConditions = 8
	maxUnavailableType       = 128
)

// TrimWorkspace is what the Workspace informer keeps of a Workspace.
func TrimWorkspace(ws *tenancyv1alpha1.Workspace, rule mount.Rule) {
	annotations := map[string]string{}
	for _, key := range keptWorkspaceAnnotations {
		if value, found := ws.Annotations[key]; found {
			annotations[key] = value
		}
	}
	if value, found := ws.Annotations[mount.LegacyAnnotationKey]; found && rule.LegacyAnnotation {
		annotations[mount.LegacyAnnotationKey] = cutBeyond(value, maxCachedLegacy)
	}
	if value, found := annotations[mount.PhaseAnnotationKey]; found {
		annotations[mount.PhaseAnnotationKey] = cutBeyond(value, maxCachedPhase)
	}
	if value, found := annotations[mount.StatusAnnotationKey]; found {
		annotations[mount.StatusAnnotationKey] = cutBeyond(value, maxCachedStatus)
	}
	labels, cut := mount.BoundedLabels(ws.Labels)
	if cut == 0 {
		// Trimmed before: the count stays ([TrimWorkspace] is idempotent).
		cut = mount.LabelsCut(ws.Annotations)
	}
	if cut > 0 {
		annotations[mount.LabelsCutAnnotationKey] = strconv.Itoa(cut)
	}
	ws.Labels = labels
	ws.Annotations = annotations
	ws.OwnerReferences = nil
	ws.Finalizers = nil
	ws.ManagedFields = nil
	spec := tenancyv1alpha1.WorkspaceSpec{Mount: ws.Spec.Mount, Cluster: cutBeyond(ws.Spec.Cluster, maxCachedCluster)}
	if m := ws.Spec.Mount; m != nil {
		ref := &m.Reference
		ref.APIVersion, ref.Kind = cutBeyond(ref.APIVersion, maxCachedRefField), cutBeyond(ref.Kind, maxCachedRefField)
		ref.Name, ref.Namespace = cutBeyond(ref.Name, maxCachedRefField), cutBeyond(ref.Namespace, maxCachedRefField)
		spec.URL = cutBeyond(ws.Spec.URL, maxCachedURL)
	}
	ws.Spec = spec
	status := tenancyv1alpha1.WorkspaceStatus{Phase: ws.Status.Phase}
	if len(status.Phase) > maxCachedPhase {
		status.Phase = corev1alpha1.LogicalClusterPhaseType(cutBeyond(string(status.Phase), maxCachedPhase))
	}
	own, kcps, others := false, false, 0
	for _, c := range ws.Status.Conditions {
		switch {
		case c.Type == mount.ConditionType && !own, c.Type == tenancyv1alpha1.MountConditionReady && !kcps:
			own, kcps = own || c.Type == mount.ConditionType, kcps || c.Type == tenancyv1alpha1.MountConditionReady
			c.Reason, c.Message = cutBeyond(c.Reason, maxCachedReason), cutBeyond(c.Message, maxCachedMessage)
			c.Severity = conditionsv1alpha1.ConditionSeverity(cutBeyond(string(c.Severity), maxCachedSeverity))
			status.Conditions = append(status.Conditions, c)
		case makesUnavailable(c) && others < maxUnavailableConditions:
			others++
			status.Conditions = append(status.Conditions, conditionsv1alpha1.Condition{
				Type: conditionsv1alpha1.ConditionType(cutBeyond(string(c.Type), maxUnavailableType)), Status: c.Status})
		}
	}
	ws.Status = status
}

// cutBeyond cuts s to about limit bytes, on a character boundary, if it is longer: what remains is still longer than
// limit-4 bytes.
func cutBeyond(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > limit-utf8.UTFMax+1 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
