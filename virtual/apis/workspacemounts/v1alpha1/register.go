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

package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the virtual workspace.
const GroupName = "workspacemounts.io"

// SchemeGroupVersion is the one version served.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource names, as kubectl knows them.
const (
	Resource     = "workspacemounts"
	Singular     = "workspacemount"
	ShortName    = "wsm"
	Kind         = "WorkspaceMount"
	ListKind     = "WorkspaceMountList"
	CategoryName = "kcp"
)

// Field selectors the list and watch accept, besides metadata.name.
const (
	FieldPhase         = "status.phase"
	FieldReady         = "status.ready"
	FieldWorkspacePath = "status.workspacePath"
	FieldShard         = "status.shard"
)

// AddToScheme registers the types, the meta/v1 options, and the field
// selector conversions.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &WorkspaceMount{}, &WorkspaceMountList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(Kind), func(label, value string) (string, string, error) {
		switch label {
		case "metadata.name", FieldPhase, FieldReady, FieldWorkspacePath, FieldShard:
			return label, value, nil
		default:
			return "", "", fmt.Errorf("field label not supported: %s (supported: metadata.name, %s, %s, %s, %s)", label, FieldPhase, FieldReady, FieldWorkspacePath, FieldShard)
		}
	})
}
