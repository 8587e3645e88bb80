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
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The OpenAPI model names of the types, as kubectl explain shows them.
const (
	modelPrefix = "io.workspacemounts.v1alpha1."
)

// OpenAPIModelName implements the OpenAPI model namer.
func (WorkspaceMount) OpenAPIModelName() string { return modelPrefix + "WorkspaceMount" }

// OpenAPIModelName implements the OpenAPI model namer.
func (WorkspaceMountList) OpenAPIModelName() string { return modelPrefix + "WorkspaceMountList" }

// OpenAPIModelName implements the OpenAPI model namer.
func (WorkspaceMountSpec) OpenAPIModelName() string { return modelPrefix + "WorkspaceMountSpec" }

// OpenAPIModelName implements the OpenAPI model namer.
func (WorkspaceMountStatus) OpenAPIModelName() string { return modelPrefix + "WorkspaceMountStatus" }

// OpenAPIModelName implements the OpenAPI model namer.
func (MountReference) OpenAPIModelName() string { return modelPrefix + "MountReference" }

// OpenAPIModelName implements the OpenAPI model namer.
func (MountCondition) OpenAPIModelName() string { return modelPrefix + "MountCondition" }

// GetOpenAPIDefinitions returns the OpenAPI definitions of this API and of the
// meta/v1 types it uses. They are written by hand (four small structs);
// TestOpenAPIDefinitionsMatchTypes keeps them in line with the Go types.
func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := apiextensionsopenapi.GetOpenAPIDefinitions(ref) // meta/v1: ObjectMeta, ListMeta, Time, ...
	defs[WorkspaceMount{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("WorkspaceMount is the mount state of one mounted Workspace: its name is the Workspace's, and the annotation kcp.io/cluster names the logical cluster holding the Workspace object.",
			[]string{"spec", "status"},
			property("apiVersion", stringSchema("APIVersion defines the versioned schema of this representation of an object.")),
			property("kind", stringSchema("Kind is a string value representing the REST resource this object represents.")),
			property("metadata", refSchema(ref, metav1.ObjectMeta{}.OpenAPIModelName(), "Standard object's metadata: name, labels and creationTimestamp are the Workspace's.")),
			property("spec", refSchema(ref, WorkspaceMountSpec{}.OpenAPIModelName(), "What the Workspace mounts.")),
			property("status", refSchema(ref, WorkspaceMountStatus{}.OpenAPIModelName(), "The state of the mount, as the workspacemounts controller last saw it.")),
		),
		Dependencies: []string{metav1.ObjectMeta{}.OpenAPIModelName(), WorkspaceMountSpec{}.OpenAPIModelName(), WorkspaceMountStatus{}.OpenAPIModelName()},
	}
	defs[WorkspaceMountList{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("WorkspaceMountList is a list of WorkspaceMounts.", []string{"items"},
			property("apiVersion", stringSchema("APIVersion defines the versioned schema of this representation of an object.")),
			property("kind", stringSchema("Kind is a string value representing the REST resource this object represents.")),
			property("metadata", refSchema(ref, metav1.ListMeta{}.OpenAPIModelName(), "Standard list metadata.")),
			property("items", spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "The WorkspaceMounts.", Type: []string{"array"},
				Items: &spec.SchemaOrArray{Schema: ptr(refSchema(ref, WorkspaceMount{}.OpenAPIModelName(), ""))},
			}}),
		),
		Dependencies: []string{metav1.ListMeta{}.OpenAPIModelName(), WorkspaceMount{}.OpenAPIModelName()},
	}
	defs[WorkspaceMountSpec{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("WorkspaceMountSpec is what a Workspace mounts.", []string{"mountRef"},
			property("mountRef", refSchema(ref, MountReference{}.OpenAPIModelName(), "The mount object: spec.mount.ref of the Workspace, or the reference in its legacy annotation experimental.tenancy.kcp.io/mount.")),
		),
		Dependencies: []string{MountReference{}.OpenAPIModelName()},
	}
	defs[MountReference{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("MountReference names a mount object in the Workspace's logical cluster.", []string{"apiVersion", "kind", "name"},
			property("apiVersion", stringSchema("The group and version of the mount object.")),
			property("kind", stringSchema("The kind of the mount object.")),
			property("name", stringSchema("The name of the mount object.")),
			property("namespace", stringSchema("The namespace of a namespaced mount object.")),
		),
	}
	defs[WorkspaceMountStatus{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("WorkspaceMountStatus is the state of a mount: the workspacemounts.io/status annotation of the Workspace, and the Workspace's own phase.",
			[]string{"phase", "ready", "reason"},
			property("phase", stringSchema("Ready, Initializing, Connecting, Unknown, NotFound or Invalid.")),
			property("ready", spec.Schema{SchemaProps: spec.SchemaProps{Description: "True when traffic can flow: the mount object is Ready and has a URL.", Type: []string{"boolean"}}}),
			property("url", stringSchema("The mount object's status.URL.")),
			property("reason", stringSchema("A CamelCase word for the state: MountReady, MountURLMissing, MountNotReady, MountPhaseUnrecognized, MountObjectNotFound, MountKindUnknown, MountReferenceInvalid, or Pending before the controller reached the Workspace.")),
			property("message", stringSchema("One sentence on what is wrong and which object to look at.")),
			property("lastTransitionTime", refSchema(ref, metav1.Time{}.OpenAPIModelName(), "When phase or ready last changed.")),
			property("conditions", spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "The mount object's own status.conditions (at most 8).", Type: []string{"array"},
				Items: &spec.SchemaOrArray{Schema: ptr(refSchema(ref, MountCondition{}.OpenAPIModelName(), ""))},
			}}),
			property("workspacePhase", stringSchema("The Workspace's own status.phase: kcp's verdict, beside the mount's.")),
		),
		Dependencies: []string{metav1.Time{}.OpenAPIModelName(), MountCondition{}.OpenAPIModelName()},
	}
	defs[MountCondition{}.OpenAPIModelName()] = common.OpenAPIDefinition{
		Schema: object("MountCondition is one of the mount object's conditions.", []string{"type", "status"},
			property("type", stringSchema("The type of the condition, e.g. Ready.")),
			property("status", stringSchema("True, False or Unknown.")),
			property("reason", stringSchema("The reason for the condition's last transition.")),
			property("message", stringSchema("A message about the condition, cut at 256 bytes.")),
		),
	}
	return defs
}

type namedSchema struct {
	name   string
	schema spec.Schema
}

func property(name string, schema spec.Schema) namedSchema {
	return namedSchema{name: name, schema: schema}
}

func object(description string, required []string, properties ...namedSchema) spec.Schema {
	s := spec.Schema{SchemaProps: spec.SchemaProps{
		Description: description, Type: []string{"object"}, Required: required,
		Properties: map[string]spec.Schema{},
	}}
	for _, p := range properties {
		s.Properties[p.name] = p.schema
	}
	return s
}

func stringSchema(description string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Description: description, Type: []string{"string"}, Default: ""}}
}

func refSchema(ref common.ReferenceCallback, model, description string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Description: description, Default: map[string]interface{}{}, Ref: ref(model)}}
}

func ptr[T any](v T) *T { return &v }
