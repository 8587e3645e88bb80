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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkspaceMount is the mount state of one mounted Workspace, of its name, in
// the logical cluster its kcp.io/cluster annotation names.
type WorkspaceMount struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata: name, labels and creationTimestamp are the Workspace's.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What the Workspace mounts.
	Spec WorkspaceMountSpec `json:"spec"`
	// The state of the mount, as the workspacemounts controller last saw it.
	Status WorkspaceMountStatus `json:"status"`
}

// WorkspaceMountSpec is what a Workspace mounts.
type WorkspaceMountSpec struct {
	// The Workspace's spec.mount.ref, or its experimental.tenancy.kcp.io/mount
	// annotation's with --legacy-mount-annotation.
	MountRef MountReference `json:"mountRef"`
}

// MountReference names a mount object in the Workspace's logical cluster.
type MountReference struct {
	// The group and version of the mount object.
	APIVersion string `json:"apiVersion"`
	// The kind of the mount object.
	Kind string `json:"kind"`
	// The name of the mount object.
	Name string `json:"name"`
	// The namespace of a namespaced mount object.
	Namespace string `json:"namespace,omitempty"`
}

// WorkspaceMountStatus is the Workspace's workspacemounts.io/status annotation
// and its own phase.
type WorkspaceMountStatus struct {
	// Ready, Initializing, Connecting, Unknown, NotFound or Invalid.
	Phase string `json:"phase"`
	// True when traffic can flow: the mount object is Ready and has a URL.
	Ready bool `json:"ready"`
	// The mount object's status.URL.
	URL string `json:"url,omitempty"`
	// A CamelCase word for the state, e.g. MountReady, MountNotReady,
	// MountObjectNotFound, or Pending before the controller reached the Workspace.
	Reason string `json:"reason"`
	// One sentence on what is wrong and which object to look at.
	Message string `json:"message,omitempty"`
	// When phase or ready last changed.
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// The mount object's own status.conditions (at most 8).
	Conditions []MountCondition `json:"conditions,omitempty"`
	// The mount's last transitions (at most 5), oldest first, the current
	// state last. Absent while the mount has been in one state since first seen.
	// +listType=atomic
	Transitions []MountTransition `json:"transitions,omitempty"`
	// How long the mount was ready before its current state. Absent, as
	// transitions, while the mount has been in one state since first seen.
	Availability *MountAvailability `json:"availability,omitempty"`
	// The Workspace's own status.phase: kcp's verdict, beside the mount's.
	WorkspacePhase string `json:"workspacePhase,omitempty"`
	// The Workspace's path, e.g. root:org:team:ws, once its cluster's path is known.
	WorkspacePath string `json:"workspacePath,omitempty"`
	// The kcp shard holding the Workspace, e.g. shard-2; empty with --kubeconfig.
	Shard string `json:"shard,omitempty"`
}

// MountCondition is one of the mount object's conditions.
type MountCondition struct {
	// The type of the condition, e.g. Ready.
	Type string `json:"type"`
	// True, False or Unknown.
	Status string `json:"status"`
	// The reason for the condition's last transition.
	Reason string `json:"reason,omitempty"`
	// A message about the condition, cut at 256 bytes.
	Message string `json:"message,omitempty"`
}

// MountTransition is one change of a mount's phase or readiness.
type MountTransition struct {
	// The phase the mount entered.
	Phase string `json:"phase"`
	// Whether the mount was ready from then on.
	Ready bool `json:"ready"`
	// The last reason of the state it entered, e.g. MountNotReady.
	Reason string `json:"reason"`
	// When the controller saw the change (to the second).
	Time metav1.Time `json:"time"`
}

// MountAvailability is how long a mount was ready since the controller
// first saw it, up to the start of its current state: it changes only at a
// transition. [MountAvailability.At] adds the current state as of a time.
type MountAvailability struct {
	// When the controller first saw the mount.
	Since metav1.Time `json:"since"`
	// Seconds the mount was ready between since and lastTransitionTime.
	ReadySeconds int64 `json:"readySeconds"`
	// Seconds between since and lastTransitionTime.
	ObservedSeconds int64 `json:"observedSeconds"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkspaceMountList is a list of WorkspaceMounts.
type WorkspaceMountList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	metav1.ListMeta `json:"metadata,omitempty"`

	// The WorkspaceMounts.
	Items []WorkspaceMount `json:"items"`
}
