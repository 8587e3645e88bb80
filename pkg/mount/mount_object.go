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

package mount

import (
	"errors"
	"fmt"
	"strings"
)

// What may be a mount object, and what of it is published. A Workspace's
// creator names the mount object, and the controller reads it with its own
// rights: a reference may name an object its creator may not read. kcp's
// own kinds and Kubernetes' built-in ones are never read (GroupAllowed);
// of any other object, the phase, URL and reason are published, its
// conditions only when it carries kcp's mark of a mount object (IsMarked).

// IsMountAnnotationKey is the annotation kcp documents as a requirement of a
// mount object (kcp docs, concepts/workspaces/mounts.md, "Requirements for
// Mount Objects"), with the value IsMountAnnotationValue. kcp v0.28 to
// v0.32 do not check it; the controller publishes a mount object's
// conditions only when it is there.
const (
	IsMountAnnotationKey   = "experimental.tenancy.kcp.io/is-mount"
	IsMountAnnotationValue = "true"
)

// IsMarked tells whether a mount object's annotations mark it as one:
// IsMountAnnotationKey with the value "true", exactly (as kcp's docs write it).
func IsMarked(annotations map[string]string) bool {
	return annotations[IsMountAnnotationKey] == IsMountAnnotationValue
}

// UnmarkedNote ends the message of a mount object that is not marked: its
// conditions are left out of the status, and how to have them shown.
const UnmarkedNote = "Its conditions are not shown: it is not marked as a mount object; " +
	"its owner shows them by annotating it " + IsMountAnnotationKey + `: "` + IsMountAnnotationValue + `".`

// ErrKindNotAllowed is wrapped by ReferenceOf's error for a reference whose
// kind is one of kcp's or Kubernetes' own (GroupAllowed).
var ErrKindNotAllowed = errors.New("not a mount kind")

// kcpGroups are the API groups kcp serves itself.
var kcpGroups = map[string]bool{
	"tenancy.kcp.io":  true,
	"core.kcp.io":     true,
	"apis.kcp.io":     true,
	"topology.kcp.io": true,
	"cache.kcp.io":    true,
}

// kubernetesUnsuffixedGroups are the groups of Kubernetes' built-in APIs
// without the k8s.io suffix (besides the core group "").
var kubernetesUnsuffixedGroups = map[string]bool{
	"apps":        true,
	"autoscaling": true,
	"batch":       true,
	"extensions":  true,
	"policy":      true,
}

// GroupAllowed tells whether the kinds of an API group may be mount kinds.
// Not allowed: the groups kcp serves itself (tenancy.kcp.io, core.kcp.io,
// apis.kcp.io, topology.kcp.io, cache.kcp.io), and Kubernetes' own: the
// core group "", the unsuffixed built-in groups (apps, autoscaling, batch,
// extensions, policy), and k8s.io and every group ending in ".k8s.io", the
// suffix Kubernetes keeps for its APIs (which takes the APIs of Kubernetes'
// SIG projects, such as gateway.networking.k8s.io, too). Every other group
// is allowed, kcp's contrib.kcp.io and tenants' groups included. A mount
// object is a custom resource that a mount's controller keeps; none of
// these kinds is one, and reading one as a mount object would have the
// controller watch, and publish, objects of kcp or Kubernetes (every
// Workspace of the shard, for tenancy.kcp.io's Workspace).
func GroupAllowed(group string) bool {
	switch {
	case group == "", kcpGroups[group], kubernetesUnsuffixedGroups[group]:
		return false
	case group == "k8s.io", strings.HasSuffix(group, ".k8s.io"):
		return false
	}
	return true
}

// checkKindAllowed returns an error wrapping ErrKindNotAllowed for a
// reference whose group GroupAllowed refuses; r is valid (Validate).
func (r Reference) checkKindAllowed() error {
	gv, err := r.GroupVersionKind()
	if err != nil {
		return err // not reached: Validate parses the apiVersion first
	}
	if GroupAllowed(gv.Group) {
		return nil
	}
	group := gv.Group
	if group == "" {
		group = "the core group"
	}
	return fmt.Errorf("%s of %s is %w: the kinds of %s are kcp's or Kubernetes' own, never mount objects "+
		"(a mount object is a custom resource its mount's controller keeps)", r.Kind, r.APIVersion, ErrKindNotAllowed, group)
}
