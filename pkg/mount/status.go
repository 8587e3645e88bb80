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
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The two annotations the controller writes on a mounted Workspace, and the
// only thing it writes.
const (
	// PhaseAnnotationKey holds the Phase alone, for selectors and columns.
	PhaseAnnotationKey = "workspacemounts.io/phase"
	// StatusAnnotationKey holds the Status as compact JSON.
	StatusAnnotationKey = "workspacemounts.io/status"
)

// Phase is the state of a Workspace's mount.
type Phase string

// The phases: the four a mount object reports, and two for a mount object
// that cannot be read.
const (
	PhaseReady        Phase = "Ready"
	PhaseInitializing Phase = "Initializing"
	PhaseConnecting   Phase = "Connecting"
	PhaseUnknown      Phase = "Unknown"
	// PhaseNotFound: the mount object does not exist.
	PhaseNotFound Phase = "NotFound"
	// PhaseInvalid: the reference cannot name an object, or its kind is not served.
	PhaseInvalid Phase = "Invalid"
)

// Phases lists every Phase, in a stable order.
var Phases = []Phase{PhaseReady, PhaseInitializing, PhaseConnecting, PhaseUnknown, PhaseNotFound, PhaseInvalid}

// The reasons, one per situation of the contract.
const (
	ReasonMountReady             = "MountReady"
	ReasonMountURLMissing        = "MountURLMissing"
	ReasonMountNotReady          = "MountNotReady"
	ReasonMountPhaseUnrecognized = "MountPhaseUnrecognized"
	ReasonMountObjectNotFound    = "MountObjectNotFound"
	ReasonMountKindUnknown       = "MountKindUnknown"
	ReasonMountReferenceInvalid  = "MountReferenceInvalid"
)

// Limits on what is copied from the mount object's conditions, so that one
// chatty mount object cannot blow up a Workspace.
const (
	MaxConditions       = 8
	MaxConditionMessage = 256
)

// Condition is one of the mount object's own status.conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Status is the value of StatusAnnotationKey.
type Status struct {
	Phase              Phase       `json:"phase"`
	Ready              bool        `json:"ready"`
	URL                string      `json:"url,omitempty"`
	Reason             string      `json:"reason"`
	Message            string      `json:"message"`
	MountRef           Reference   `json:"mountRef"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	Conditions         []Condition `json:"conditions,omitempty"`
}

// Encode returns the compact JSON of the status.
func (s Status) Encode() string {
	data, err := json.Marshal(s)
	if err != nil {
		// Only strings, bools and times: Marshal cannot fail.
		panic(fmt.Sprintf("encoding a mount status: %v", err))
	}
	return string(data)
}

// ParseStatus reads the status annotation value.
func ParseStatus(value string) (Status, error) {
	var s Status
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return Status{}, fmt.Errorf("the annotation %s is not a mount status: %w", StatusAnnotationKey, err)
	}
	return s, nil
}

// StatusOf returns the status a Workspace's annotations carry, and whether they
// carry one that can be read.
func StatusOf(annotations map[string]string) (Status, bool) {
	value, found := annotations[StatusAnnotationKey]
	if !found {
		return Status{}, false
	}
	s, err := ParseStatus(value)
	return s, err == nil
}
