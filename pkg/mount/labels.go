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
	"maps"
	"slices"
	"strconv"
)

// The labels the plugin keeps of a Workspace, whose tenant may put any number
// on it: [BoundedLabels] keeps those that fit within MaxLabels and
// MaxLabelBytes, and LabelsCutAnnotationKey, on the cached Workspace and its
// WorkspaceMount, counts the others. A label selector sees only those kept.
const (
	MaxLabels              = 64
	MaxLabelBytes          = 4 << 10
	LabelsCutAnnotationKey = "workspacemounts.io/labels-cut"
)

// BoundedLabels returns the labels kept, in the order of their keys, and how
// many were not; labels itself when all are kept. It is idempotent.
func BoundedLabels(labels map[string]string) (map[string]string, int) {
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	if len(labels) <= MaxLabels && size <= MaxLabelBytes {
		return labels, 0
	}
	keys := slices.Sorted(maps.Keys(labels))
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

// LabelsCut is the count [LabelsCutAnnotationKey] holds, 0 if none.
func LabelsCut(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[LabelsCutAnnotationKey])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
