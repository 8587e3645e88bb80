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
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
	"github.com/workspacemounts/workspacemounts/pkg/share"
)

// TrimForCache is the informers' transform: it keeps of each object what
// the parts read under rule, see [workspacemounts.TrimWorkspace], and shares
// what many Workspaces hold alike (docs/design/server-parts.md).
func TrimForCache(rule mount.Rule) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) { return trimForCache(obj, rule) }
}

func trimForCache(obj interface{}, rule mount.Rule) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	switch obj := obj.(type) {
	case *tenancyv1alpha1.Workspace:
		workspacemounts.TrimWorkspace(obj, rule)
		shareAlike(shared, obj)
	case *corev1alpha1.LogicalCluster:
		annotations := map[string]string{logicalcluster.AnnotationKey: obj.Annotations[logicalcluster.AnnotationKey]}
		if path, ok := obj.Annotations[core.LogicalClusterPathAnnotationKey]; ok {
			annotations[core.LogicalClusterPathAnnotationKey] = path
		}
		obj.Annotations = annotations
		obj.Labels, obj.OwnerReferences, obj.Finalizers = nil, nil, nil
		obj.Spec, obj.Status = corev1alpha1.LogicalClusterSpec{}, corev1alpha1.LogicalClusterStatus{}
	}
	return restmapping.TrimForResolver(obj)
}

// shared is the Workspace cache's [share.Table].
var shared = share.New()

// shareAlike gives what many cached Workspaces hold alike one copy.
func shareAlike(s *share.Table, ws *tenancyv1alpha1.Workspace) {
	for _, key := range []string{logicalcluster.AnnotationKey, mount.PhaseAnnotationKey} {
		if value, found := ws.Annotations[key]; found {
			ws.Annotations[key] = s.String(value)
		}
	}
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseType(s.String(string(ws.Status.Phase)))
	if m := ws.Spec.Mount; m != nil {
		m.Reference.APIVersion, m.Reference.Kind = s.String(m.Reference.APIVersion), s.String(m.Reference.Kind)
	}
	ws.Labels = s.Map(ws.Labels)
}
