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

// Package mount is the contract between the controller, which writes a mounted Workspace's state as
// two annotations, and its readers: which Workspaces are mounted ([Rule]) and the [Status] JSON.
// docs/design/pkg-mount.md explains its choices.
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

// LegacyAnnotationKey is kcp v0.27's mount annotation, read with --legacy-mount-annotation.
const LegacyAnnotationKey = tenancyv1alpha1.ExperimentalWorkspaceMountAnnotationKey

const MaxLegacyAnnotationBytes = 8 << 10

// Reference names a mount object in the Workspace's own logical cluster.
type Reference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

func (r Reference) GroupVersionKind() (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gv.WithKind(r.Kind), nil
}

const (
	MaxReferenceName = validation.DNS1123SubdomainMaxLength
	MaxReferenceKind = validation.DNS1035LabelMaxLength
)

// Validate tells why a reference cannot name an object; a valid one fits a request path as it is.
func (r Reference) Validate() error {
	var missing []string
	for _, field := range []struct{ name, value string }{{"apiVersion", r.APIVersion}, {"kind", r.Kind}, {"name", r.Name}} {
		if field.value == "" {
			missing = append(missing, field.name)
		}
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

// Bounded returns r as readers show it, each field bounded.
func (r Reference) Bounded() Reference {
	return Reference{
		APIVersion: bound(r.APIVersion, MaxReferenceField),
		Kind:       bound(r.Kind, MaxReferenceField),
		Name:       bound(r.Name, MaxReferenceField),
		Namespace:  bound(r.Namespace, MaxReferenceField),
	}
}

// Quote quotes a value a tenant wrote, cut at 64 bytes.
func Quote(value string) string {
	return strconv.Quote(Truncate(value, 64))
}

var ErrNotMounted = errors.New("workspace is not mounted")

type legacyMount struct {
	Spec struct {
		Reference *Reference `json:"ref"`
	} `json:"spec"`
}

// Rule decides which Workspaces are mounted, the same for every part of a process; LegacyAnnotation
// is --legacy-mount-annotation.
type Rule struct {
	LegacyAnnotation bool
}

// ReferenceOf returns what a Workspace mounts, or [ErrNotMounted], an error wrapping
// [ErrKindNotAllowed], or why the reference is unusable.
func (r Rule) ReferenceOf(ws *tenancyv1alpha1.Workspace) (Reference, error) {
	ref, err := r.referenceOf(ws)
	if err != nil {
		return ref, err
	}
	return ref, ref.checkKindAllowed()
}

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

func (r Rule) IsMounted(ws *tenancyv1alpha1.Workspace) bool {
	_, found := r.legacyAnnotation(ws)
	return ws.Spec.Mount != nil || found
}

// MountChanged tells whether what a Workspace mounts changed, as r reads it.
func (r Rule) MountChanged(oldWS, newWS *tenancyv1alpha1.Workspace) bool {
	oldValue, oldFound := r.legacyAnnotation(oldWS)
	newValue, newFound := r.legacyAnnotation(newWS)
	return !reflect.DeepEqual(oldWS.Spec.Mount, newWS.Spec.Mount) || oldFound != newFound || oldValue != newValue
}

// legacyAnnotation counts only if r honours it and spec.mount is not set.
func (r Rule) legacyAnnotation(ws *tenancyv1alpha1.Workspace) (string, bool) {
	if !r.LegacyAnnotation || ws.Spec.Mount != nil {
		return "", false
	}
	value, found := ws.Annotations[LegacyAnnotationKey]
	return value, found
}

// kcp's documented mark of a mount object, which the controller needs to publish its conditions.
const (
	IsMountAnnotationKey   = "experimental.tenancy.kcp.io/is-mount"
	IsMountAnnotationValue = "true"
)

func IsMarked(annotations map[string]string) bool {
	return annotations[IsMountAnnotationKey] == IsMountAnnotationValue
}

// UnmarkedNote ends the message of a mount object that is not [IsMarked].
const UnmarkedNote = "Its conditions are not shown: it is not marked as a mount object; " +
	"its owner shows them by annotating it " + IsMountAnnotationKey + `: "` + IsMountAnnotationValue + `".`

var ErrKindNotAllowed = errors.New("not a mount kind")

var kcpGroups = map[string]bool{"tenancy.kcp.io": true, "core.kcp.io": true, "apis.kcp.io": true, "topology.kcp.io": true, "cache.kcp.io": true}

var kubernetesUnsuffixedGroups = map[string]bool{"apps": true, "autoscaling": true, "batch": true, "extensions": true, "policy": true}

// GroupAllowed tells whether a group's kinds may be mount kinds: not kcp's, nor Kubernetes' own
// (docs/design/pkg-mount.md).
func GroupAllowed(group string) bool {
	return group != "" && !kcpGroups[group] && !kubernetesUnsuffixedGroups[group] && group != "k8s.io" && !strings.HasSuffix(group, ".k8s.io")
}

func (r Reference) checkKindAllowed() error {
	gv, err := r.GroupVersionKind()
	if err != nil || GroupAllowed(gv.Group) {
		return err
	}
	group := gv.Group
	if group == "" {
		group = "the core group"
	}
	return fmt.Errorf("%s of %s is %w: the kinds of %s are kcp's or Kubernetes' own, never mount objects "+
		"(a mount object is a custom resource its mount's controller keeps)", r.Kind, r.APIVersion, ErrKindNotAllowed, group)
}
