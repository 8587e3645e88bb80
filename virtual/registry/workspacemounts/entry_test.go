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

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// withStory is a mounted Workspace whose status has n transitions before
// the current one (Ready since an hour before testNow).
func withStory(name string, n int) *mount.Status {
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

// TestEntryStory: the story an answer writes into an entry's JSON, at each
// of its shapes (none, one state since first seen, up to the most
// transitions kept; every field after it set or not), is byte for byte
// what json.Marshal writes of the decoded object, as of the answer; two
// entries differing in their story only are not the same.
func TestEntryStory(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 0, 1, mount.MaxTransitions - 1} {
		for _, tail := range []struct{ workspacePhase, path, shard string }{{}, {"Ready", "root:org", "shard-2"}, {"", "", "root"}, {"Unavailable", "", ""}} {
			ws := mounted("c1", "a", mount.PhaseReady, nil)
			if n >= 0 {
				ws.Annotations[mount.StatusAnnotationKey] = withStory("a", n).Encode()
			} else {
				delete(ws.Annotations, mount.StatusAnnotationKey) // Pending
			}
			ws.ResourceVersion = "5"
			wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.NewPath(tail.path))
			wsm.Status.WorkspacePhase, wsm.Status.Shard = tail.workspacePhase, tail.shard
			e, err := newEntry(wsm)
			require.NoError(t, err)
			require.Equal(t, n > 0, e.storyAt != 0, "one state since first seen has no story")
			require.Equal(t, n > 0, e.earlier != nil, "and keeps nothing more")
			for _, now := range []time.Time{testNow, testNow.Add(24 * time.Hour), testNow.Add(-48 * time.Hour)} {
				object, err := e.object(now)
				require.NoError(t, err)
				require.Equal(t, string(mustJSON(t, object)), string(e.appendJSON(nil, nil, now)), "%d transitions, %+v", n, tail)
				object.ResourceVersion = "root=9,<x>"
				require.Equal(t, string(mustJSON(t, object)), string(e.appendJSON(nil, mustJSON(t, object.ResourceVersion), now)), "with another resource version")
				if n > 0 {
					require.Len(t, object.Status.Transitions, n+1)
					require.Equal(t, object.Status.Availability.RatioAt(now, true), object.Status.Availability.Ratio)
				}
			}
		}
	}

	ws := mounted("c1", "a", mount.PhaseReady, nil)
	ws.Annotations[mount.StatusAnnotationKey] = withStory("a", 2).Encode()
	e, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	object, err := e.object(testNow)
	require.NoError(t, err)
	require.Equal(t, "0.6666", object.Status.Availability.Ratio, "ready 1 of 2 hours, then the current hour: 2 of 3, rounded down")
	require.Equal(t, int64(3600), object.Status.Availability.CurrentStateSeconds)
	require.Equal(t, "a <&>", object.Status.Transitions[0].Reason)

	other := withStory("a", 2)
	other.History[0].Reason = "another"
	ws.Annotations[mount.StatusAnnotationKey] = other.Encode()
	changed, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	require.Equal(t, string(e.json), string(changed.json), "the story is not in the JSON")
	require.False(t, sameExceptResourceVersion(e, changed), "but it tells the entries apart")
	ws.Annotations[mount.StatusAnnotationKey] = withStory("a", 2).Encode()
	again, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
	require.NoError(t, err)
	require.True(t, sameExceptResourceVersion(e, again))
}

// FuzzEntryStory: whatever status annotation a tenant writes on their
// Workspace, the story an answer writes into the entry's JSON is what
// json.Marshal writes of the decoded object, at any time of the answer.
func FuzzEntryStory(f *testing.F) {
	for n := range mount.MaxTransitions {
		f.Add(withStory("a", n).Encode(), int64(0))
	}
	f.Add(`{"phase":"Ready","ready":true,"lastTransitionTime":"2026-01-01T00:00:00Z","history":[["Unknown",false,"<\"\\\u2028\ufffd>","2025-01-01T00:00:00Z"]],"since":"0001-01-01T00:00:01Z","readySeconds":5}`, int64(-1<<40))
	f.Add(`{"phase":"Invalid","lastTransitionTime":"9999-12-31T23:59:59Z","since":"2026-01-01T00:00:00Z"}`, int64(1<<40))
	f.Fuzz(func(t *testing.T, annotation string, offset int64) {
		ws := mounted("c1", "a", mount.PhaseReady, nil)
		ws.ResourceVersion = "5"
		ws.Annotations[mount.StatusAnnotationKey] = annotation
		e, err := newEntry(FromWorkspace(mount.Rule{}, ws, logicalcluster.Path{}))
		if err != nil {
			t.Fatal(err)
		}
		now := testNow.Add(time.Duration(offset%(1<<40)) * time.Second)
		object, err := e.object(now)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := string(mustJSON(t, object)), string(e.appendJSON(nil, nil, now)); want != got {
			t.Fatalf("the answer's JSON is not the object's:\n%s\n%s", got, want)
		}
	})
}
