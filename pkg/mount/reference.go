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

// Package mount is the contract between the workspacemounts controller, which
// writes the mount state of a Workspace as two annotations, and its readers
// (the virtual workspace, the metrics, kubectl users): which Workspaces are
// mounted, what they reference, the annotation keys and the status JSON.
package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// LegacyAnnotationKey is the JSON annotation kcp up to v0.27 used to mount a
// Workspace: {"spec":{"ref":{...}},"status":{...}}.
const LegacyAnnotationKey = tenancyv1alpha1.ExperimentalWorkspaceMountAnnotationKey

// Reference names a mount object: any object in the Workspace object's own
// logical cluster. Its JSON form is the one of Workspace.spec.mount.ref.
type Reference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// String returns kind/name, or kind/namespace/name for namespaced objects.
func (r Reference) String() string {
	if r.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Name)
}

// GroupVersionKind parses the apiVersion. It fails for an apiVersion such as
// "a/b/c" that kcp's admission lets through.
func (r Reference) GroupVersionKind() (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(r.Kind), nil
}

// Validate tells why a reference cannot name an object, or nil.
func (r Reference) Validate() error {
	var missing []string
	if r.APIVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if r.Kind == "" {
		missing = append(missing, "kind")
	}
	if r.Name == "" {
		missing = append(missing, "name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the mount reference has no %s", strings.Join(missing, ", "))
	}
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return fmt.Errorf("the mount reference has an invalid apiVersion %q: %w", r.APIVersion, err)
	}
	if gv.Version == "" {
		return fmt.Errorf("the mount reference has an invalid apiVersion %q: no version", r.APIVersion)
	}
	return nil
}

// ErrNotMounted is returned by ReferenceOf for a Workspace that is not mounted.
var ErrNotMounted = errors.New("workspace is not mounted")

// legacyMount is the part of the legacy annotation that is read.
type legacyMount struct {
	Spec struct {
		Reference *Reference `json:"ref"`
	} `json:"spec"`
}

// ReferenceOf returns what a Workspace mounts: spec.mount.ref (kcp >= v0.28),
// else the legacy annotation. It returns ErrNotMounted when the Workspace has
// neither, and another error, with a reference as far as it could be read, when
// the reference is unusable: the Workspace is mounted, but invalidly.
func ReferenceOf(ws *tenancyv1alpha1.Workspace) (Reference, error) {
	if ws.Spec.Mount != nil {
		ref := Reference(ws.Spec.Mount.Reference)
		return ref, ref.Validate()
	}
	value, found := ws.Annotations[LegacyAnnotationKey]
	if !found {
		return Reference{}, ErrNotMounted
	}
	var legacy legacyMount
	if err := json.Unmarshal([]byte(value), &legacy); err != nil {
		return Reference{}, fmt.Errorf("the annotation %s is not valid JSON: %w", LegacyAnnotationKey, err)
	}
	if legacy.Spec.Reference == nil {
		return Reference{}, fmt.Errorf("the annotation %s has no spec.ref", LegacyAnnotationKey)
	}
	return *legacy.Spec.Reference, legacy.Spec.Reference.Validate()
}

// IsMounted tells whether a Workspace is mounted, validly or not.
func IsMounted(ws *tenancyv1alpha1.Workspace) bool {
	if ws.Spec.Mount != nil {
		return true
	}
	_, found := ws.Annotations[LegacyAnnotationKey]
	return found
}
