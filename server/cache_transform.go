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
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
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
		shared.shareAlike(obj)
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

// Bounds of the sharing table, which starts again when full, so that what
// tenants write cannot make it grow.
const (
	maxSharedLabels = 4
	maxSharedString = 320
	maxShared       = 1 << 14
)

var shared = newSharing()

// sharing gives the strings and label maps many cached Workspaces hold
// alike one copy, safe since no one modifies an informer cache's object.
type sharing struct {
	lock    sync.Mutex
	strings map[string]string
	labels  map[string]map[string]string
}

func newSharing() *sharing {
	return &sharing{strings: map[string]string{}, labels: map[string]map[string]string{}}
}

func (s *sharing) shareAlike(ws *tenancyv1alpha1.Workspace) {
	s.lock.Lock()
	defer s.lock.Unlock()
	for _, key := range []string{logicalcluster.AnnotationKey, mount.PhaseAnnotationKey} {
		if value, found := ws.Annotations[key]; found {
			ws.Annotations[key] = s.string(value)
		}
	}
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseType(s.string(string(ws.Status.Phase)))
	if m := ws.Spec.Mount; m != nil {
		m.Reference.APIVersion, m.Reference.Kind = s.string(m.Reference.APIVersion), s.string(m.Reference.Kind)
	}
	ws.Labels = s.labelMap(ws.Labels)
}

func (s *sharing) string(value string) string {
	if len(value) > maxSharedString {
		return value
	}
	if shared, found := s.strings[value]; found {
		return shared
	}
	if len(s.strings) >= maxShared {
		clear(s.strings)
	}
	s.strings[value] = value
	return value
}

// labelMap returns the shared map equal to labels.
func (s *sharing) labelMap(labels map[string]string) map[string]string {
	if len(labels) == 0 || len(labels) > maxSharedLabels {
		return labels
	}
	keys := make([]string, 0, len(labels))
	size := 0
	for k, v := range labels {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	id := b.String()
	if shared, found := s.labels[id]; found {
		return shared
	}
	if len(s.labels) >= maxShared {
		clear(s.labels)
	}
	own := make(map[string]string, len(labels))
	for k, v := range labels {
		own[s.string(k)] = s.string(v)
	}
	s.labels[id] = own
	return own
}
