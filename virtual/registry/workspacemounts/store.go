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
	"strings"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// Store holds the WorkspaceMount of every mounted Workspace, derived from
// the Workspace informers of its shards (its sources: AddShard; with
// --kubeconfig, one, unnamed), and fans changes out to watchers. It keeps
// each object as an entry: its JSON and a summary (entry.go). Entries are
// never modified: readers may hand them out as they are.
//
// Its resource version is a vector of its sources' (each shard's etcd
// revision of the newest Workspace seen), so that every replica gives the
// same version to the same state: with one source it is that source's
// number, as kcp's own; with more, "name=rv,..." sorted by name. A watch
// from a version replays, per source, the changes after it; a version that
// does not name every source, or one older than a source's kept history,
// gets 410 Gone, and the client lists again.
type Store struct {
	// rule says which Workspaces are mounted (--legacy-mount-annotation).
	rule mount.Rule

	lock sync.RWMutex
	// sources by name ("" for the unnamed shard of --kubeconfig).
	sources map[string]*source

	items map[string]*entry // by key cluster|name
	// byCluster indexes items by cluster: a cluster is in it from its
	// first object to its last, never without one.
	byCluster map[logicalcluster.Name]map[string]*entry
	// slots number byCluster's clusters (slots.go).
	slots clusterSlots

	// watchers are guarded by watchersLock, taken after lock: a watch
	// registers under the read lock (pushes hold the write lock, so none
	// comes between a watcher's first events and its registration), and
	// unregisters without lock.
	watchersLock sync.Mutex
	watchers     map[*watcher]struct{}

	// history holds the last changes, oldest first, so that a watch from a
	// list's resource version gets what happened in between. Every change
	// of a source after its historyStart is in it.
	history []recordedChange

	// sorted caches the sorted lists handed out, per cluster and for all
	// (allClusters), until a change in them: a steady list costs no sort,
	// and after a change only the changed cluster is sorted again (the list
	// of all is the clusters' lists one after the other). Only clusters
	// with objects are kept (byCluster's). clusterOrder caches byCluster's
	// names, sorted; nil until asked for after a cluster came or went.
	// Readers fill both under the read lock and sortedLock; writers, who
	// hold the write lock, empty them.
	sortedLock   sync.Mutex
	sorted       map[logicalcluster.Name][]*entry
	clusterOrder []logicalcluster.Name
}

// source is one shard's Workspace informer (and LogicalCluster informer,
// for the paths).
type source struct {
	name string
	// hasSynced is the handler registrations'; lastSyncResourceVersion the
	// Workspace informer's.
	hasSynced               func() bool
	lastSyncResourceVersion func() string
	// synced is set once the informer's first list is in the store.
	synced bool
	// resourceVersion is that of the newest Workspace seen.
	resourceVersion uint64
	historyStart    uint64
	workspaces      cache.Indexer
	// logicalClusters is nil without a LogicalCluster informer.
	logicalClusters cache.Indexer
}

// allClusters is the key of the sorted list of all clusters.
const allClusters = logicalcluster.Name("")

// historySize bounds the changes kept for watches that start from a resource version.
const historySize = 1000

type recordedChange struct {
	source *source
	// resourceVersion is the source's right after the change.
	resourceVersion uint64
	change
}

// change is one event for watchers: old is nil for an addition, new for a
// deletion. version is the store's right after it ("" for the initial
// events of a watch, which keep their objects' own). emptied: a deletion
// of the last object of its cluster, whose slot is given back (slots.go).
type change struct {
	old, new *entry
	version  string
	emptied  bool
}

// NewStore is a store without sources yet: AddShard adds them. Its
// WorkspaceMounts are those of the Workspaces rule says are mounted.
func NewStore(rule mount.Rule) *Store {
	return &Store{
		rule:      rule,
		sources:   map[string]*source{},
		items:     map[string]*entry{},
		byCluster: map[logicalcluster.Name]map[string]*entry{},
		slots:     clusterSlots{byName: map[logicalcluster.Name]uint32{}},
		watchers:  map[*watcher]struct{}{},
		sorted:    map[logicalcluster.Name][]*entry{},
	}
}

// AddShard adds a shard as a source: its Workspace informer, and its
// LogicalCluster informer, from which every WorkspaceMount takes its path
// (kcp.io/path; nil: paths are not known); the caller starts them, before
// or after. The source has synced once both informers have; a cluster whose
// LogicalCluster comes after its Workspaces gets their WorkspaceMounts
// again then. A watch from a version before it must list again.
//
// The shard named "" is the single shard of --kubeconfig: its objects name
// no shard (status.shard is empty, the SHARD cell <none>) and, alone, its
// resource versions are kcp's plain numbers. (So are those of any store
// of one source.)
func (s *Store) AddShard(name string, workspaces, logicalClusters cache.SharedIndexInformer) error {
	s.lock.Lock()
	defer s.lock.Unlock() // the handlers wait until the source is complete
	if _, exists := s.sources[name]; exists {
		return fmt.Errorf("shard %q is a source already", name)
	}
	src := &source{name: name, lastSyncResourceVersion: workspaces.LastSyncResourceVersion, workspaces: workspaces.GetIndexer()}
	registration, err := workspaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { s.upsert(src, obj) },
		UpdateFunc: func(_, obj interface{}) { s.upsert(src, obj) },
		DeleteFunc: func(obj interface{}) { s.remove(src, obj) },
	})
	if err != nil {
		return err
	}
	src.hasSynced = registration.HasSynced
	s.sources[name] = src
	if logicalClusters != nil {
		return s.addClusterPathsLocked(src, logicalClusters)
	}
	return nil
}

// RemoveShard drops a source and its objects (DELETED for the watchers).
// The informers are the caller's to stop; a watch from a version before it
// must list again.
func (s *Store) RemoveShard(name string) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if _, found := s.sources[name]; !found {
		return
	}
	delete(s.sources, name)
	gone := map[*entry]string{}
	var sorted []*entry
	for key, e := range s.items {
		if e.shard == name {
			gone[e] = key
			sorted = append(sorted, e)
		}
	}
	sortByClusterAndName(sorted)
	version := s.versionLocked()
	for _, old := range sorted {
		emptied := s.deleteLocked(gone[old], old)
		s.pushLocked(change{old: old, version: version, emptied: emptied})
	}
	s.forgetHistoryLocked()
}

// forgetHistoryLocked empties the history: the sources changed, and a
// version from before names other ones.
func (s *Store) forgetHistoryLocked() {
	s.history = nil
	for _, src := range s.sources {
		src.historyStart = src.resourceVersion
	}
}

func (s *Store) addClusterPathsLocked(src *source, logicalClusters cache.SharedIndexInformer) error {
	registration, err := logicalClusters.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { s.clusterPathKnown(src, obj) },
		UpdateFunc: func(old, obj interface{}) {
			if clusterPathOf(old) != clusterPathOf(obj) {
				s.clusterPathKnown(src, obj)
			}
		},
	})
	if err != nil {
		return err
	}
	src.logicalClusters = logicalClusters.GetIndexer()
	workspacesSynced := src.hasSynced
	src.hasSynced = func() bool { return workspacesSynced() && registration.HasSynced() }
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
func (s *Store) clusterPathKnown(src *source, obj interface{}) {
	lc, ok := obj.(*corev1alpha1.LogicalCluster)
	if !ok || clusterPathOf(lc) == "" {
		return
	}
	cluster := logicalcluster.From(lc).String()
	workspaces, err := src.workspaces.ByIndex(kcpcache.ClusterIndexName, cluster)
	if err != nil { // an informer without kcp's cluster index
		workspaces = nil
		for _, obj := range src.workspaces.List() {
			if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok && logicalcluster.From(ws).String() == cluster {
				workspaces = append(workspaces, ws)
			}
		}
	}
	for _, ws := range workspaces {
		s.upsert(src, ws)
	}
}

// clusterPath is the path of a logical cluster of src, empty when not
// known: root's LogicalCluster carries none.
func (src *source) clusterPath(cluster logicalcluster.Name) logicalcluster.Path {
	if cluster == core.RootCluster {
		return core.RootCluster.Path()
	}
	if src.logicalClusters == nil {
		return logicalcluster.Path{}
	}
	obj, exists, err := src.logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
	if err != nil || !exists {
		return logicalcluster.Path{}
	}
	return logicalcluster.NewPath(clusterPathOf(obj))
}

// HasSynced tells whether the store has seen every Workspace of the first
// list of each of its sources (and has one).
func (s *Store) HasSynced() bool {
	s.lock.RLock()
	synced := s.allSyncedLocked()
	s.lock.RUnlock()
	if synced {
		return true
	}
	s.lock.Lock()
	defer s.lock.Unlock()
	for _, src := range s.sources {
		s.syncedLocked(src)
	}
	return s.allSyncedLocked()
}

func (s *Store) allSyncedLocked() bool {
	for _, src := range s.sources {
		if !src.synced {
			return false
		}
	}
	return len(s.sources) > 0
}

// syncedLocked tells whether the source's first list is in the store. The
// first time it is, its history starts: this store cannot know what
// happened before its informer's list (a restart, say), so a watch from an
// older resource version must list again; and lists answer from the list's
// resource version on, so that a watch from one is not sent back to list.
func (s *Store) syncedLocked(src *source) bool {
	if src.synced {
		return true
	}
	if src.hasSynced == nil || !src.hasSynced() {
		return false
	}
	src.synced = true
	src.advance(src.lastSyncResourceVersion())
	src.historyStart = max(src.historyStart, src.resourceVersion)
	return true
}

// advance moves the source's resource version forward, never back: a
// relist hands out Workspaces in no order, and a deletion its own revision.
func (src *source) advance(resourceVersion string) {
	src.resourceVersion = max(src.resourceVersion, parseResourceVersion(resourceVersion))
}

// versionLocked is the store's resource version: its one source's, or the
// vector of all.
func (s *Store) versionLocked() string {
	if len(s.sources) == 1 {
		for _, src := range s.sources {
			return strconv.FormatUint(src.resourceVersion, 10)
		}
	}
	names := make([]string, 0, len(s.sources))
	for name := range s.sources {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, name+"="+strconv.FormatUint(s.sources[name].resourceVersion, 10))
	}
	return strings.Join(parts, ",")
}

// parseVersion reads a resource version the store gave: a number (one
// source, under the key ""), or name=number,... It returns nil for anything else.
func parseVersion(rv string) map[string]uint64 {
	if !strings.Contains(rv, "=") {
		if n := parseResourceVersion(rv); n > 0 {
			return map[string]uint64{"": n}
		}
		return nil
	}
	version := map[string]uint64{}
	for _, part := range strings.Split(rv, ",") {
		name, number, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(number, 10, 64)
		if !ok || name == "" || err != nil {
			return nil
		}
		if _, twice := version[name]; twice {
			return nil
		}
		version[name] = n
	}
	return version
}

func (s *Store) upsert(src *source, obj interface{}) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return
	}
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	if err != nil {
		return
	}
	var e *entry
	if wsm := FromWorkspace(s.rule, ws, src.clusterPath(logicalcluster.From(ws))); wsm != nil {
		wsm.Status.Shard = src.name
		if e, err = newEntry(wsm); err != nil {
			utilruntime.HandleError(fmt.Errorf("the WorkspaceMount of Workspace %s is left out: %w", key, err))
		}
	}

	s.lock.Lock()
	defer s.lock.Unlock()
	if s.sources[src.name] != src {
		return // removed
	}
	src.advance(ws.ResourceVersion)
	old := s.items[key]
	switch {
	case e == nil && old == nil:
		return
	case e == nil:
		emptied := s.deleteLocked(key, old)
		s.dispatchLocked(src, change{old: old, emptied: emptied})
	case old == nil:
		s.setLocked(key, e)
		s.dispatchLocked(src, change{new: e})
	default:
		s.setLocked(key, e)
		if !sameExceptResourceVersion(old, e) {
			s.dispatchLocked(src, change{old: old, new: e})
		}
	}
}

func (s *Store) remove(src *source, obj interface{}) {
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
	if s.sources[src.name] != src {
		return // removed
	}
	// A deletion happened at its own revision, a missed one (a tombstone of a
	// relist) at the latest by the relist's.
	if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok && !isTombstone {
		src.advance(ws.ResourceVersion)
	} else {
		src.advance(src.lastSyncResourceVersion())
	}
	if old, found := s.items[key]; found {
		emptied := s.deleteLocked(key, old)
		s.dispatchLocked(src, change{old: old, emptied: emptied})
	}
}

// setLocked keeps e, a new entry no reader has yet: it takes its
// cluster's slot.
func (s *Store) setLocked(key string, e *entry) {
	e.slot = s.slotLocked(e.cluster)
	s.invalidateSortedLocked(e.cluster)
	s.items[key] = e
	if s.byCluster[e.cluster] == nil {
		s.byCluster[e.cluster] = map[string]*entry{}
		s.clusterOrder = nil
	}
	s.byCluster[e.cluster][key] = e
}

// deleteLocked forgets e; it tells whether that emptied its cluster, which
// then gives its slot back with the change pushed next.
func (s *Store) deleteLocked(key string, e *entry) (emptied bool) {
	s.invalidateSortedLocked(e.cluster)
	delete(s.items, key)
	delete(s.byCluster[e.cluster], key)
	if len(s.byCluster[e.cluster]) == 0 {
		delete(s.byCluster, e.cluster)
		s.clusterOrder = nil
		s.releaseSlotLocked(e.cluster)
		return true
	}
	return false
}

// dispatchLocked gives a change of src the store's version, records it and
// pushes it to the watchers.
func (s *Store) dispatchLocked(src *source, c change) {
	c.version = s.versionLocked()
	s.recordLocked(src, c)
	s.pushLocked(c)
}

func (s *Store) pushLocked(c change) {
	s.slots.pushed++
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	for w := range s.watchers {
		w.push(c)
	}
}

// recordLocked keeps a change in the history, forgetting the oldest one when full.
func (s *Store) recordLocked(src *source, c change) {
	if !s.syncedLocked(src) {
		return // the source's first list: no watch can start from before it
	}
	if len(s.history) == historySize {
		oldest := s.history[0]
		oldest.source.historyStart = max(oldest.source.historyStart, oldest.resourceVersion)
		s.history = append(s.history[:0], s.history[1:]...)
	}
	s.history = append(s.history, recordedChange{source: src, resourceVersion: src.resourceVersion, change: c})
}

// parseResourceVersion reads kcp's resource versions, which are numbers; 0 for anything else.
func parseResourceVersion(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// get returns the entry of one WorkspaceMount.
func (s *Store) get(cluster logicalcluster.Name, name string) (*entry, bool) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	e, found := s.items[kcpcache.ToClusterAwareKey(cluster.String(), "", name)]
	return e, found
}

// list returns the entries of one cluster, or of all for the empty name,
// sorted by cluster, then name, and the resource version of the snapshot.
// The slice is shared with other readers: it must not be modified.
func (s *Store) list(cluster logicalcluster.Name) ([]*entry, string) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	s.sortedLock.Lock()
	defer s.sortedLock.Unlock()
	if cluster == allClusters {
		return s.sortedAllLocked(), s.versionLocked()
	}
	return s.sortedClusterLocked(cluster), s.versionLocked()
}

// sortedClusterLocked returns the entries of one cluster sorted by name,
// from the cache, sorting them first when they changed; nil for a cluster
// without objects, which is not kept. The caller holds the read lock (or
// the write lock) and sortedLock.
func (s *Store) sortedClusterLocked(cluster logicalcluster.Name) []*entry {
	if sorted, cached := s.sorted[cluster]; cached {
		return sorted
	}
	entries := s.byCluster[cluster]
	if len(entries) == 0 {
		return nil
	}
	sorted := make([]*entry, 0, len(entries))
	for _, e := range entries {
		sorted = append(sorted, e)
	}
	sortByClusterAndName(sorted)
	s.sorted[cluster] = sorted
	return sorted
}

// sortedClustersLocked returns the names of the clusters with objects,
// sorted; shared, as sortedClusterLocked's lists. Same locks.
func (s *Store) sortedClustersLocked() []logicalcluster.Name {
	if s.clusterOrder == nil {
		s.clusterOrder = make([]logicalcluster.Name, 0, len(s.byCluster))
		for cluster := range s.byCluster {
			s.clusterOrder = append(s.clusterOrder, cluster)
		}
		sort.Slice(s.clusterOrder, func(i, j int) bool { return s.clusterOrder[i] < s.clusterOrder[j] })
	}
	return s.clusterOrder
}

// sortedAllLocked returns every entry sorted by cluster and name: the
// clusters' sorted lists one after the other. Same locks.
func (s *Store) sortedAllLocked() []*entry {
	if sorted, cached := s.sorted[allClusters]; cached {
		return sorted
	}
	sorted := make([]*entry, 0, len(s.items))
	for _, cluster := range s.sortedClustersLocked() {
		sorted = append(sorted, s.sortedClusterLocked(cluster)...)
	}
	s.sorted[allClusters] = sorted
	return sorted
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

func (p position) after(other position) bool {
	if p.cluster != other.cluster {
		return p.cluster > other.cluster
	}
	return p.name > other.name
}

func sortByClusterAndName(entries []*entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[j].position().after(entries[i].position()) })
}

// errResourceVersionTooOld is returned by watch for a resource version whose
// changes are no longer all in the history: the client must list again.
var errResourceVersionTooOld = errors.New("too old resource version")

// watch registers a watcher and hands it, atomically with the
// registration, what it must send first: the current objects of its
// cluster, or of every cluster at * (initial, for a watch that starts from
// the present state), or the changes recorded after the version since
// (parseVersion's). No change is lost or sent twice between the two.
//
// It holds the read lock only, and hands the current objects as the
// store's sorted lists of each cluster (shared, read only; sorted again
// only for the clusters that changed since they were last asked for): a
// watch of one cluster costs what its objects do, one at * what the
// number of clusters does; the watcher, not the store, then goes through
// the objects of the clusters its user may see (watcher.run). Lists and
// other watch starts go on meanwhile; changes wait.
func (s *Store) watch(initial bool, cluster logicalcluster.Name, since map[string]uint64, newWatcher func(first watchStart, resourceVersion string) *watcher) (*watcher, error) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	var first watchStart
	switch {
	case initial:
		s.sortedLock.Lock()
		if cluster != allClusters {
			if entries := s.sortedClusterLocked(cluster); len(entries) > 0 {
				first.clusters = [][]*entry{entries}
			}
		} else {
			clusters := s.sortedClustersLocked()
			first.clusters = make([][]*entry, 0, len(clusters))
			for _, c := range clusters {
				first.clusters = append(first.clusters, s.sortedClusterLocked(c))
			}
		}
		s.sortedLock.Unlock()
	default:
		from, err := s.replayFromLocked(since)
		if err != nil {
			return nil, err
		}
		for _, r := range s.history {
			if r.resourceVersion > from[r.source] {
				first.changes = append(first.changes, r.change)
			}
		}
	}
	w := newWatcher(first, s.versionLocked())
	w.position.Store(s.slots.pushed) // pushes hold the write lock
	s.watchersLock.Lock()
	s.watchers[w] = struct{}{}
	s.watchersLock.Unlock()
	return w, nil
}

// watchStart is what a watcher sends before the changes as they happen:
// the current objects, one sorted list per cluster in the order of the
// clusters (shared with the store's other readers: read only), or the
// changes since a resource version.
type watchStart struct {
	clusters [][]*entry
	changes  []change
}

// replayFromLocked is, per source, the resource version a watch from since
// replays the changes after, or why it cannot.
func (s *Store) replayFromLocked(since map[string]uint64) (map[*source]uint64, error) {
	if n, plain := since[""]; plain && len(since) == 1 && len(s.sources) == 1 {
		for name := range s.sources {
			since = map[string]uint64{name: n}
		}
	}
	if len(since) != len(s.sources) {
		return nil, fmt.Errorf("%w: it names other shards than the %d the store reads", errResourceVersionTooOld, len(s.sources))
	}
	from := make(map[*source]uint64, len(since))
	for name, n := range since {
		src, found := s.sources[name]
		if !found {
			return nil, fmt.Errorf("%w: it names shard %q, which the store does not read", errResourceVersionTooOld, name)
		}
		if n < src.historyStart {
			return nil, fmt.Errorf("%w: %d (changes are kept from %d on)", errResourceVersionTooOld, n, src.historyStart)
		}
		from[src] = n
	}
	return from, nil
}

// clustersSnapshot is the objects of some clusters at one moment, as a
// watcher gets them to tell its client about clusters that came into or
// went out of sight.
type clustersSnapshot struct {
	// entries are those of each cluster asked for, sorted by name (the
	// store's lists: read only).
	entries map[logicalcluster.Name][]*entry
	// resourceVersion is the store's at that moment.
	resourceVersion string
	// queued is how many changes were waiting in the watcher's incoming
	// queue: exactly the changes before the snapshot it has not processed.
	queued int
}

// snapshotClusters reads the objects of clusters, the store's resource
// version and the length of w's queue, all under the lock, which every push
// to a watcher holds. Only w's own goroutine may call it: nothing else
// takes from its queue.
func (s *Store) snapshotClusters(w *watcher, clusters []logicalcluster.Name) clustersSnapshot {
	snapshot := clustersSnapshot{entries: make(map[logicalcluster.Name][]*entry, len(clusters))}
	s.lock.RLock()
	defer s.lock.RUnlock()
	s.sortedLock.Lock()
	for _, cluster := range clusters {
		snapshot.entries[cluster] = s.sortedClusterLocked(cluster)
	}
	s.sortedLock.Unlock()
	snapshot.resourceVersion = s.versionLocked()
	snapshot.queued = w.incoming.len()
	return snapshot
}

// StopWatchesWhenDone ends every watch when ctx is done, so that a shutting
// down server is not held open by its watchers.
func (s *Store) StopWatchesWhenDone(ctx context.Context) {
	go func() {
		<-ctx.Done()
		s.watchersLock.Lock()
		watchers := make([]*watcher, 0, len(s.watchers))
		for w := range s.watchers {
			watchers = append(watchers, w)
		}
		s.watchersLock.Unlock()
		for _, w := range watchers {
			w.Stop()
		}
	}()
}

func (s *Store) unregister(w *watcher) {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	delete(s.watchers, w)
}
