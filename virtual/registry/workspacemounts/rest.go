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
	"math/rand/v2"
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

// A watch follows its user's access: every visibilityRecheckInterval it
// asks again, for answers at most watchVisibilityMaxAge old, the whole
// re-check bounded by visibilityRecheckTimeout; so a revoked access shows
// in every watch within watchAccessBound.
const (
	visibilityRecheckInterval = 30 * time.Second
	watchVisibilityMaxAge     = 20 * time.Second
	visibilityRecheckTimeout  = 10 * time.Second
	watchAccessBound          = watchVisibilityMaxAge + visibilityRecheckInterval + visibilityRecheckTimeout
	// DefaultMaxWatchTimeout is the default of --max-watch-timeout.
	DefaultMaxWatchTimeout = 30 * time.Minute
)

// REST is the read-only storage of WorkspaceMounts.
type REST struct {
	store   *Store
	visible VisibilityFunc
	// visibilityTicks is the clock of a watch's re-checks; tests tick it.
	visibilityTicks func() (ticks <-chan time.Time, stop func())
	recheckTimeout  time.Duration
	maxWatchTimeout time.Duration
	jsonEncoder     runtime.Identifier
	plainEvents     string
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
	return &REST{
		store: store, visible: visible, visibilityTicks: everyVisibilityRecheckInterval,
		recheckTimeout: visibilityRecheckTimeout, maxWatchTimeout: DefaultMaxWatchTimeout,
	}
}

// WithMaxWatchTimeout bounds how long a watch lasts: its timeoutSeconds
// when not above maxTimeout, else a random time in [maxTimeout/2,
// maxTimeout), as kube-apiserver spreads its watches' ends.
func (r *REST) WithMaxWatchTimeout(maxTimeout time.Duration) *REST {
	r.maxWatchTimeout = maxTimeout
	return r
}

func watchTimeout(requested, maxTimeout time.Duration) time.Duration {
	if requested > 0 && requested <= maxTimeout {
		return requested
	}
	return time.Duration(float64(maxTimeout/2) * (rand.Float64() + 1.0))
}

// WithShards has the SHARD cell of a shard silent for [StaleAfter] marked.
func (r *REST) WithShards(shards ShardContacts) *REST {
	r.shards = shards
	return r
}

// WithEncodedJSON has lists and watch events written from the store's JSON
// for the encoder of that identifier, the server's plain JSON encoder of
// this API's version; see [listAnswer] and [eventObject].
func (r *REST) WithEncodedJSON(jsonEncoder runtime.Identifier) *REST {
	r.jsonEncoder, r.plainEvents = jsonEncoder, plainEventsPrefix(jsonEncoder)
	return r
}

func everyVisibilityRecheckInterval() (<-chan time.Time, func()) {
	ticker := time.NewTicker(visibilityRecheckInterval)
	return ticker.C, ticker.Stop
}

func (r *REST) New() runtime.Object     { return &wsmv1alpha1.WorkspaceMount{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) Kind() string            { return wsmv1alpha1.Kind }
func (r *REST) GetSingularName() string { return wsmv1alpha1.Singular }
func (r *REST) ShortNames() []string    { return []string{wsmv1alpha1.ShortName} }
func (r *REST) Categories() []string    { return []string{wsmv1alpha1.CategoryName} }
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

// List implements rest.Lister: selectors, then pages in [listKey] order,
// filled as kube-apiserver fills them from etcd (see
// docs/design/registry-answers.md).
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	page, err := r.page(ctx, options)
	if err != nil {
		return nil, err
	}
	return newListAnswer(page.ListMeta, page.entries, r.jsonEncoder), nil
}

// listPage is a page of a list; its entries are the store's, read only.
type listPage struct {
	metav1.ListMeta
	entries []*entry
}

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
		visibility = newClusterVisibility(ctx, r.visible, 0, 0)
		filtering = true
	}
	entries, resourceVersion := r.store.list(target.Cluster)

	start := 0
	if continuing {
		start = sort.Search(len(entries), func(i int) bool { return entries[i].listKey().compare(after) > 0 })
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
		// Visibility first: what a page asks does not depend on objects its user cannot see.
		if visibility != nil && !visibility.visible(e.cluster, e.slot) || !matches(e) {
			continue
		}
		page.entries = append(page.entries, e)
	}
	if visibility != nil && ctx.Err() != nil {
		return listPage{}, ctx.Err() // the client is gone: what was filtered since is not to be trusted
	}
	page.ResourceVersion = resourceVersion
	if left := int64(len(entries) - next); left > 0 {
		page.Continue = encodeContinue(page.entries[len(page.entries)-1].listKey())
		if !filtering {
			page.RemainingItemCount = &left
		}
	}
	return page, nil
}

// Watch implements rest.Watcher: the current objects, or the changes since
// a resourceVersion (410 Gone when not kept), then the changes as they
// happen, bookmarks when asked, each watch following its user's access.
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
	var requested time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		requested = time.Until(deadline)
	}
	ctx, cancel := context.WithTimeout(ctx, watchTimeout(requested, r.maxWatchTimeout))
	matches, _ := selectorPredicate(target, options)
	watchOptions := watchOptions{
		matches:         matches,
		jsonEncoder:     r.jsonEncoder,
		plainEvents:     r.plainEvents,
		cluster:         target.Cluster,
		visibility:      newClusterVisibility(ctx, r.visible, watchVisibilityMaxAge, r.recheckTimeout),
		visibilityTicks: r.visibilityTicks,
		recheckTimeout:  r.recheckTimeout,
		// As kube-apiserver's watch cache: only where bookmarks are allowed.
		initialEventsEnd: sendInitialEvents && options.AllowWatchBookmarks,
		bookmarks:        options.AllowWatchBookmarks,
		resumed:          !initial,
	}
	if target.Wildcard {
		watchOptions.cluster = allClusters
	}
	w, err := r.store.watch(initial, watchOptions.cluster, since, newWatcher(r.store, watchOptions))
	if err != nil {
		cancel()
		if errors.Is(err, errResourceVersionTooOld) {
			return nil, apierrors.NewResourceExpired(err.Error())
		}
		return nil, err
	}
	go w.run()
	go func() {
		defer cancel()
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

// selectorPredicate is what a list or watch matches besides visibility, and
// whether its selectors filter anything.
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

// A continue token is the [listKey] of the last item sent, base64-encoded.
func encodeContinue(k listKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.cluster.String() + "|" + k.name))
}

func decodeContinue(token string) (listKey, bool, error) {
	if token == "" {
		return listKey{}, false, nil
	}
	decoded, err := base64.RawURLEncoding.DecodeString(token)
	cluster, name, found := strings.Cut(string(decoded), "|")
	if err != nil || !found {
		return listKey{}, false, apierrors.NewBadRequest("invalid continue token")
	}
	return listKey{cluster: logicalcluster.Name(cluster), name: name}, true, nil
}
