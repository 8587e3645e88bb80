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
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// TestShardedStore: a store over two shards is synced once both are; its
// resource version is the vector of both; a watch from one replays, per
// shard, what came after it, and its events carry the vector; a version that
// does not name the store's shards, or a removed shard, must list again.
func TestShardedStore(t *testing.T) {
	t.Parallel()
	root := newUnstartedHarness(t, mounted("c-root", "a", mount.PhaseReady, nil))
	two := newUnstartedHarness(t, mounted("c-two", "x", mount.PhaseReady, nil))
	s := NewStore(mount.Rule{})
	require.False(t, s.HasSynced(), "no shard yet")
	require.NoError(t, s.AddShard("root", root.informer, nil))
	require.NoError(t, s.AddShard("shard-2", two.informer, nil))
	require.Error(t, s.AddShard("root", root.informer, nil), "a shard once")
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go root.informer.Run(ctx.Done())
	require.Eventually(t, root.store.HasSynced, eventually, tick)
	require.False(t, s.HasSynced(), "shard-2 has not listed yet")
	go two.informer.Run(ctx.Done())
	require.Eventually(t, s.HasSynced, eventually, tick)

	r := NewREST(s, allVisible)
	listed := list(t, r, "*", nil)
	require.Equal(t, []string{"c-root/a", "c-two/x"}, names(listed))
	require.Regexp(t, `^root=\d+,shard-2=\d+$`, listed.ResourceVersion)
	require.Len(t, parseVersion(listed.ResourceVersion), 2)
	require.Equal(t, "root", listed.Items[0].Status.Shard, "each object names its shard")
	require.Equal(t, "shard-2", listed.Items[1].Status.Shard)
	onTwo := list(t, r, "*", &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector(wsmv1alpha1.FieldShard, "shard-2")})
	require.Equal(t, []string{"c-two/x"}, names(onTwo), "a field selector on the shard")

	// A watch from the list sees the changes of both shards, each event
	// with the vector of its moment.
	w := startWatch(t, r, "*", &metainternalversion.ListOptions{ResourceVersion: listed.ResourceVersion})
	root.add(mounted("c-root", "b", mount.PhaseConnecting, nil))
	got := expect(t, w, event{watch.Added, "c-root/b"})
	afterB := objectOf(t, got[0].Object).ResourceVersion
	require.Regexp(t, `^root=\d+,shard-2=\d+$`, afterB)
	require.Greater(t, parseVersion(afterB)["root"], parseVersion(listed.ResourceVersion)["root"])
	require.Equal(t, parseVersion(listed.ResourceVersion)["shard-2"], parseVersion(afterB)["shard-2"])
	two.delete(mounted("c-two", "x", mount.PhaseReady, nil))
	got = expect(t, w, event{watch.Deleted, "c-two/x"})
	afterX := objectOf(t, got[0].Object).ResourceVersion
	require.Greater(t, parseVersion(afterX)["shard-2"], parseVersion(afterB)["shard-2"], "a deletion carries the version of its moment")

	// Resumed from the version after b: only what came after it, from either shard.
	resumed := startWatch(t, r, "*", &metainternalversion.ListOptions{ResourceVersion: afterB})
	expect(t, resumed, event{watch.Deleted, "c-two/x"})
	resumed.Stop()

	for rv, why := range map[string]string{
		"5":                    "a plain number: one shard's, but the store reads two",
		"root=1,shard-2=1":     "older than the history",
		"root=999999":          "shard-2 is missing",
		"root=1,shard-3=1":     "shard-3 is not read",
		"root=1,shard-2=1,x=1": "x is not read",
	} {
		_, err := r.Watch(requestContext("*"), &metainternalversion.ListOptions{ResourceVersion: rv})
		require.True(t, apierrors.IsResourceExpired(err), "%s (%s): %v", rv, why, err)
	}
	_, err := r.Watch(requestContext("*"), &metainternalversion.ListOptions{ResourceVersion: "root=1,,"})
	require.True(t, apierrors.IsBadRequest(err), "%v", err)

	// A shard removed: its objects are DELETED, and older versions must list again.
	s.RemoveShard("root")
	expect(t, w, event{watch.Deleted, "c-root/a"}, event{watch.Deleted, "c-root/b"})
	require.Equal(t, []string{}, names(list(t, r, "*", nil)))
	_, err = r.Watch(requestContext("*"), &metainternalversion.ListOptions{ResourceVersion: afterX})
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)
	now := list(t, r, "*", nil).ResourceVersion
	require.Regexp(t, `^\d+$`, now, "one shard left: a plain number")
	root.add(mounted("c-root", "late", mount.PhaseReady, nil))
	root.flush()
	require.Equal(t, []string{}, names(list(t, r, "*", nil)), "a removed shard's events are dropped")
}
