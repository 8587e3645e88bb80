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
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Store holds the WorkspaceMount of every mounted Workspace, derived from a
// Workspace informer, and fans changes out to watchers. Objects in the store
// are never modified: readers may hand them out as they are.
type Store struct {
	lock sync.RWMutex
	// hasSynced is the informer registration's; lastSyncResourceVersion the informer's.
	hasSynced               func() bool
	lastSyncResourceVersion func() string
	// synced is set once the informer's first list is in the store.
	synced bool
	// workspaces is the Workspace informer's cache; logicalClusters the
	// LogicalCluster informer's, nil until AddClusterPaths.
	workspaces      cache.Indexer
	logicalClusters cache.Indexer

	items           map[string]*wsmv1alpha1.WorkspaceMount // by key cluster|name
	byCluster       map[logicalcluster.Name]map[string]*wsmv1alpha1.WorkspaceMount
	resourceVersion string // of the newest Workspace seen
	watchers        map[*watcher]struct{}

	// history holds the last changes, oldest first, so that a watch from a
	// list's resource version gets what happened in between. Every change
	// after historyStart is in it.
	history      []recordedChange
	historyStart uint64

	// sorted caches the sorted lists handed out, per cluster and for all
	// (allClusters), until a change in them: a steady list costs no sort.
	sorted map[logicalcluster.Name][]*wsmv1alpha1.WorkspaceMount
}

// allClusters is the key of the sorted list of all clusters.
const allClusters = logicalcluster.Name("")

// historySize bounds the changes kept for watches that start from a resource version.
const historySize = 1000

type recordedChange struct {
	resourceVersion uint64
	change
}

// change is one event for watchers: old is nil for an addition, new for a deletion.
type change struct {
	old, new *wsmv1alpha1.WorkspaceMount
}

// NewStore fills a store from a Workspace informer, which the caller starts.
func NewStore(workspaces cache.SharedIndexInformer) (*Store, error) {
	s := &Store{
		items:     map[string]*wsmv1alpha1.WorkspaceMount{},
		byCluster: map[logicalcluster.Name]map[string]*wsmv1alpha1.WorkspaceMount{},
		watchers:  map[*watcher]struct{}{},
		sorted:    map[logicalcluster.Name][]*wsmv1alpha1.WorkspaceMount{},
	}
	s.lock.Lock()
	defer s.lock.Unlock() // the handlers wait until hasSynced is set
	s.lastSyncResourceVersion = workspaces.LastSyncResourceVersion
	s.workspaces = workspaces.GetIndexer()
	registration, err := workspaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.upsert,
		UpdateFunc: func(_, obj interface{}) { s.upsert(obj) },
		DeleteFunc: s.remove,
	})
	if err != nil {
		return nil, err
	}
	s.hasSynced = registration.HasSynced
	return s, nil
}

// AddClusterPaths has the store read the path of each logical cluster
// (kcp.io/path) from a LogicalCluster informer, which the caller starts:
// every WorkspaceMount carries its path (FromWorkspace). Call it before the
// informers start. The store has synced once both informers have; a cluster
// whose LogicalCluster comes after its Workspaces gets their WorkspaceMounts
// again then.
func (s *Store) AddClusterPaths(logicalClusters cache.SharedIndexInformer) error {
	s.lock.Lock()
	defer s.lock.Unlock()
	registration, err := logicalClusters.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.clusterPathKnown,
		UpdateFunc: func(old, obj interface{}) {
			if clusterPathOf(old) != clusterPathOf(obj) {
				s.clusterPathKnown(obj)
			}
		},
	})
	if err != nil {
		return err
	}
	s.logicalClusters = logicalClusters.GetIndexer()
	workspacesSynced := s.hasSynced
	s.hasSynced = func() bool { return workspacesSynced() && registration.HasSynced() }
	return nil
}

// clusterPathOf is a LogicalCluster's kcp.io/path, empty for anything else.
func clusterPathOf(obj interface{}) string {
	if lc, ok := obj.(*corev1alpha1.LogicalCluster); ok {
		return lc.Annotations[core.LogicalClusterPathAnnotationKey]
	}
	return ""
}

// clusterPathKnown converts the Workspaces of a LogicalCluster's cluster
// again, now that its path is known.
func (s *Store) clusterPathKnown(obj interface{}) {
	lc, ok := obj.(*corev1alpha1.LogicalCluster)
	if !ok || clusterPathOf(lc) == "" {
		return
	}
	cluster := logicalcluster.From(lc).String()
	workspaces, err := s.workspaces.ByIndex(kcpcache.ClusterIndexName, cluster)
	if err != nil { // an informer without kcp's cluster index
		workspaces = nil
		for _, obj := range s.workspaces.List() {
			if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok && logicalcluster.From(ws).String() == cluster {
				workspaces = append(workspaces, ws)
			}
		}
	}
	for _, ws := range workspaces {
		s.upsert(ws)
	}
}

// clusterPath is the path of a logical cluster, empty when not known: root's
// LogicalCluster carries none.
func (s *Store) clusterPath(cluster logicalcluster.Name) logicalcluster.Path {
	if cluster == core.RootCluster {
		return core.RootCluster.Path()
	}
	if s.logicalClusters == nil {
		return logicalcluster.Path{}
	}
	obj, exists, err := s.logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
	if err != nil || !exists {
		return logicalcluster.Path{}
	}
	return logicalcluster.NewPath(clusterPathOf(obj))
}

// HasSynced tells whether the store has seen every Workspace of the informer's first list.
func (s *Store) HasSynced() bool {
	s.lock.RLock()
	synced := s.synced
	s.lock.RUnlock()
	if synced {
		return true
	}
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.syncedLocked()
}

// syncedLocked tells whether the informer's first list is in the store. The
// first time it is, the history starts: this store cannot know what happened
// before its informer's list (a restart, say), so a watch from an older
// resource version must list again; and lists answer from the list's
// resource version on, so that a watch from one is not sent back to list.
func (s *Store) syncedLocked() bool {
	if s.synced {
		return true
	}
	if s.hasSynced == nil || !s.hasSynced() {
		return false
	}
	s.synced = true
	s.advanceLocked(s.lastSyncResourceVersion())
	s.historyStart = max(s.historyStart, parseResourceVersion(s.resourceVersion))
	return true
}

// advanceLocked moves the store's resource version forward, never back: a
// relist hands out Workspaces in no order, and a deletion its own revision.
func (s *Store) advanceLocked(resourceVersion string) {
	if n := parseResourceVersion(resourceVersion); n > 0 && n >= parseResourceVersion(s.resourceVersion) {
		s.resourceVersion = resourceVersion
	}
}

func (s *Store) upsert(obj interface{}) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return
	}
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	if err != nil {
		return
	}
	wsm := FromWorkspace(ws, s.clusterPath(logicalcluster.From(ws)))

	s.lock.Lock()
	defer s.lock.Unlock()
	s.advanceLocked(ws.ResourceVersion)
	old := s.items[key]
	switch {
	case wsm == nil && old == nil:
		return
	case wsm == nil:
		s.deleteLocked(key, old)
		s.dispatchLocked(change{old: old})
	case old == nil:
		s.setLocked(key, wsm)
		s.dispatchLocked(change{new: wsm})
	default:
		s.setLocked(key, wsm)
		if !sameExceptResourceVersion(old, wsm) {
			s.dispatchLocked(change{old: old, new: wsm})
		}
	}
}

func (s *Store) remove(obj interface{}) {
	tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown)
	if isTombstone {
		obj = tombstone.Obj
	}
	key, err := kcpcache.DeletionHandlingMetaClusterNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.lock.Lock()
	defer s.lock.Unlock()
	// A deletion happened at its own revision, a missed one (a tombstone of a
	// relist) at the latest by the relist's.
	if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok && !isTombstone {
		s.advanceLocked(ws.ResourceVersion)
	} else {
		s.advanceLocked(s.lastSyncResourceVersion())
	}
	if old, found := s.items[key]; found {
		s.deleteLocked(key, old)
		s.dispatchLocked(change{old: old})
	}
}

func (s *Store) setLocked(key string, wsm *wsmv1alpha1.WorkspaceMount) {
	cluster := logicalcluster.From(wsm)
	s.invalidateSortedLocked(cluster)
	s.items[key] = wsm
	if s.byCluster[cluster] == nil {
		s.byCluster[cluster] = map[string]*wsmv1alpha1.WorkspaceMount{}
	}
	s.byCluster[cluster][key] = wsm
}

func (s *Store) deleteLocked(key string, wsm *wsmv1alpha1.WorkspaceMount) {
	cluster := logicalcluster.From(wsm)
	s.invalidateSortedLocked(cluster)
	delete(s.items, key)
	delete(s.byCluster[cluster], key)
	if len(s.byCluster[cluster]) == 0 {
		delete(s.byCluster, cluster)
	}
}

func (s *Store) dispatchLocked(c change) {
	s.recordLocked(c)
	for w := range s.watchers {
		w.push(c)
	}
}

// recordLocked keeps a change in the history, forgetting the oldest one when full.
func (s *Store) recordLocked(c change) {
	if !s.syncedLocked() {
		return // the informer's first list: no watch can start before it
	}
	obj := c.new
	if obj == nil {
		obj = c.old
	}
	rv := parseResourceVersion(s.resourceVersion)
	if rv == 0 {
		rv = parseResourceVersion(obj.ResourceVersion)
	}
	if len(s.history) == historySize {
		s.historyStart = max(s.historyStart, s.history[0].resourceVersion)
		s.history = append(s.history[:0], s.history[1:]...)
	}
	s.history = append(s.history, recordedChange{resourceVersion: rv, change: c})
}

// parseResourceVersion reads kcp's resource versions, which are numbers; 0 for anything else.
func parseResourceVersion(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func sameExceptResourceVersion(a, b *wsmv1alpha1.WorkspaceMount) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	a.ResourceVersion, b.ResourceVersion = "", ""
	return equality.Semantic.DeepEqual(a, b)
}

// get returns one WorkspaceMount.
func (s *Store) get(cluster logicalcluster.Name, name string) (*wsmv1alpha1.WorkspaceMount, bool) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	wsm, found := s.items[kcpcache.ToClusterAwareKey(cluster.String(), "", name)]
	return wsm, found
}

// list returns the WorkspaceMounts of one cluster, or of all for the empty
// name, sorted by cluster, then name, and the resource version of the snapshot.
// The slice is shared with other readers: it must not be modified.
func (s *Store) list(cluster logicalcluster.Name) ([]*wsmv1alpha1.WorkspaceMount, string) {
	s.lock.RLock()
	sorted, cached := s.sorted[cluster]
	resourceVersion := s.resourceVersion
	s.lock.RUnlock()
	if cached {
		return sorted, resourceVersion
	}

	s.lock.Lock()
	defer s.lock.Unlock()
	if sorted, cached := s.sorted[cluster]; cached {
		return sorted, s.resourceVersion
	}
	items := s.items
	if cluster != "" {
		items = s.byCluster[cluster]
	}
	sorted = make([]*wsmv1alpha1.WorkspaceMount, 0, len(items))
	for _, wsm := range items {
		sorted = append(sorted, wsm)
	}
	sortByClusterAndName(sorted)
	s.sorted[cluster] = sorted
	return sorted, s.resourceVersion
}

// invalidateSortedLocked forgets the sorted lists a change in cluster affects.
func (s *Store) invalidateSortedLocked(cluster logicalcluster.Name) {
	delete(s.sorted, cluster)
	delete(s.sorted, allClusters)
}

// position is where an object sorts in a list: by cluster, then name.
type position struct {
	cluster logicalcluster.Name
	name    string
}

func positionOf(wsm *wsmv1alpha1.WorkspaceMount) position {
	return position{cluster: logicalcluster.From(wsm), name: wsm.Name}
}

func (p position) after(other position) bool {
	if p.cluster != other.cluster {
		return p.cluster > other.cluster
	}
	return p.name > other.name
}

func sortByClusterAndName(items []*wsmv1alpha1.WorkspaceMount) {
	sort.Slice(items, func(i, j int) bool { return positionOf(items[j]).after(positionOf(items[i])) })
}

// errResourceVersionTooOld is returned by watch for a resource version whose
// changes are no longer all in the history: the client must list again.
var errResourceVersionTooOld = errors.New("too old resource version")

// watch registers a watcher and hands it, atomically with the registration,
// what it must send first: the whole store (initial, for a watch that starts
// from the present state), or the changes recorded after resourceVersion
// (since > 0). No change is lost or sent twice between the two.
func (s *Store) watch(initial bool, since uint64, newWatcher func(first []change, resourceVersion string) *watcher) (*watcher, error) {
	s.lock.Lock()
	defer s.lock.Unlock()
	var first []change
	switch {
	case initial:
		items := make([]*wsmv1alpha1.WorkspaceMount, 0, len(s.items))
		for _, wsm := range s.items {
			items = append(items, wsm)
		}
		sortByClusterAndName(items)
		first = make([]change, 0, len(items))
		for _, wsm := range items {
			first = append(first, change{new: wsm})
		}
	case since > 0:
		if since < s.historyStart {
			return nil, fmt.Errorf("%w: %d (changes are kept from %d on)", errResourceVersionTooOld, since, s.historyStart)
		}
		for _, r := range s.history {
			if r.resourceVersion > since {
				first = append(first, r.change)
			}
		}
	}
	w := newWatcher(first, s.resourceVersion)
	s.watchers[w] = struct{}{}
	return w, nil
}

// clustersWithObjects splits clusters into those with objects in the store and those without.
func (s *Store) clustersWithObjects(clusters []logicalcluster.Name) (with, without []logicalcluster.Name) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	for _, cluster := range clusters {
		if len(s.byCluster[cluster]) > 0 {
			with = append(with, cluster)
		} else {
			without = append(without, cluster)
		}
	}
	return with, without
}

// clustersMatching returns the clusters with an object that matches, which
// is called with the store locked: it must be quick and must not block.
func (s *Store) clustersMatching(matches func(*wsmv1alpha1.WorkspaceMount) bool) []logicalcluster.Name {
	s.lock.RLock()
	defer s.lock.RUnlock()
	var clusters []logicalcluster.Name
	for cluster, items := range s.byCluster {
		for _, wsm := range items {
			if matches(wsm) {
				clusters = append(clusters, cluster)
				break
			}
		}
	}
	return clusters
}

// clustersSnapshot is the objects of some clusters at one moment, as a
// watcher gets them to tell its client about clusters that came into or
// went out of sight.
type clustersSnapshot struct {
	// items are the objects of each cluster asked for, sorted by name.
	items map[logicalcluster.Name][]*wsmv1alpha1.WorkspaceMount
	// resourceVersion is the store's at that moment.
	resourceVersion string
	// queued is how many changes were waiting in the watcher's incoming
	// channel: exactly the changes before the snapshot it has not processed.
	queued int
}

// snapshotClusters reads the objects of clusters, the store's resource
// version and the length of w's queue, all under the lock, which every push
// to a watcher holds. Only w's own goroutine may call it: nothing else
// takes from its queue.
func (s *Store) snapshotClusters(w *watcher, clusters []logicalcluster.Name) clustersSnapshot {
	snapshot := clustersSnapshot{items: make(map[logicalcluster.Name][]*wsmv1alpha1.WorkspaceMount, len(clusters))}
	s.lock.RLock()
	for _, cluster := range clusters {
		items := make([]*wsmv1alpha1.WorkspaceMount, 0, len(s.byCluster[cluster]))
		for _, wsm := range s.byCluster[cluster] {
			items = append(items, wsm)
		}
		snapshot.items[cluster] = items
	}
	snapshot.resourceVersion = s.resourceVersion
	snapshot.queued = len(w.incoming)
	s.lock.RUnlock()
	for _, items := range snapshot.items {
		sortByClusterAndName(items)
	}
	return snapshot
}

// StopWatchesWhenDone ends every watch when ctx is done, so that a shutting
// down server is not held open by its watchers.
func (s *Store) StopWatchesWhenDone(ctx context.Context) {
	go func() {
		<-ctx.Done()
		s.lock.RLock()
		watchers := make([]*watcher, 0, len(s.watchers))
		for w := range s.watchers {
			watchers = append(watchers, w)
		}
		s.lock.RUnlock()
		for _, w := range watchers {
			w.Stop()
		}
	}()
}

func (s *Store) unregister(w *watcher) {
	s.lock.Lock()
	defer s.lock.Unlock()
	delete(s.watchers, w)
}
