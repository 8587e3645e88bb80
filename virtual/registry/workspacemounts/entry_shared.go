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

package workspacemounts

import (
	"bytes"
	"slices"
	"strings"
)

var (
	statusKey         = []byte(`"status":{`)
	transitionTimeKey = []byte(`,"lastTransitionTime":`)
)

// shareStatus cuts from the entry's JSON the head of its status, phase to message, where annotation, the status
// annotation of the Workspace the informer caches, holds the same bytes, and keeps that part of annotation instead:
// one copy of them. The entry is not in the store yet.
func (e *entry) shareStatus(annotation string) {
	start := bytes.Index(e.json, statusKey) + len(statusKey)
	if start < len(statusKey) || start < int(e.metadata.end) || e.shared != "" {
		return
	}
	end := bytes.Index(e.json[start:], transitionTimeKey)
	if end <= 0 || e.history != nil && start+end > int(e.history.at) {
		return
	}
	head := e.json[start : start+end]
	at := strings.Index(annotation, string(head))
	if at < 0 {
		return
	}
	e.shared, e.sharedAt = annotation[at:at+len(head)], int32(start) //nolint:gosec // newEntry refuses JSON of 2 GiB or more
	e.json = slices.Concat(e.json[:start], e.json[start+end:])
	if e.history != nil {
		e.history.at -= int32(len(head)) //nolint:gosec // as above
	}
	if e.verbatim {
		// Views of the JSON cut from: of what replaced it.
		e.url, e.workspacePath = inString(e.shared, "url", e.url), inJSON(e.json, "workspacePath", e.workspacePath)
	}
}

// inString is value as a part of s, where s holds key and value verbatim, else value.
func inString(s, key, value string) string {
	if value == "" {
		return value
	}
	needle := `"` + key + `":"` + value + `"`
	at := strings.Index(s, needle)
	if at < 0 {
		return value
	}
	start := at + len(key) + 4
	return s[start : start+len(value)]
}
