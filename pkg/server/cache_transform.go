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
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// TrimForCache is the informers' transform: it keeps of each object what the
// controller, the virtual workspace and the metrics read, so that a shard
// with 10^5 Workspaces fits in little memory. The controller owns the rule
// for Workspaces (workspacemounts.TrimWorkspace): its writes depend on it.
// Exported for test/bench/scale, which feeds real informers with it.
func TrimForCache(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	switch obj := obj.(type) {
	case *tenancyv1alpha1.Workspace:
		workspacemounts.TrimWorkspace(obj)
	case *corev1alpha1.LogicalCluster:
		// Whether it exists, and its path.
		annotations := map[string]string{logicalcluster.AnnotationKey: obj.Annotations[logicalcluster.AnnotationKey]}
		if path, ok := obj.Annotations[core.LogicalClusterPathAnnotationKey]; ok {
			annotations[core.LogicalClusterPathAnnotationKey] = path
		}
		obj.Annotations = annotations
		obj.Labels, obj.OwnerReferences, obj.Finalizers = nil, nil, nil
		obj.Spec, obj.Status = corev1alpha1.LogicalClusterSpec{}, corev1alpha1.LogicalClusterStatus{}
	}
	return restmapping.StripSchemas(obj)
}
