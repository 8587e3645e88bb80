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
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

func TestRESTMetadata(t *testing.T) {
	t.Parallel()
	r := NewREST(newUnstartedHarness(t).store, allVisible)
	require.IsType(t, &wsmv1alpha1.WorkspaceMount{}, r.New())
	require.IsType(t, &wsmv1alpha1.WorkspaceMountList{}, r.NewList())
	require.False(t, r.NamespaceScoped())
	require.Equal(t, "WorkspaceMount", r.Kind())
	require.Equal(t, "workspacemount", r.GetSingularName())
	require.Equal(t, []string{"wsm"}, r.ShortNames())
	require.Equal(t, []string{"kcp"}, r.Categories())
	r.Destroy()
}

func TestStoreFollowsTheInformer(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		workspace("c1", "plain"),
		mounted("c2", "a", mount.PhaseConnecting, nil),
	)

	_, found := h.store.get("c1", "plain")
	require.False(t, found, "an unmounted Workspace has no WorkspaceMount")
	a1, found := h.store.get("c1", "a")
	require.True(t, found)
	require.Equal(t, "Ready", a1.phase)
	a2, found := h.store.get("c2", "a")
	require.True(t, found, "the same name in another cluster is another object")
	require.Equal(t, "Connecting", a2.phase)

	// Mounting, changing, unmounting and deleting.
	h.update(mounted("c1", "plain", mount.PhaseInitializing, nil))
	h.update(mounted("c2", "a", mount.PhaseReady, nil))
	h.update(workspace("c1", "a"))
	b := h.add(mounted("c3", "b", mount.PhaseReady, nil))
	h.flush()
	h.delete(b)
	h.flush()

	_, found = h.store.get("c1", "a")
	require.False(t, found, "unmounted")
	plain, found := h.store.get("c1", "plain")
	require.True(t, found, "mounted")
	require.Equal(t, "Initializing", plain.phase)
	a2, _ = h.store.get("c2", "a")
	require.Equal(t, "Ready", a2.phase)
	_, found = h.store.get("c3", "b")
	require.False(t, found, "deleted")

	h.store.lock.RLock()
	items, byCluster := len(h.store.items), h.store.byCluster
	_, hasC3 := byCluster["c3"]
	clusters := len(byCluster)
	h.store.lock.RUnlock()
	require.Equal(t, 2, items)
	require.Equal(t, 2, clusters, "a cluster without WorkspaceMounts is dropped from the index")
	require.False(t, hasC3)
}

func TestStoreRemovesTombstones(t *testing.T) {
	t.Parallel()
	h := newHarness(t, mounted("c1", "a", mount.PhaseReady, nil))
	// A tombstone, as the informer hands out when it missed the deletion.
	h.store.remove(h.store.sources[""], cacheTombstone("c1|a", mounted("c1", "a", mount.PhaseReady, nil)))
	_, found := h.store.get("c1", "a")
	require.False(t, found)
	// Objects of other types, and unknown keys, are ignored.
	h.store.upsert(h.store.sources[""], "not a workspace")
	h.store.remove(h.store.sources[""], cacheTombstone("c9|nope", nil))
}

func TestGet(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, map[string]string{"team": "a"}),
		mounted("c2", "b", mount.PhaseReady, nil),
	)
	r := NewREST(h.store, allVisible)

	obj, err := r.Get(requestContext("c1"), "a", &metav1.GetOptions{})
	require.NoError(t, err)
	wsm := objectOf(t, obj)
	require.Equal(t, "a", wsm.Name)
	require.Equal(t, "c1", logicalcluster.From(wsm).String())
	require.Equal(t, map[string]string{"team": "a"}, wsm.Labels)

	// What Get returns is the caller's to change (the API server sets the kind on it).
	wsm.Kind = "Changed"
	again, err := r.Get(requestContext("c1"), "a", &metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, wsmv1alpha1.Kind, objectOf(t, again).Kind)

	_, err = r.Get(requestContext("c1"), "b", &metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "b is in c2, not c1: %v", err)
	require.Equal(t, "workspacemounts.io", err.(apierrors.APIStatus).Status().Details.Group)
	require.Equal(t, "workspacemounts", err.(apierrors.APIStatus).Status().Details.Kind)

	_, err = r.Get(requestContext("*"), "a", &metav1.GetOptions{})
	require.True(t, apierrors.IsBadRequest(err), "get at *: %v", err)

	_, err = r.Get(context.Background(), "a", &metav1.GetOptions{})
	require.True(t, apierrors.IsInternalError(err), "no target: %v", err)

	unresolved := clusterpath.WithTarget(context.Background(), clusterpath.Target{Path: logicalcluster.NewPath("root:org")})
	_, err = r.Get(unresolved, "a", &metav1.GetOptions{})
	require.True(t, apierrors.IsInternalError(err), "unresolved target: %v", err)
}

func TestNotSynced(t *testing.T) {
	t.Parallel()
	r := NewREST(newUnstartedHarness(t, mounted("c1", "a", mount.PhaseReady, nil)).store, allVisible)

	_, err := r.Get(requestContext("c1"), "a", &metav1.GetOptions{})
	require.True(t, apierrors.IsServiceUnavailable(err), "get: %v", err)
	_, err = r.List(requestContext("*"), &metainternalversion.ListOptions{})
	require.True(t, apierrors.IsServiceUnavailable(err), "list: %v", err)
	_, err = r.Watch(requestContext("c1"), &metainternalversion.ListOptions{})
	require.True(t, apierrors.IsServiceUnavailable(err), "watch: %v", err)
}

func names(list *wsmv1alpha1.WorkspaceMountList) []string {
	out := make([]string, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, logicalcluster.From(&list.Items[i]).String()+"/"+list.Items[i].Name)
	}
	return out
}

func list(t *testing.T, r *REST, target string, options *metainternalversion.ListOptions) *wsmv1alpha1.WorkspaceMountList {
	t.Helper()
	if options == nil {
		options = &metainternalversion.ListOptions{}
	}
	obj, err := r.List(requestContext(target), options)
	require.NoError(t, err)
	return listOf(t, obj)
}

func TestList(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c2", "b", mount.PhaseReady, map[string]string{"team": "x", "tier": "gold"}),
		mounted("c1", "z", mount.PhaseConnecting, map[string]string{"team": "x"}),
		mounted("c1", "a", mount.PhaseReady, map[string]string{"team": "y"}),
		mounted("c3", "m", mount.PhaseNotFound, nil),
		mounted("c2", "a", mount.PhaseInitializing, map[string]string{"team": "y", "tier": "silver"}),
		workspace("c1", "plain"),
	)
	rv := h.flush()
	r := NewREST(h.store, allVisible)

	for _, tc := range []struct {
		name    string
		target  string
		options *metainternalversion.ListOptions
		want    []string
	}{
		{name: "one cluster", target: "c1", want: []string{"c1/a", "c1/z"}},
		{name: "another cluster", target: "c2", want: []string{"c2/a", "c2/b"}},
		{name: "a cluster without mounts", target: "c9", want: []string{}},
		{name: "all clusters, sorted by cluster then name", target: "*", want: []string{"c1/a", "c1/z", "c2/a", "c2/b", "c3/m"}},
		{
			name: "label selector", target: "*",
			options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "x"})},
			want:    []string{"c1/z", "c2/b"},
		},
		{
			name: "label selector in one cluster", target: "c2",
			options: &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"team": "y"})},
			want:    []string{"c2/a"},
		},
		{
			name: "label existence", target: "*",
			options: &metainternalversion.ListOptions{LabelSelector: mustParseLabels(t, "tier")},
			want:    []string{"c2/a", "c2/b"},
		},
		{
			name: "label inequality", target: "*",
			options: &metainternalversion.ListOptions{LabelSelector: mustParseLabels(t, "team!=x")},
			want:    []string{"c1/a", "c2/a", "c3/m"},
		},
		{
			name: "metadata.name", target: "*",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "a")},
			want:    []string{"c1/a", "c2/a"},
		},
		{
			name: "status.phase", target: "*",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", "Ready")},
			want:    []string{"c1/a", "c2/b"},
		},
		{
			name: "status.ready=false", target: "*",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.ready", "false")},
			want:    []string{"c1/z", "c2/a", "c3/m"},
		},
		{
			name: "status.ready=true in one cluster", target: "c1",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.ready", "true")},
			want:    []string{"c1/a"},
		},
		{
			name: "status.phase!=Ready", target: "*",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermNotEqualSelector("status.phase", "Ready")},
			want:    []string{"c1/z", "c2/a", "c3/m"},
		},
		{
			name: "label and field selectors", target: "*",
			options: &metainternalversion.ListOptions{
				LabelSelector: labels.SelectorFromSet(labels.Set{"team": "y"}),
				FieldSelector: fields.OneTermEqualSelector("status.phase", "Ready"),
			},
			want: []string{"c1/a"},
		},
		{
			name: "nothing matches", target: "*",
			options: &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "nope")},
			want:    []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := list(t, r, tc.target, tc.options)
			require.Equal(t, tc.want, names(got))
			require.NotNil(t, got.Items, "an empty list has items: [], not null")
			require.Equal(t, rv, got.ResourceVersion)
			require.Empty(t, got.Continue)
			require.Nil(t, got.RemainingItemCount)
		})
	}
}

func mustParseLabels(t *testing.T, s string) labels.Selector {
	t.Helper()
	selector, err := labels.Parse(s)
	require.NoError(t, err)
	return selector
}

// TestListSortsByClusterThenName lists clusters whose names are prefixes of
// one another: the order is the one of (cluster, name), not of a joined key.
func TestListSortsByClusterThenName(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("root-a", "x", mount.PhaseReady, nil),
		mounted("root", "y", mount.PhaseReady, nil),
		mounted("root", "y-2", mount.PhaseReady, nil),
		mounted("root-a", "a", mount.PhaseReady, nil),
	)
	r := NewREST(h.store, allVisible)

	want := []string{"root/y", "root/y-2", "root-a/a", "root-a/x"}
	require.Equal(t, want, names(list(t, r, "*", nil)))

	// Paging follows the same order.
	var paged []string
	options := &metainternalversion.ListOptions{Limit: 1}
	for range 10 {
		page := list(t, r, "*", options)
		paged = append(paged, names(page)...)
		if page.Continue == "" {
			break
		}
		options.Continue = page.Continue
	}
	require.Equal(t, want, paged)
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	initial := make([]*tenancyv1alpha1.Workspace, 0, 25)
	all := make([]string, 0, 25)
	for i := range 25 {
		cluster := fmt.Sprintf("c%d", i%3)
		name := fmt.Sprintf("ws-%02d", i)
		phase := mount.PhaseReady
		if i%4 == 0 {
			phase = mount.PhaseConnecting
		}
		initial = append(initial, mounted(cluster, name, phase, nil))
		all = append(all, cluster+"/"+name)
	}
	sort.Strings(all)
	h := newHarness(t, initial...)
	r := NewREST(h.store, allVisible)

	for _, tc := range []struct {
		name   string
		target string
		field  fields.Selector
		want   []string
		// exactRemaining: nothing filters, RemainingItemCount is set.
		exactRemaining bool
	}{
		{name: "all clusters", target: "*", want: all},
		{name: "one cluster", target: "c1", want: filterNames(all, func(n string) bool { return n[:2] == "c1" }), exactRemaining: true},
		{
			name: "with a field selector", target: "*", field: fields.OneTermEqualSelector("status.phase", "Connecting"),
			want: []string{"c0/ws-00", "c0/ws-12", "c0/ws-24", "c1/ws-04", "c1/ws-16", "c2/ws-08", "c2/ws-20"},
		},
		{
			name: "one cluster with a field selector", target: "c0", field: fields.OneTermEqualSelector("status.phase", "Ready"),
			want: []string{"c0/ws-03", "c0/ws-06", "c0/ws-09", "c0/ws-15", "c0/ws-18", "c0/ws-21"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			options := &metainternalversion.ListOptions{Limit: 7, FieldSelector: tc.field}
			for page := 0; ; page++ {
				require.Less(t, page, 10, "too many pages")
				result := list(t, r, tc.target, options)
				got = append(got, names(result)...)
				require.LessOrEqual(t, len(result.Items), 7)
				switch {
				case result.Continue == "":
					require.Nil(t, result.RemainingItemCount, "the last page has no remaining item count")
				case tc.exactRemaining:
					require.NotNil(t, result.RemainingItemCount)
					require.Equal(t, int64(len(tc.want)-len(got)), *result.RemainingItemCount)
				default:
					require.Nil(t, result.RemainingItemCount, "a filtered list does not count what is left")
				}
				if result.Continue == "" {
					break
				}
				require.Len(t, result.Items, 7, "a page with a continue token is full")
				options.Continue = result.Continue
			}
			require.Equal(t, tc.want, got, "every object exactly once, in order")
		})
	}

	t.Run("limit larger than the list", func(t *testing.T) {
		t.Parallel()
		result := list(t, r, "*", &metainternalversion.ListOptions{Limit: 100})
		require.Len(t, result.Items, 25)
		require.Empty(t, result.Continue)
		require.Nil(t, result.RemainingItemCount)
	})
	t.Run("limit equal to the list", func(t *testing.T) {
		t.Parallel()
		result := list(t, r, "*", &metainternalversion.ListOptions{Limit: 25})
		require.Len(t, result.Items, 25)
		require.Empty(t, result.Continue)
	})
	t.Run("invalid continue token", func(t *testing.T) {
		t.Parallel()
		for _, token := range []string{"not base64!", base64.RawURLEncoding.EncodeToString([]byte("no separator"))} {
			_, err := r.List(requestContext("*"), &metainternalversion.ListOptions{Limit: 7, Continue: token})
			require.True(t, apierrors.IsBadRequest(err), "%s: %v", token, err)
		}
	})
}

func filterNames(all []string, keep func(string) bool) []string {
	var out []string
	for _, n := range all {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// TestListPagingSurvivesChanges: objects added or removed between pages do
// not make the others appear twice or go missing.
func TestListPagingSurvivesChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("c1", "a", mount.PhaseReady, nil),
		mounted("c1", "b", mount.PhaseReady, nil),
		mounted("c1", "d", mount.PhaseReady, nil),
		mounted("c1", "e", mount.PhaseReady, nil),
	)
	r := NewREST(h.store, allVisible)

	first := list(t, r, "c1", &metainternalversion.ListOptions{Limit: 2})
	require.Equal(t, []string{"c1/a", "c1/b"}, names(first))
	h.delete(mounted("c1", "b", mount.PhaseReady, nil))
	h.add(mounted("c1", "c", mount.PhaseReady, nil))
	h.flush()
	second := list(t, r, "c1", &metainternalversion.ListOptions{Limit: 2, Continue: first.Continue})
	require.Equal(t, []string{"c1/c", "c1/d"}, names(second))
	third := list(t, r, "c1", &metainternalversion.ListOptions{Limit: 2, Continue: second.Continue})
	require.Equal(t, []string{"c1/e"}, names(third))
	require.Empty(t, third.Continue)
}

// visibility is a VisibilityFunc over a fixed answer per cluster, counting its calls.
type visibility struct {
	lock    sync.Mutex
	answers map[logicalcluster.Name]error // nil: visible; errInvisible: not visible; other: an error
	calls   map[logicalcluster.Name]int
	users   []string
	ages    []time.Duration
	// hanging are the clusters whose questions wait for release (or their context).
	hanging  map[logicalcluster.Name]bool
	released chan struct{}
}

var errInvisible = errors.New("invisible")

func newVisibility(answers map[logicalcluster.Name]error) *visibility {
	return &visibility{answers: answers, calls: map[logicalcluster.Name]int{}, hanging: map[logicalcluster.Name]bool{}, released: make(chan struct{})}
}

func (v *visibility) visible(ctx context.Context, cluster logicalcluster.Name, maxAge time.Duration) (bool, error) {
	v.lock.Lock()
	defer v.lock.Unlock()
	v.calls[cluster]++
	v.ages = append(v.ages, maxAge)
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		v.users = append(v.users, u.GetName())
	}
	if v.hanging[cluster] {
		v.lock.Unlock()
		<-v.released // a VisibilityFunc that does not heed its context
		v.lock.Lock()
		return false, errors.New("released")
	}
	err, found := v.answers[cluster]
	switch {
	case !found, errors.Is(err, errInvisible):
		return false, nil
	case err != nil:
		return true, err // an error wins over the answer
	default:
		return true, nil
	}
}

// hang makes the questions about cluster wait until release.
func (v *visibility) hang(cluster logicalcluster.Name) {
	v.lock.Lock()
	defer v.lock.Unlock()
	v.hanging[cluster] = true
}

// release lets the hanging questions go.
func (v *visibility) release() { close(v.released) }

// maxAges are the maxAge of every question, in order.
func (v *visibility) maxAges() []time.Duration {
	v.lock.Lock()
	defer v.lock.Unlock()
	return append([]time.Duration(nil), v.ages...)
}

// set changes the answer for cluster: nil, errInvisible or another error.
func (v *visibility) set(cluster logicalcluster.Name, answer error) {
	v.lock.Lock()
	defer v.lock.Unlock()
	v.answers[cluster] = answer
}

func (v *visibility) callCounts() map[logicalcluster.Name]int {
	v.lock.Lock()
	defer v.lock.Unlock()
	out := map[logicalcluster.Name]int{}
	for k, n := range v.calls {
		out[k] = n
	}
	return out
}

func (v *visibility) reset() {
	v.lock.Lock()
	defer v.lock.Unlock()
	v.calls = map[logicalcluster.Name]int{}
	v.users = nil
	v.ages = nil
}

func TestListVisibility(t *testing.T) {
	t.Parallel()
	h := newHarness(t,
		mounted("visible", "a", mount.PhaseReady, nil),
		mounted("visible", "b", mount.PhaseReady, nil),
		mounted("visible", "c", mount.PhaseReady, nil),
		mounted("hidden", "a", mount.PhaseReady, nil),
		mounted("hidden", "b", mount.PhaseReady, nil),
		mounted("failing", "a", mount.PhaseReady, nil),
		mounted("unknown", "a", mount.PhaseReady, nil),
		mounted("also-visible", "z", mount.PhaseReady, nil),
	)
	v := newVisibility(map[logicalcluster.Name]error{
		"visible":      nil,
		"also-visible": nil,
		"hidden":       errInvisible,
		"failing":      errors.New("kcp is down"),
	})
	r := NewREST(h.store, v.visible)

	got := list(t, r, "*", nil)
	require.Equal(t, []string{"also-visible/z", "visible/a", "visible/b", "visible/c"}, names(got))
	require.Equal(t, map[logicalcluster.Name]int{"visible": 1, "also-visible": 1, "hidden": 1, "failing": 1, "unknown": 1}, v.callCounts(),
		"visibility is asked once per cluster per list")
	require.Contains(t, v.users, "alice", "visibility is asked with the request's context")

	// Each list asks again.
	v.reset()
	got = list(t, r, "*", &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "a")})
	require.Equal(t, []string{"visible/a"}, names(got))
	for cluster, n := range v.callCounts() {
		require.Equal(t, 1, n, cluster)
	}

	// Paging counts only visible objects.
	v.reset()
	page := list(t, r, "*", &metainternalversion.ListOptions{Limit: 3})
	require.Equal(t, []string{"also-visible/z", "visible/a", "visible/b"}, names(page))
	require.NotEmpty(t, page.Continue)
	require.Nil(t, page.RemainingItemCount, "what is left is not counted at *: it would mean asking about every cluster")
	page = list(t, r, "*", &metainternalversion.ListOptions{Limit: 3, Continue: page.Continue})
	require.Equal(t, []string{"visible/c"}, names(page))
	require.Empty(t, page.Continue)

	// One cluster: visibility is the authorizer's business, not asked here.
	v.reset()
	got = list(t, r, "hidden", nil)
	require.Equal(t, []string{"hidden/a", "hidden/b"}, names(got))
	require.Empty(t, v.callCounts())
}

// TestListPageStopsAsking: a page at * asks about the clusters on its way
// to being full, not about every cluster of the shard.
func TestListPageStopsAsking(t *testing.T) {
	t.Parallel()
	initial := make([]*tenancyv1alpha1.Workspace, 0, 300)
	answers := map[logicalcluster.Name]error{}
	for i := range 100 {
		cluster := fmt.Sprintf("c%03d", i)
		for _, name := range []string{"a", "b", "c"} {
			initial = append(initial, mounted(cluster, name, mount.PhaseReady, nil))
		}
		answers[logicalcluster.Name(cluster)] = nil
		if i%2 == 1 {
			answers[logicalcluster.Name(cluster)] = errInvisible
		}
	}
	h := newHarness(t, initial...)
	v := newVisibility(answers)
	r := NewREST(h.store, v.visible)
	asked := func() []string {
		counts := v.callCounts()
		clusters := make([]string, 0, len(counts))
		for cluster, n := range counts {
			require.Equal(t, 1, n, "visibility of %s asked %d times in one list", cluster, n)
			clusters = append(clusters, cluster.String())
		}
		sort.Strings(clusters)
		v.reset()
		return clusters
	}

	// Ten objects: c000 (visible) gives three, c001 (not) none, and so on
	// until the fourth visible cluster, c006, gives the tenth.
	page := list(t, r, "*", &metainternalversion.ListOptions{Limit: 10})
	require.Equal(t, []string{
		"c000/a", "c000/b", "c000/c", "c002/a", "c002/b", "c002/c", "c004/a", "c004/b", "c004/c", "c006/a",
	}, names(page))
	require.Equal(t, []string{"c000", "c001", "c002", "c003", "c004", "c005", "c006"}, asked())
	require.NotEmpty(t, page.Continue)
	require.Nil(t, page.RemainingItemCount)

	// The next page asks from where the last one ended; c006 again, as a
	// page asks on its own.
	page = list(t, r, "*", &metainternalversion.ListOptions{Limit: 10, Continue: page.Continue})
	require.Equal(t, "c006/b", names(page)[0])
	require.Len(t, page.Items, 10)
	require.Equal(t, []string{"c006", "c007", "c008", "c009", "c010", "c011", "c012"}, asked())

	// Visibility is asked before the selectors, about every cluster the
	// page passes: a selector that matches nothing costs what one that
	// matches only objects the user cannot see costs.
	page = list(t, r, "*", &metainternalversion.ListOptions{Limit: 10, FieldSelector: fields.OneTermEqualSelector("metadata.name", "nope")})
	require.Empty(t, page.Items)
	require.Empty(t, page.Continue)
	require.Len(t, asked(), 100)

	// One object per page: one cluster per page.
	page = list(t, r, "*", &metainternalversion.ListOptions{Limit: 1, LabelSelector: labels.Everything()})
	require.Equal(t, []string{"c000/a"}, names(page))
	require.Equal(t, []string{"c000"}, asked())

	// Without a limit, every cluster, once.
	page = list(t, r, "*", nil)
	require.Len(t, page.Items, 150)
	require.Len(t, asked(), 100)
}

func cacheTombstone(key string, obj interface{}) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

// TestSelectorsDoNotChangeVisibilityQuestions: at *, what a list or a watch
// asks about visibility (and so the reviews it costs) does not depend on
// objects its user cannot see: a selector that matches only an object of
// another tenant's cluster costs what one that matches nothing costs.
func TestSelectorsDoNotChangeVisibilityQuestions(t *testing.T) {
	t.Parallel()
	asked := func(t *testing.T, selector string, limit int64, watching bool) map[logicalcluster.Name]int {
		t.Helper()
		h := newHarness(t,
			mounted("mine", "a", mount.PhaseReady, map[string]string{"customer": "me"}),
			mounted("theirs", "a", mount.PhaseReady, map[string]string{"customer": "bigbank"}),
			mounted("zzz-theirs", "a", mount.PhaseReady, nil),
		)
		v := newVisibility(map[logicalcluster.Name]error{"mine": nil, "theirs": errInvisible, "zzz-theirs": errInvisible})
		r := NewREST(h.store, v.visible)
		clock := useManualClock(r)
		s, err := labels.Parse(selector)
		require.NoError(t, err)
		options := &metainternalversion.ListOptions{LabelSelector: s, Limit: limit}
		if !watching {
			list(t, r, "*", options)
			return v.callCounts()
		}
		w := startWatch(t, r, "*", &metainternalversion.ListOptions{LabelSelector: s, SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true})
		next(t, w) // the end of the initial events
		h.update(mounted("theirs", "a", mount.PhaseConnecting, map[string]string{"customer": "bigbank"}))
		h.update(mounted("theirs", "a", mount.PhaseReady, map[string]string{"customer": "bigbank"}))
		expectQuiet(t, h, w)
		clock.tick(t, 0)
		// Once on the way, once at the re-check: every cluster, whatever matches.
		want := map[logicalcluster.Name]int{"mine": 2, "theirs": 2, "zzz-theirs": 2}
		require.Eventually(t, func() bool { return reflect.DeepEqual(want, v.callCounts()) }, eventually, tick)
		expectQuiet(t, h, w)
		return v.callCounts()
	}
	for _, tc := range []struct {
		name     string
		limit    int64
		watching bool
	}{
		{name: "list"},
		{name: "list, one object a page", limit: 1},
		{name: "watch", watching: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			matching := asked(t, "customer=bigbank", tc.limit, tc.watching)
			notMatching := asked(t, "customer=nobody", tc.limit, tc.watching)
			require.Equal(t, notMatching, matching)
			require.Contains(t, matching, logicalcluster.Name("theirs"))
		})
	}
}
