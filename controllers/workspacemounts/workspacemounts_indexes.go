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

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

const (
	// WorkspacesByMountKind indexes mounted Workspaces by the kind their reference names.
	WorkspacesByMountKind = "workspacemounts-by-mount-kind"
)

// mountIndexers are the two indexes of the Workspaces that rule says are mounted.
func mountIndexers(rule mount.Rule) cache.Indexers {
	return cache.Indexers{
		WorkspacesByMountKind: func(obj interface{}) ([]string, error) { return indexByMountKind(rule, obj) },
	}
}

// indexByMountKind never returns an error: client-go panics on an index error, and a reference
// that cannot be parsed now is a reason on the Workspace, not a crash.
func indexByMountKind(rule mount.Rule, obj interface{}) ([]string, error) {
	_, _, gvk, ok := validReference(rule, obj)
	if !ok {
		return nil, nil
	}
	return []string{kindKey(gvk)}, nil
}

// validReference returns the Workspace obj is, its mount reference and the kind it names, if obj is a Workspace validly
// mounted by rule.
func validReference(rule mount.Rule, obj interface{}) (*tenancyv1alpha1.Workspace, mount.Reference, schema.GroupVersionKind, bool) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return nil, mount.Reference{}, schema.GroupVersionKind{}, false
	}
	ref, err := rule.ReferenceOf(ws)
	if err != nil {
		return nil, mount.Reference{}, schema.GroupVersionKind{}, false
	}
	gvk, err := ref.GroupVersionKind()
	return ws, ref, gvk, err == nil
}

// kindKey is the key of workspacemounts-mounts for a kind: group/version/kind ("" group for the core group).
func kindKey(gvk schema.GroupVersionKind) string {
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// parseKindKey reverses [kindKey].
func parseKindKey(key string) (schema.GroupVersionKind, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupVersionKind{}, false
	}
	return schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}, true
}

// objectKey names a mount object without its version, so that an event from any version's informer reaches every
// Workspace referencing the object.
func objectKey(cluster logicalcluster.Name, group, kind, namespace, name string) string {
	return strings.Join([]string{cluster.String(), group, kind, namespace, name}, "|")
}
