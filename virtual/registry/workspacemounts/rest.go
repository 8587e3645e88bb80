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
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

var groupResource = wsmv1alpha1.SchemeGroupVersion.WithResource(wsmv1alpha1.Resource).GroupResource()

// errNoTarget means the request did not come through the cluster path filter.
var errNoTarget = errors.New("no logical cluster in the request context")

// VisibilityFunc tells whether the user of a request may see the
// WorkspaceMounts of a cluster. It is asked for requests to all clusters (*),
// whose objects are filtered one cluster at a time.
//
// maxAge is how old an answer may be: 0 takes any answer the authorizer
// keeps (a stale one included, while kcp is slow: what lists use); above 0,
// an answer kcp gave at most maxAge ago, kcp being asked now otherwise,
// without stale grace, and an error when kcp does not answer in time (what
// watches use, see watchAccess).
type VisibilityFunc func(ctx context.Context, cluster logicalcluster.Name, maxAge time.Duration) (bool, error)

// visibilityRecheckInterval is how often a watch at * asks again about
// every cluster it has an answer for that still has objects, one
// VisibilityFunc call per cluster, and tells its client about the clusters
// that came or went (see watcher.recheckVisibility). A revoked cluster thus
// leaves a watch within this interval, plus however long VisibilityFunc
// keeps an allowed answer (the authorizer caches them).
const visibilityRecheckInterval = 30 * time.Second

// REST is the read-only storage of WorkspaceMounts.
type REST struct {
	store   *Store
	visible VisibilityFunc
	// visibilityTicks starts the clock of a watch at *'s visibility
	// re-checks: a tick every visibilityRecheckInterval. Tests tick it by hand.
	visibilityTicks func() (ticks <-chan time.Time, stop func())
	// jsonEncoder is the identifier of the server's plain JSON encoder of
	// this API's version, whose output the store's JSON is (empty: lists
	// and watch events are encoded from decoded objects).
	jsonEncoder runtime.Identifier
	tableConvertor
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.KindProvider         = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.TableConvertor       = &REST{}
)

// NewREST returns the storage over store.
func NewREST(store *Store, visible VisibilityFunc) *REST {
	return &REST{store: store, visible: visible, visibilityTicks: everyVisibilityRecheckInterval}
}

// WithShards has the SHARD cell of a shard that has not answered for
// StaleAfter marked: "shard-2 (unreachable 45s)".
func (r *REST) WithShards(shards ShardContacts) *REST {
	r.shards = shards
	return r
}

// WithEncodedJSON has lists and watch events written from the JSON the
// store keeps of each object when the encoder of that identifier encodes
// them: the server's JSON encoder of this API's version (not pretty, not
// YAML), as NegotiatedSerializer.EncoderForVersion makes it. See
// listAnswer and eventObject.
func (r *REST) WithEncodedJSON(jsonEncoder runtime.Identifier) *REST {
	r.jsonEncoder = jsonEncoder
	return r
}

// everyVisibilityRecheckInterval is the clock of visibility re-checks.
func everyVisibilityRecheckInterval() (<-chan time.Time, func()) {
	ticker := time.NewTicker(visibilityRecheckInterval)
	return ticker.C, ticker.Stop
}

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return &wsmv1alpha1.WorkspaceMount{} }

// Destroy implements rest.Storage.
func (r *REST) Destroy() {}

// NamespaceScoped implements rest.Scoper: WorkspaceMounts are cluster-scoped.
func (r *REST) NamespaceScoped() bool { return false }

// Kind implements rest.KindProvider.
func (r *REST) Kind() string { return wsmv1alpha1.Kind }

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return wsmv1alpha1.Singular }

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return []string{wsmv1alpha1.ShortName} }

// Categories implements rest.CategoriesProvider.
func (r *REST) Categories() []string { return []string{wsmv1alpha1.CategoryName} }

// NewList implements rest.Lister.
func (r *REST) NewList() runtime.Object { return &wsmv1alpha1.WorkspaceMountList{} }

// Get implements rest.Getter. It needs one cluster: a name is not unique across clusters.
func (r *REST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	target, err := r.readable(ctx)
	if err != nil {
		return nil, err
	}
	if target.Wildcard {
		return nil, apierrors.NewBadRequest("get needs a logical cluster: a WorkspaceMount name is not unique across clusters; list them at * instead")
	}
	e, found := r.store.get(target.Cluster, name)
	if !found {
		return nil, apierrors.NewNotFound(groupResource, name)
	}
	wsm, err := e.object()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return wsm, nil
}

// List implements rest.Lister: selectors, then paging (limit and continue)
// over the objects sorted by cluster and name.
//
// A page is filled as kube-apiserver fills one from etcd: objects are
// looked at in order from the continue position on, and the page ends as
// soon as it holds limit objects, so that a page at * asks about the
// visibility of the clusters on it and not of every cluster of the shard.
// Continue is set when objects are left after the page, matching or not:
// the next page may come out empty. RemainingItemCount is exact where it
// costs nothing, for one cluster without selectors (every object left
// matches); wherever something filters (selectors, or visibility at *), it
// is not set, as kube-apiserver does for a list with a selector.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	page, err := r.page(ctx, options)
	if err != nil {
		return nil, err
	}
	return newListAnswer(page.ListMeta, page.entries, r.jsonEncoder), nil
}

// listPage is a page of a list: its list metadata and its entries (the
// store's: shared, read only).
type listPage struct {
	metav1.ListMeta
	entries []*entry
}

// page picks the objects of a list: selectors, visibility at *, then
// paging, as List says.
func (r *REST) page(ctx context.Context, options *metainternalversion.ListOptions) (listPage, error) {
	target, err := r.readable(ctx)
	if err != nil {
		return listPage{}, err
	}
	after, continuing, err := decodeContinue(options.Continue)
	if err != nil {
		return listPage{}, err
	}
	matches, filtering := selectorPredicate(target, options)
	var visibility *clusterVisibility
	if target.Wildcard {
		visibility = newClusterVisibility(ctx, r.visible)
		filtering = true
	}
	entries, resourceVersion := r.store.list(target.Cluster)

	start := 0
	if continuing {
		start = sort.Search(len(entries), func(i int) bool { return entries[i].position().after(after) })
	}
	size := len(entries) - start
	if options.Limit > 0 && options.Limit < int64(size) {
		size = int(options.Limit)
	}
	page := listPage{entries: make([]*entry, 0, size)}
	next := start // the first object not looked at
	for ; next < len(entries); next++ {
		if options.Limit > 0 && int64(len(page.entries)) == options.Limit {
			break
		}
		e := entries[next]
		if !matches(e) || visibility != nil && !visibility.visible(e.cluster) {
			continue
		}
		page.entries = append(page.entries, e)
	}
	if visibility != nil && ctx.Err() != nil {
		// The client is gone (or timed out) while visibility was asked: what
		// was filtered after that is not to be trusted, and nobody reads it.
		return listPage{}, ctx.Err()
	}
	page.ResourceVersion = resourceVersion
	if left := int64(len(entries) - next); left > 0 {
		page.Continue = encodeContinue(page.entries[len(page.entries)-1].position())
		if !filtering {
			page.RemainingItemCount = &left
		}
	}
	return page, nil
}

// Watch implements rest.Watcher: the current objects first (for
// sendInitialEvents, or a watch from no resourceVersion), or the changes
// since the given resourceVersion (410 Gone when it is older than the kept
// history), then the changes as they happen, and bookmarks when asked. At *,
// the watch follows visibility: every visibilityRecheckInterval it asks
// again, and a cluster that went out of sight is DELETED object by object,
// one that came into sight ADDED.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	target, err := r.readable(ctx)
	if err != nil {
		return nil, err
	}
	sendInitialEvents := options.SendInitialEvents != nil && *options.SendInitialEvents
	initial := sendInitialEvents || options.ResourceVersion == "" || options.ResourceVersion == "0"
	var since map[string]uint64
	if !initial {
		if since = parseVersion(options.ResourceVersion); since == nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", options.ResourceVersion))
		}
	}
	matches, _ := selectorPredicate(target, options)
	watchOptions := watchOptions{
		matches:          matches,
		jsonEncoder:      r.jsonEncoder,
		initialEventsEnd: sendInitialEvents,
		bookmarks:        options.AllowWatchBookmarks,
		resumed:          !initial,
	}
	if target.Wildcard {
		watchOptions.visibility = newClusterVisibility(ctx, r.visible)
		watchOptions.visibilityTicks = r.visibilityTicks
	}
	w, err := r.store.watch(initial, since, newWatcher(r.store, watchOptions))
	if errors.Is(err, errResourceVersionTooOld) {
		return nil, apierrors.NewResourceExpired(err.Error())
	}
	if err != nil {
		return nil, err
	}
	go w.run()
	go func() {
		select {
		case <-ctx.Done():
			w.Stop()
		case <-w.done:
		}
	}()
	return w, nil
}

// readable returns the request's target, or why the storage cannot answer.
func (r *REST) readable(ctx context.Context) (clusterpath.Target, error) {
	if !r.store.HasSynced() {
		return clusterpath.Target{}, apierrors.NewServiceUnavailable("the Workspace cache has not synced yet")
	}
	target, ok := clusterpath.From(ctx)
	if !ok || (!target.Wildcard && target.Cluster == "") {
		return clusterpath.Target{}, apierrors.NewInternalError(errNoTarget)
	}
	return target, nil
}

// selectorPredicate returns what a list or watch matches besides
// visibility: the target cluster (one, or all at *), and the label and field
// selectors; and whether the selectors filter anything out.
func selectorPredicate(target clusterpath.Target, options *metainternalversion.ListOptions) (matches func(*entry) bool, selecting bool) {
	labelSelector, fieldSelector := labels.Everything(), fields.Everything()
	if options != nil && options.LabelSelector != nil {
		labelSelector = options.LabelSelector
	}
	if options != nil && options.FieldSelector != nil {
		fieldSelector = options.FieldSelector
	}
	matches = func(e *entry) bool {
		if !target.Wildcard && e.cluster != target.Cluster {
			return false
		}
		if !labelSelector.Empty() && !labelSelector.Matches(e.labelSet()) {
			return false
		}
		return fieldSelector.Empty() || fieldSelector.Matches(e.fieldSet())
	}
	return matches, !labelSelector.Empty() || !fieldSelector.Empty()
}

// clusterVisibility is what one list or watch at * knows of the clusters
// its user may see: an answer of VisibilityFunc per cluster, asked the first
// time the cluster comes up and kept until replaced or forgotten. An error is
// "not visible": a user never sees a cluster kcp did not allow. It belongs
// to one goroutine (the list's, or the watcher's): it has no lock.
type clusterVisibility struct {
	ctx     context.Context //nolint:containedctx // the request's, for as long as its list or watch runs
	ask     VisibilityFunc
	answers map[logicalcluster.Name]bool
}

func newClusterVisibility(ctx context.Context, ask VisibilityFunc) *clusterVisibility {
	return &clusterVisibility{ctx: ctx, ask: ask, answers: map[logicalcluster.Name]bool{}}
}

// visible returns the kept answer for cluster, asking for one if there is none.
func (v *clusterVisibility) visible(cluster logicalcluster.Name) bool {
	if answer, known := v.answers[cluster]; known {
		return answer
	}
	answer := v.askNow(cluster)
	v.answers[cluster] = answer
	return answer
}

// askNow asks VisibilityFunc about cluster, without keeping the answer.
func (v *clusterVisibility) askNow(cluster logicalcluster.Name) bool {
	visible, err := v.ask(v.ctx, cluster, 0)
	return visible && err == nil
}

// A continue token is the position of the last item sent, base64-encoded.
func encodeContinue(p position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.cluster.String() + "|" + p.name))
}

func decodeContinue(token string) (position, bool, error) {
	if token == "" {
		return position{}, false, nil
	}
	decoded, err := base64.RawURLEncoding.DecodeString(token)
	cluster, name, found := strings.Cut(string(decoded), "|")
	if err != nil || !found {
		return position{}, false, apierrors.NewBadRequest("invalid continue token")
	}
	return position{cluster: logicalcluster.Name(cluster), name: name}, true, nil
}
