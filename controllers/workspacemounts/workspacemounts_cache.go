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
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// keptWorkspaceAnnotations are the only annotations anything here reads,
// and the legacy annotation where the rule honours it.
var keptWorkspaceAnnotations = []string{
	logicalcluster.AnnotationKey, mount.PhaseAnnotationKey, mount.StatusAnnotationKey,
}

// TrimWorkspace is what the Workspace informer keeps of a Workspace: what
// the controller, the virtual workspace and the metrics read, so that a
// shard with 10^5 Workspaces fits in little memory. It keeps metadata but
// other annotations, owner references, finalizers and managed fields (the
// legacy mount annotation only where rule honours it: without
// --legacy-mount-annotation nothing reads it, and a tenant's value of up to
// kcp's 256 KiB is not held for good);
// spec.mount, spec.cluster and (of a Workspace with spec.mount) spec.URL;
// status.phase, the controller's own condition and kcp's WorkspaceMountReady
// (which --workspace-url keeps; about 200 bytes per mounted Workspace), and
// the type and status of every other False condition whose type starts with "Workspace" (what
// kcp's phase rule reads, kcpPhaseRule).
//
// The controller's writes depend on it: the patch of metadata and spec is
// the difference of two trimmed copies, which differ only in what the
// controller sets there; the status patch is never made from a trimmed copy
// (a merge patch replaces the whole condition list, and the cache holds a
// part of it), only whether one is needed.
func TrimWorkspace(ws *tenancyv1alpha1.Workspace, rule mount.Rule) {
	annotations := map[string]string{}
	for _, key := range keptWorkspaceAnnotations {
		if value, found := ws.Annotations[key]; found {
			annotations[key] = value
		}
	}
	if value, found := ws.Annotations[mount.LegacyAnnotationKey]; found && rule.LegacyAnnotation {
		annotations[mount.LegacyAnnotationKey] = value
	}
	ws.Annotations = annotations
	ws.OwnerReferences = nil
	ws.Finalizers = nil
	ws.ManagedFields = nil
	spec := tenancyv1alpha1.WorkspaceSpec{Mount: ws.Spec.Mount, Cluster: ws.Spec.Cluster}
	if ws.Spec.Mount != nil {
		spec.URL = ws.Spec.URL
	}
	ws.Spec = spec
	status := tenancyv1alpha1.WorkspaceStatus{Phase: ws.Status.Phase}
	for _, c := range ws.Status.Conditions {
		switch {
		case c.Type == mount.ConditionType, c.Type == tenancyv1alpha1.MountConditionReady:
			status.Conditions = append(status.Conditions, c)
		case makesUnavailable(c):
			status.Conditions = append(status.Conditions, conditionsv1alpha1.Condition{Type: c.Type, Status: c.Status})
		}
	}
	ws.Status = status
}
