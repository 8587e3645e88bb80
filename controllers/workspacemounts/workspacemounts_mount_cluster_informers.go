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
	"cmp"
	"context"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// clusterMountInformers runs the full-object informers of CRD resources, one per pair in use, at most limit of them,
// those mounted by the most Workspaces first: kcp serves a CRD resource across clusters only as metadata.
type clusterMountInformers struct {
	pool      *boundedPool[clusterResource]
	shard     string
	overLimit int
}

// clusterResource is a CRD resource in one cluster, with how many Workspaces there mount it.
type clusterResource struct {
	cluster    logicalcluster.Name
	resource   restmapping.Resource
	workspaces int
}

func (p clusterResource) key() string { return mountCacheKey(p.cluster, p.resource) }

// newClusterMountInformers reports every informer's events to onEvent, and its pair to onSynced once it has synced;
// bound, if not nil, bounds each pair's lists.
func newClusterMountInformers(client kcpdynamic.ClusterInterface, caches *mountCaches, limit int, shard string,
	onEvent func(restmapping.Resource, interface{}), onSynced func(cluster logicalcluster.Name, resource restmapping.Resource),
	bound func(cluster logicalcluster.Name, resource restmapping.Resource) listBound) *clusterMountInformers {
	return &clusterMountInformers{
		shard: shard,
		pool: newBoundedPool(limit, clusterResource.key, func(ctx context.Context, pair clusterResource) (func(), error) {
			var lists listBound
			if bound != nil {
				lists = bound(pair.cluster, pair.resource)
			}
			return startFullInformer(ctx, client, caches, pair.cluster, pair.resource, onEvent, func() { onSynced(pair.cluster, pair.resource) }, lists)
		}),
	}
}

// sync runs the informers of the wanted pairs as far as the limit allows and stops the others'.
func (m *clusterMountInformers) sync(ctx context.Context, wanted []clusterResource) (uncovered []clusterResource) {
	keys := make(map[clusterResource]string, len(wanted))
	for _, pair := range wanted {
		keys[pair] = pair.key()
	}
	pairs := slices.Clone(wanted)
	slices.SortFunc(pairs, func(a, b clusterResource) int {
		if a.workspaces != b.workspaces {
			return cmp.Compare(b.workspaces, a.workspaces)
		}
		return strings.Compare(keys[a], keys[b])
	})
	m.pool.lock.Lock()
	defer m.pool.lock.Unlock()
	denied, failed := m.pool.allot(ctx, pairs, true)
	if len(denied) > 0 && m.overLimit == 0 {
		klog.FromContext(ctx).Info("--max-cluster-mount-informers reached: the mount objects of the pairs beyond it are read with a GET per change, "+
			"on their resource's metadata events", "limit", m.pool.limit, "overLimit", len(denied))
	}
	m.overLimit = len(denied)
	metrics.SetClusterMountInformers(m.shard, len(m.pool.slots), m.overLimit)
	return append(denied, failed...)
}
