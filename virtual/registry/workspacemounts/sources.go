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
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// source is one shard's Workspace and LogicalCluster informers.
type source struct {
	name                    string
	lastSyncResourceVersion func() string
	// synced: the first lists are in the store, and the history starts.
	synced bool
	// resourceVersion is that of the newest Workspace seen.
	resourceVersion uint64
	historyStart    uint64
	workspaces      cache.Indexer
	logicalClusters cache.Indexer // nil: paths are not known
	removed         chan struct{}
}

// AddShard adds a shard's informers, which the caller starts, as a source;
// "" is --kubeconfig's single shard.
func (s *Store) AddShard(name string, workspaces, logicalClusters cache.SharedIndexInformer) error {
	s.lock.Lock()
	defer s.lock.Unlock() // the handlers wait until the source is complete
	if _, exists := s.sources[name]; exists {
		return fmt.Errorf("shard %q is a source already", name)
	}
	src := &source{name: name, lastSyncResourceVersion: workspaces.LastSyncResourceVersion, workspaces: workspaces.GetIndexer(), removed: make(chan struct{})}
	registration, err := workspaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { s.upsert(src, obj) },
		UpdateFunc: func(_, obj interface{}) { s.upsert(src, obj) },
		DeleteFunc: func(obj interface{}) { s.remove(src, obj) },
	})
	if err != nil {
		return err
	}
	synced := []cache.DoneChecker{registration.HasSyncedChecker()}
	if logicalClusters != nil {
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
		synced = append(synced, registration.HasSyncedChecker())
	}
	s.sources[name] = src
	go s.markSyncedWhenDone(src, synced)
	return nil
}

// markSyncedWhenDone marks src synced once its handlers have had the first
// lists; see docs/design/registry-resource-versions.md.
func (s *Store) markSyncedWhenDone(src *source, checkers []cache.DoneChecker) {
	for _, checker := range checkers {
		select {
		case <-checker.Done():
		case <-src.removed:
			return
		}
	}
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.sources[src.name] != src {
		return
	}
	src.synced = true
	src.advance(src.lastSyncResourceVersion())
	src.historyStart = max(src.historyStart, src.resourceVersion)
}

// RemoveShard drops a source and its objects; the caller stops its informers.
func (s *Store) RemoveShard(name string) {
	s.lock.Lock()
	defer s.lock.Unlock()
	src, found := s.sources[name]
	if !found {
		return
	}
	delete(s.sources, name)
	close(src.removed)
	gone := map[*entry]string{}
	var sorted []*entry
	for key, e := range s.items {
		if e.shard == name {
			gone[e] = key
			sorted = append(sorted, e)
		}
	}
	sortEntries(sorted)
	version := s.versionLocked()
	for _, old := range sorted {
		emptied := s.deleteLocked(gone[old], old)
		s.pushLocked(change{old: old, version: version, emptied: emptied})
	}
	s.forgetHistoryLocked()
}

// HasSynced tells whether the store has sources, and the first lists of all.
func (s *Store) HasSynced() bool {
	s.lock.RLock()
	defer s.lock.RUnlock()
	for _, src := range s.sources {
		if !src.synced {
			return false
		}
	}
	return len(s.sources) > 0
}

// clusterPathOf is a LogicalCluster's kcp.io/path, empty for anything else.
func clusterPathOf(obj interface{}) string {
	if lc, ok := obj.(*corev1alpha1.LogicalCluster); ok {
		return lc.Annotations[core.LogicalClusterPathAnnotationKey]
	}
	return ""
}

// clusterPathKnown converts a cluster's Workspaces again, with its path.
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

// clusterPath is a cluster's path, empty when not known.
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

// advance moves the source's resource version forward, never back.
func (src *source) advance(resourceVersion string) {
	src.resourceVersion = max(src.resourceVersion, parseResourceVersion(resourceVersion))
}

// versionLocked is the store's resource version, name=number,... or one number.
func (s *Store) versionLocked() string {
	if len(s.sources) == 1 {
		for _, src := range s.sources {
			return strconv.FormatUint(src.resourceVersion, 10)
		}
	}
	parts := make([]string, 0, len(s.sources))
	for _, name := range slices.Sorted(maps.Keys(s.sources)) {
		parts = append(parts, name+"="+strconv.FormatUint(s.sources[name].resourceVersion, 10))
	}
	return strings.Join(parts, ",")
}

// parseVersion reads a version the store gave, a plain number as "", else nil.
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

// parseResourceVersion reads kcp's resource versions, which are numbers; 0 for anything else.
func parseResourceVersion(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
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
		} else {
			e.shareStatus(ws.Annotations[mount.StatusAnnotationKey])
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
	// A missed deletion, a relist's tombstone, happened by the relist's revision.
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

// dispatchLocked records a change of src and pushes it to the watchers.
func (s *Store) dispatchLocked(src *source, c change) {
	c.version = s.versionLocked()
	s.recordLocked(src, c)
	s.pushLocked(c)
}
