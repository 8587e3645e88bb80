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
	"slices"
	"strconv"
)

// The labels of a Workspace the plugin keeps: a tenant may put any number
// on its Workspaces, and what the plugin keeps of them is its memory, which
// every tenant shares. BoundedLabels keeps, in the order of their keys,
// every label that still fits within MaxLabels labels and MaxLabelBytes
// bytes (key and value); a label selector of the virtual workspace sees only
// those. LabelsCutAnnotationKey counts the others.
const (
	MaxLabels     = 64
	MaxLabelBytes = 4 << 10
	// LabelsCutAnnotationKey is set, on a Workspace as the plugin caches it
	// and on its WorkspaceMount, to the number of labels BoundedLabels did
	// not keep, where it kept fewer than the Workspace has.
	LabelsCutAnnotationKey = "workspacemounts.io/labels-cut"
)

// BoundedLabels returns the labels the plugin keeps of labels, and how many
// it did not keep. It returns labels itself, not a copy, when it keeps them
// all. It is deterministic and idempotent.
func BoundedLabels(labels map[string]string) (map[string]string, int) {
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	if len(labels) <= MaxLabels && size <= MaxLabelBytes {
		return labels, 0
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	kept := make(map[string]string, MaxLabels)
	size = 0
	for _, k := range keys {
		if len(kept) == MaxLabels {
			break
		}
		if n := len(k) + len(labels[k]); size+n <= MaxLabelBytes {
			kept[k] = labels[k]
			size += n
		}
	}
	return kept, len(labels) - len(kept)
}

// LabelsCut is the number LabelsCutAnnotationKey holds in annotations, 0
// if none (or not a count).
func LabelsCut(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[LabelsCutAnnotationKey])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
