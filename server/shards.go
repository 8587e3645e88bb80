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

package server

import (
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// Shards are the shards the process serves, by name, "" for the one of
// --kubeconfig; a cluster is on the one shard whose LogicalCluster cache
// holds it.
type Shards struct {
	lock   sync.RWMutex
	shards map[string]*shard
}

// shard is one shard being served by [Server.runShard].
type shard struct {
	name    string
	contact *kcpcontact.Tracker
	started time.Time
	review  authorization.ReviewFunc // nil without the virtual workspace

	// nil until its caches have synced
	lock            sync.RWMutex
	workspaces      cache.Indexer
	logicalClusters cache.Indexer
}

func newShards() *Shards { return &Shards{shards: map[string]*shard{}} }

func (s *shard) setSynced(workspaces, logicalClusters cache.Indexer) {
	s.lock.Lock()
	defer s.lock.Unlock()
	s.workspaces, s.logicalClusters = workspaces, logicalClusters
}

func (s *shard) caches() (workspaces, logicalClusters cache.Indexer) {
	s.lock.RLock()
	defer s.lock.RUnlock()
	return s.workspaces, s.logicalClusters
}

func (s *Shards) add(served *shard) {
	s.lock.Lock()
	defer s.lock.Unlock()
	s.shards[served.name] = served
}

// remove forgets the shard, unless a newer runner of it took its place.
func (s *Shards) remove(served *shard) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.shards[served.name] == served {
		delete(s.shards, served.name)
	}
}

func (s *Shards) all() []*shard {
	s.lock.RLock()
	defer s.lock.RUnlock()
	all := make([]*shard, 0, len(s.shards))
	for _, served := range s.shards {
		all = append(all, served)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}

// Names are the named shards served, sorted.
func (s *Shards) Names() []string {
	all := s.all()
	names := make([]string, 0, len(all))
	for _, served := range all {
		if served.name != "" {
			names = append(names, served.name)
		}
	}
	return names
}

// LastContact is how long ago the shard last answered, false if it never did.
func (s *Shards) LastContact(name string) (time.Duration, bool) {
	s.lock.RLock()
	served := s.shards[name]
	s.lock.RUnlock()
	if served == nil {
		return 0, false
	}
	return served.contact.Since()
}

// shardOf is the synced shard whose LogicalCluster cache holds the cluster.
func (s *Shards) shardOf(cluster logicalcluster.Name) (*shard, bool) {
	for _, served := range s.all() {
		if _, logicalClusters := served.caches(); logicalClusters != nil && clusterExists(logicalClusters, cluster) {
			return served, true
		}
	}
	return nil, false
}

// PathOf is the cluster's path as the synced shard holding it knows it,
// empty when none does.
func (s *Shards) PathOf(cluster logicalcluster.Name) logicalcluster.Path {
	all := s.all()
	indexers := make([]cache.Indexer, 0, len(all))
	for _, served := range all {
		if _, logicalClusters := served.caches(); logicalClusters != nil {
			indexers = append(indexers, logicalClusters)
		}
	}
	return tenant.PathsFrom(indexers...)(cluster)
}

func clusterExists(logicalClusters cache.Indexer, cluster logicalcluster.Name) bool {
	_, exists, err := logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
	return exists && err == nil
}

// ClusterExists tells whether a shard holds the logical cluster.
func (s *Shards) ClusterExists(cluster logicalcluster.Name) bool {
	_, found := s.shardOf(cluster)
	return found
}

// ReviewerOf sends a review to the shard holding the cluster.
func (s *Shards) ReviewerOf(cluster logicalcluster.Name) (authorization.ReviewFunc, bool) {
	served, found := s.shardOf(cluster)
	if !found || served.review == nil {
		return nil, false
	}
	return served.review, true
}

// GetWorkspace finds a Workspace on whichever shard holds its cluster.
func (s *Shards) GetWorkspace(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
	for _, served := range s.all() {
		workspaces, _ := served.caches()
		if workspaces == nil {
			continue
		}
		ws, err := tenancyv1alpha1listers.NewWorkspaceClusterLister(workspaces).Cluster(cluster).Get(name)
		if err == nil {
			return ws, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(tenancyv1alpha1.Resource("workspaces"), name)
}

// List lists the Workspaces of every synced shard.
func (s *Shards) List() []interface{} {
	var all []interface{}
	for _, served := range s.all() {
		if workspaces, _ := served.caches(); workspaces != nil {
			all = append(all, workspaces.List()...)
		}
	}
	return all
}

// Synced tells whether any shard is served.
func (s *Shards) Synced() bool {
	for _, served := range s.all() {
		if workspaces, _ := served.caches(); workspaces != nil {
			return true
		}
	}
	return false
}

// syncedOrLate tells whether every shard of names has synced, or had grace
// to; 0 is no grace.
func (s *Shards) syncedOrLate(names []string, grace time.Duration) bool {
	s.lock.RLock()
	defer s.lock.RUnlock()
	for _, name := range names {
		served := s.shards[name]
		if served == nil {
			return false // its runner is about to start
		}
		if workspaces, _ := served.caches(); workspaces == nil && (grace == 0 || time.Since(served.started) < grace) {
			return false
		}
	}
	return true
}
