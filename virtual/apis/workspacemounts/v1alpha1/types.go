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

// Package v1alpha1 is the API of the workspacemounts virtual workspace:
// group workspacemounts.io, one read-only, cluster-scoped kind, WorkspaceMount,
// one object per mounted Workspace.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkspaceMount is the mount state of one mounted Workspace. Its name is the
// Workspace's, and the annotation kcp.io/cluster names the logical cluster
// holding the Workspace object.
type WorkspaceMount struct {
	metav1.TypeMeta `json:",inline"`
	// metadata: name, labels and creationTimestamp are the Workspace's.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the Workspace mounts.
	Spec WorkspaceMountSpec `json:"spec"`
	// status is the state of the mount, as the workspacemounts controller last saw it.
	Status WorkspaceMountStatus `json:"status"`
}

// WorkspaceMountSpec is what a Workspace mounts.
type WorkspaceMountSpec struct {
	// mountRef is the mount object: spec.mount.ref of the Workspace, or the
	// reference in its legacy annotation experimental.tenancy.kcp.io/mount.
	MountRef MountReference `json:"mountRef"`
}

// MountReference names a mount object in the Workspace's logical cluster.
type MountReference struct {
	// apiVersion is the group and version of the mount object.
	APIVersion string `json:"apiVersion"`
	// kind is the kind of the mount object.
	Kind string `json:"kind"`
	// name is the name of the mount object.
	Name string `json:"name"`
	// namespace is the namespace of a namespaced mount object.
	Namespace string `json:"namespace,omitempty"`
}

// WorkspaceMountStatus is the state of a mount: the workspacemounts.io/status
// annotation of the Workspace, and the Workspace's own phase.
type WorkspaceMountStatus struct {
	// phase is Ready, Initializing, Connecting, Unknown, NotFound or Invalid.
	Phase string `json:"phase"`
	// ready is true when traffic can flow: the mount object is Ready and has a URL.
	Ready bool `json:"ready"`
	// url is the mount object's status.URL.
	URL string `json:"url,omitempty"`
	// reason is a CamelCase word for the state, e.g. MountReady, MountNotReady,
	// MountObjectNotFound, MountKindUnknown, or Pending before the controller reached the Workspace.
	Reason string `json:"reason"`
	// message says in one sentence what is wrong and which object to look at.
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when phase or ready last changed.
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// conditions are the mount object's own status.conditions (at most 8).
	Conditions []MountCondition `json:"conditions,omitempty"`
	// workspacePhase is the Workspace's own status.phase: kcp's verdict, beside the mount's.
	WorkspacePhase string `json:"workspacePhase,omitempty"`
}

// MountCondition is one of the mount object's conditions.
type MountCondition struct {
	// type of the condition, e.g. Ready.
	Type string `json:"type"`
	// status of the condition: True, False or Unknown.
	Status string `json:"status"`
	// reason for the condition's last transition.
	Reason string `json:"reason,omitempty"`
	// message about the condition, cut at 256 bytes.
	Message string `json:"message,omitempty"`
}

// WorkspaceMountList is a list of WorkspaceMounts.
type WorkspaceMountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WorkspaceMount `json:"items"`
}
