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

package server

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// keptWorkspaceAnnotations are the only annotations anything here reads.
var keptWorkspaceAnnotations = []string{
	logicalcluster.AnnotationKey, mount.LegacyAnnotationKey, mount.PhaseAnnotationKey, mount.StatusAnnotationKey,
}

// trimForCache is the informers' transform: it keeps of each object what the
// controller, the virtual workspace and the metrics read, so that a shard
// with 10^5 Workspaces fits in little memory. Patches stay correct: the
// committer diffs two trimmed copies, which differ only in the annotations
// it sets.
func trimForCache(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	switch obj := obj.(type) {
	case *tenancyv1alpha1.Workspace:
		trimWorkspace(obj)
	case *corev1alpha1.LogicalCluster:
		// Only whether it exists is read.
		obj.Annotations = map[string]string{logicalcluster.AnnotationKey: obj.Annotations[logicalcluster.AnnotationKey]}
		obj.Labels, obj.OwnerReferences, obj.Finalizers = nil, nil, nil
		obj.Spec, obj.Status = corev1alpha1.LogicalClusterSpec{}, corev1alpha1.LogicalClusterStatus{}
	}
	return restmapping.StripSchemas(obj)
}

// trimWorkspace keeps metadata (but other annotations, owner references and
// finalizers), spec.mount and spec.cluster, and status.phase.
func trimWorkspace(ws *tenancyv1alpha1.Workspace) {
	annotations := map[string]string{}
	for _, key := range keptWorkspaceAnnotations {
		if value, found := ws.Annotations[key]; found {
			annotations[key] = value
		}
	}
	ws.Annotations = annotations
	ws.OwnerReferences = nil
	ws.Finalizers = nil
	ws.Spec = tenancyv1alpha1.WorkspaceSpec{Mount: ws.Spec.Mount, Cluster: ws.Spec.Cluster}
	ws.Status = tenancyv1alpha1.WorkspaceStatus{Phase: ws.Status.Phase}
}
