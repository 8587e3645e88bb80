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
// mounted and what they reference (Rule), the annotation keys and the status JSON.
package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// LegacyAnnotationKey is the JSON annotation kcp up to v0.27 used to mount a
// Workspace: {"spec":{"ref":{...}},"status":{...}}. Honoured only by a Rule
// that says so (--legacy-mount-annotation).
const LegacyAnnotationKey = tenancyv1alpha1.ExperimentalWorkspaceMountAnnotationKey

// MaxLegacyAnnotationBytes bounds the legacy annotation: a longer value is
// refused (and the plugin's caches keep no more of it), where a reference
// with a status is under 3 KiB.
const MaxLegacyAnnotationBytes = 8 << 10

// Reference names a mount object: any object in the Workspace object's own
// logical cluster. Its JSON form is the one of Workspace.spec.mount.ref.
type Reference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// GroupVersionKind parses the apiVersion. It fails for an apiVersion such as
// "a/b/c" that kcp's admission lets through; Validate says more.
func (r Reference) GroupVersionKind() (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(r.Kind), nil
}

// Limits of a valid reference, the ones kcp and Kubernetes put on the objects
// a reference can name.
const (
	// MaxReferenceName is the longest object name a reference may carry.
	MaxReferenceName = validation.DNS1123SubdomainMaxLength
	// MaxReferenceKind is the longest kind: a CRD's kind, lowercased, is a DNS-1035 label.
	MaxReferenceKind = validation.DNS1035LabelMaxLength
)

// Validate tells why a reference cannot name an object, or nil. A valid
// reference can be put in a request path as it is: its group is a DNS-1123
// subdomain, its version a DNS-1035 label, its kind a DNS-1035 label but for
// case (what CRDs and APIResourceSchemas accept), its name a path segment of at
// most 253 bytes that Sanitize leaves as it is (no control or format
// characters), its namespace, if any, a DNS-1123 label. So Status.Bounded and
// Reference.Bounded leave a valid reference as it is. Whatever a tenant wrote,
// the error is short: values are quoted cut at 64 bytes.
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

	var problems []string
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	switch {
	case err != nil || gv.Version == "" || (gv.Group == "" && strings.Contains(r.APIVersion, "/")):
		problems = append(problems, fmt.Sprintf("invalid apiVersion %s (not group/version, or version)", Quote(r.APIVersion)))
	default:
		if gv.Group != "" && len(validation.IsDNS1123Subdomain(gv.Group)) > 0 {
			problems = append(problems, fmt.Sprintf("the group %s of apiVersion is not a DNS-1123 subdomain", Quote(gv.Group)))
		}
		if len(validation.IsDNS1035Label(gv.Version)) > 0 {
			problems = append(problems, fmt.Sprintf("the version %s of apiVersion is not a DNS-1035 label", Quote(gv.Version)))
		}
	}
	if len(validation.IsDNS1035Label(strings.ToLower(r.Kind))) > 0 {
		problems = append(problems, fmt.Sprintf("kind %s is not a kind (at most %d letters, digits and '-', starting with a letter)", Quote(r.Kind), MaxReferenceKind))
	}
	switch {
	case len(r.Name) > MaxReferenceName:
		problems = append(problems, fmt.Sprintf("name %s is longer than %d bytes", Quote(r.Name), MaxReferenceName))
	case len(content.IsPathSegmentName(r.Name)) > 0:
		problems = append(problems, fmt.Sprintf("name %s cannot be an object name (not '.' or '..', no '/' or '%%')", Quote(r.Name)))
	case Sanitize(r.Name) != r.Name:
		problems = append(problems, fmt.Sprintf("name %s has control or format characters or is not UTF-8", Quote(r.Name)))
	}
	if r.Namespace != "" && len(validation.IsDNS1123Label(r.Namespace)) > 0 {
		problems = append(problems, fmt.Sprintf("namespace %s is not a DNS-1123 label", Quote(r.Namespace)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the mount reference is invalid: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Bounded returns r with each field bounded as Status.Bounded bounds the
// status' mountRef (Sanitize, then at most MaxReferenceField bytes): what a
// reader shows of a reference a tenant wrote, valid or not. A valid reference
// is returned as it is.
func (r Reference) Bounded() Reference {
	return Reference{
		APIVersion: bound(r.APIVersion, MaxReferenceField),
		Kind:       bound(r.Kind, MaxReferenceField),
		Name:       bound(r.Name, MaxReferenceField),
		Namespace:  bound(r.Namespace, MaxReferenceField),
	}
}

// Quote quotes a value a tenant wrote, for a message: cut at 64 bytes, so
// that a message stays readable whatever the value.
func Quote(value string) string {
	return strconv.Quote(Truncate(value, 64))
}

// ErrNotMounted is returned by Rule.ReferenceOf for a Workspace that is not mounted.
var ErrNotMounted = errors.New("workspace is not mounted")

// legacyMount is the part of the legacy annotation that is read.
type legacyMount struct {
	Spec struct {
		Reference *Reference `json:"ref"`
	} `json:"spec"`
}

// Rule decides which Workspaces are mounted and what they mount: the one
// rule of a process, which the controller (its queues, indexes and
// reconciles), the virtual workspace's store and the metrics all apply, so
// that they never disagree on a Workspace. The zero Rule is the default:
// spec.mount alone.
type Rule struct {
	// LegacyAnnotation honours the legacy annotation (LegacyAnnotationKey)
	// on a Workspace without spec.mount (--legacy-mount-annotation). Off, such
	// a Workspace is not mounted, whatever the annotation says: kcp v0.28
	// made spec.mount.ref immutable, but anyone who may patch a Workspace
	// may write the annotation, and a mount makes the plugin read an object
	// and, with --workspace-condition, set a condition by which kcp takes the
	// Workspace out of traffic.
	LegacyAnnotation bool
}

// ReferenceOf returns what a Workspace mounts: spec.mount.ref (kcp >= v0.28),
// else, if r honours it, the legacy annotation. It returns ErrNotMounted when
// the Workspace has neither, and another error, with a reference as far as it
// could be read, when the reference is unusable: the Workspace is mounted, but
// invalidly. The error wraps ErrKindNotAllowed for a valid reference to a kind
// that is never a mount kind (GroupAllowed).
func (r Rule) ReferenceOf(ws *tenancyv1alpha1.Workspace) (Reference, error) {
	ref, err := r.referenceOf(ws)
	if err != nil {
		return ref, err
	}
	return ref, ref.checkKindAllowed()
}

// referenceOf is ReferenceOf without the check of the kind.
func (r Rule) referenceOf(ws *tenancyv1alpha1.Workspace) (Reference, error) {
	if ws.Spec.Mount != nil {
		ref := Reference(ws.Spec.Mount.Reference)
		return ref, ref.Validate()
	}
	value, found := r.legacyAnnotation(ws)
	if !found {
		return Reference{}, ErrNotMounted
	}
	if len(value) > MaxLegacyAnnotationBytes {
		return Reference{}, fmt.Errorf("the annotation %s is longer than %d bytes", LegacyAnnotationKey, MaxLegacyAnnotationBytes)
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
func (r Rule) IsMounted(ws *tenancyv1alpha1.Workspace) bool {
	if ws.Spec.Mount != nil {
		return true
	}
	_, found := r.legacyAnnotation(ws)
	return found
}

// MountChanged tells whether what a Workspace mounts changed between two
// versions of it: a change of an annotation r does not honour is none.
func (r Rule) MountChanged(oldWS, newWS *tenancyv1alpha1.Workspace) bool {
	oldValue, oldFound := r.legacyAnnotation(oldWS)
	newValue, newFound := r.legacyAnnotation(newWS)
	return !reflect.DeepEqual(oldWS.Spec.Mount, newWS.Spec.Mount) || oldFound != newFound || oldValue != newValue
}

// legacyAnnotation returns the legacy annotation of ws where it counts:
// r honours it, and ws has no spec.mount (which wins).
func (r Rule) legacyAnnotation(ws *tenancyv1alpha1.Workspace) (string, bool) {
	if !r.LegacyAnnotation || ws.Spec.Mount != nil {
		return "", false
	}
	value, found := ws.Annotations[LegacyAnnotationKey]
	return value, found
}
