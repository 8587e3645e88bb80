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
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// withHistory is a mounted Workspace whose status has n transitions before
// the current one (Ready since an hour before testNow).
func withHistory(name string, n int) *mount.Status {
	s := mount.Status{Phase: mount.PhaseReady, Ready: true, URL: "https://u", Reason: mount.ReasonMountReady,
		LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))}
	if n > 0 {
		s.Since = &metav1.Time{Time: testNow.Add(-time.Duration(n+1) * time.Hour)}
	}
	for i := range n {
		s.History = append(s.History, mount.Transition{Phase: mount.PhaseConnecting, Ready: i%2 == 1, Reason: name + " <&>",
			Time: metav1.NewTime(testNow.Add(-time.Duration(n+1-i) * time.Hour))})
		if i%2 == 1 {
			s.ReadySeconds += 3600
		}
	}
	return &s
}

// TestEntryHistory: an entry's JSON, at each shape of a mount's history
// (none, one state since first seen, up to the most transitions kept; every
// status field after it set or not), is byte for byte what json.Marshal
// writes of the decoded object, with another resource version too; its
// availability is the one fixed at the last transition; two entries
// differing in their history only are not the same.
func TestEntryHistory(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 1, mount.MaxTransitions - 1} {
		for _, tail := range []struct{ workspacePhase, path, shard string }{{}, {"Ready", "root:org", "shard-2"}, {"", "", "root"}, {"Unavailable", "", ""}} {
			for _, plain := range []bool{false, true} {
				ws := mounted("c1", "a", mount.PhaseReady, nil)
				if n >= 0 {
					status := withHistory("a", n)
					for i := range status.History {
						if plain { // written as they are: kept compact
							status.History[i].Reason = "MountNotReady"
						}
					}
					ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
				} else {
					delete(ws.Annotations, mount.StatusAnnotationKey) // Pending
				}
				ws.ResourceVersion = "5"
				wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.NewPath(tail.path))
				wsm.Status.WorkspacePhase, wsm.Status.Shard = tail.workspacePhase, tail.shard
				e, err := newEntry(wsm)
				require.NoError(t, err)
				e.shareStatus(ws.Annotations[mount.StatusAnnotationKey])
				require.Equal(t, n >= 0, e.shared != "", "the status's head is the annotation's")
				object, err := e.object()
				require.NoError(t, err)
				require.Equal(t, string(mustJSON(t, object)), string(e.appendJSON(nil, nil)), "%d transitions, %+v", n, tail)
				require.Equal(t, string(mustJSON(t, wsm)), string(e.appendJSON(nil, nil)))
				require.Equal(t, plain && n > 0, e.history != nil, "a history of strings JSON writes as they are is kept compact")
				object.ResourceVersion = "root=9,<x>"
				require.Equal(t, string(mustJSON(t, object)), string(e.appendJSON(nil, mustJSON(t, object.ResourceVersion))), "with another resource version")
				require.Equal(t, n > 0, object.Status.Availability != nil, "one state since first seen has no history")
				if n > 0 {
					require.Len(t, object.Status.Transitions, n+1)
				}
			}
		}
	}

	ws := mounted("c1", "a", mount.PhaseReady, nil)
	ws.Annotations[mount.StatusAnnotationKey] = withHistory("a", 2).Encode()
	e, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	object, err := e.object()
	require.NoError(t, err)
	a := object.Status.Availability
	require.Equal(t, testNow.Add(-3*time.Hour).Unix(), a.Since.Unix())
	require.Equal(t, []int64{3600, 7200}, []int64{a.ReadySeconds, a.ObservedSeconds}, "ready 1 of the 2 hours before the current state")
	require.Equal(t, "a <&>", object.Status.Transitions[0].Reason)

	other := withHistory("a", 2)
	other.History[0].Reason = "another"
	ws.Annotations[mount.StatusAnnotationKey] = other.Encode()
	changed, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	require.False(t, sameExceptResourceVersion(e, changed), "the history tells the entries apart")
	ws.Annotations[mount.StatusAnnotationKey] = withHistory("a", 2).Encode()
	again, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	require.True(t, sameExceptResourceVersion(e, again))

	plain := withHistory("a", 2)
	plain.History[0].Reason, plain.History[1].Reason = "x", "y"
	ws.Annotations[mount.StatusAnnotationKey] = plain.Encode()
	compact, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	plain.History[1].Reason = "z"
	ws.Annotations[mount.StatusAnnotationKey] = plain.Encode()
	otherCompact, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	require.NotNil(t, compact.history)
	require.False(t, sameExceptResourceVersion(compact, otherCompact), "compact histories tell the entries apart")
	require.False(t, sameExceptResourceVersion(compact, e))
}

// FuzzEntryHistory: whatever status annotation a tenant writes on their
// Workspace, the entry's JSON is what json.Marshal writes of the decoded
// object, with its own resource version or another.
func FuzzEntryHistory(f *testing.F) {
	for n := range mount.MaxTransitions {
		f.Add(withHistory("a", n).Encode(), "6")
	}
	f.Add(`{"phase":"Ready","ready":true,"lastTransitionTime":"2026-01-01T00:00:00Z","history":[["Unknown",false,"<\"\\\u2028\ufffd>","2025-01-01T00:00:00Z"]],"since":"0001-01-01T00:00:01Z","readySeconds":5}`, "root=1,<x>")
	f.Add(`{"phase":"Invalid","lastTransitionTime":"9999-12-31T23:59:59Z","since":"2026-01-01T00:00:00Z"}`, "")
	f.Fuzz(func(t *testing.T, annotation, resourceVersion string) {
		ws := mounted("c1", "a", mount.PhaseReady, nil)
		ws.ResourceVersion = "5"
		ws.Annotations[mount.StatusAnnotationKey] = annotation
		e, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
		if err != nil {
			t.Fatal(err)
		}
		e.shareStatus(annotation)
		object := e.objectAt(resourceVersion)
		var rv []byte
		if resourceVersion != "" {
			rv = mustJSON(t, resourceVersion)
		}
		if want, got := string(mustJSON(t, object)), string(e.appendJSON(nil, rv)); want != got {
			t.Fatalf("the answer's JSON is not the object's:\n%s\n%s", got, want)
		}
	})
}

// TestEntryKeepsOneCopy: the summary's strings made for the entry are views
// of its JSON, equal to what the summary would hold otherwise.
func TestEntryKeepsOneCopy(t *testing.T) {
	t.Parallel()
	wsm := &wsmv1alpha1.WorkspaceMount{
		ObjectMeta: metav1.ObjectMeta{Name: "ws", ResourceVersion: "3", Labels: map[string]string{"url": "https://other.example"}},
		Status:     wsmv1alpha1.WorkspaceMountStatus{Phase: "Ready", URL: "https://kc.example/x", WorkspacePath: "root:org:ws"},
	}
	e, err := newEntry(wsm)
	require.NoError(t, err)
	require.Equal(t, "https://kc.example/x", e.url)
	require.Equal(t, "root:org:ws", e.workspacePath)
	inside := func(s string) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&e.json[0]))
		return p >= start && p < start+uintptr(len(e.json))
	}
	require.True(t, inside(e.url))
	require.True(t, inside(e.workspacePath))

	annotation := `{"phase":"Ready","ready":false,"url":"https://kc.example/x","reason":"R","message":"m","mountRef":{},"lastTransitionTime":"2026-01-01T00:00:00Z"}`
	wsm.Status.Reason, wsm.Status.Message, wsm.Status.LastTransitionTime = "R", "m", &metav1.Time{Time: testNow}
	e, err = newEntry(wsm)
	require.NoError(t, err)
	e.shareStatus(annotation)
	require.Equal(t, "https://kc.example/x", e.url)
	require.Equal(t, `"phase":"Ready","ready":false,"url":"https://kc.example/x","reason":"R","message":"m"`, e.shared, "phase to message")
	inAnnotation := func(s string) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(annotation)))
		return p >= start && p < start+uintptr(len(annotation))
	}
	require.True(t, inAnnotation(e.shared))
	require.True(t, inAnnotation(e.url))
	require.True(t, inside(e.workspacePath), "no view of the JSON before the cut")
	require.Equal(t, string(mustJSON(t, wsm)), string(e.appendJSON(nil, nil)))

	wsm.Status.URL = `https://kc.example/"quoted"`
	e, err = newEntry(wsm)
	require.NoError(t, err)
	require.Equal(t, `https://kc.example/"quoted"`, e.url, "escaped in the JSON: its own copy")
	require.False(t, inside(e.url))
}
