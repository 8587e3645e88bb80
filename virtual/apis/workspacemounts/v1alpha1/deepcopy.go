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
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out.
func (in *WorkspaceMount) DeepCopyInto(out *WorkspaceMount) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy copies the receiver.
func (in *WorkspaceMount) DeepCopy() *WorkspaceMount {
	if in == nil {
		return nil
	}
	out := new(WorkspaceMount)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WorkspaceMount) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

// DeepCopyInto copies the receiver into out.
func (in *WorkspaceMountStatus) DeepCopyInto(out *WorkspaceMountStatus) {
	*out = *in
	if in.LastTransitionTime != nil {
		out.LastTransitionTime = in.LastTransitionTime.DeepCopy()
	}
	if in.Conditions != nil {
		out.Conditions = make([]MountCondition, len(in.Conditions))
		copy(out.Conditions, in.Conditions)
	}
}

// DeepCopyInto copies the receiver into out.
func (in *WorkspaceMountList) DeepCopyInto(out *WorkspaceMountList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WorkspaceMount, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy copies the receiver.
func (in *WorkspaceMountList) DeepCopy() *WorkspaceMountList {
	if in == nil {
		return nil
	}
	out := new(WorkspaceMountList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WorkspaceMountList) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}
