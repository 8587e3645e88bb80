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

// Package tenant names who a share of the plugin is counted against: the org of a logical cluster,
// by its LogicalCluster's kcp.io/path, which tenants cannot write; a cluster whose path is unknown
// is a tenant of its own.
package tenant

import (
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
)

// Name is a tenant: "root", "root:<org>", or "cluster:<name>".
type Name string

const Root Name = "root"

// OfPath is the tenant of a workspace path: root:org for root:org and below, root for root.
func OfPath(path logicalcluster.Path) Name {
	s := path.String()
	if s == "" {
		return ""
	}
	if s == core.RootCluster.String() {
		return Root
	}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 || parts[0] != core.RootCluster.String() {
		return Name(parts[0]) // not under root: its top workspace
	}
	return Name(parts[0] + ":" + parts[1])
}

type PathOf func(logicalcluster.Name) logicalcluster.Path

// Of is the tenant of cluster, by its path if pathOf, which may be nil, knows it.
func Of(cluster logicalcluster.Name, pathOf PathOf) Name {
	if cluster == core.RootCluster {
		return Root
	}
	if pathOf != nil {
		if t := OfPath(pathOf(cluster)); t != "" {
			return t
		}
	}
	return Name("cluster:" + cluster.String())
}

// PathsFrom reads paths from LogicalCluster caches, one per shard.
func PathsFrom(logicalClusters ...cache.Indexer) PathOf {
	return func(cluster logicalcluster.Name) logicalcluster.Path {
		key := kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName)
		for _, indexer := range logicalClusters {
			obj, exists, err := indexer.GetByKey(key)
			if err != nil || !exists {
				continue
			}
			if lc, ok := obj.(*corev1alpha1.LogicalCluster); ok {
				if p := lc.Annotations[core.LogicalClusterPathAnnotationKey]; p != "" {
					return logicalcluster.NewPath(p)
				}
			}
		}
		return logicalcluster.Path{}
	}
}

// Limiters are token buckets, one per key, created full on first use; the map forgets full ones
// whenever it has doubled since it last did.
type Limiters[K comparable] struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	lock    sync.Mutex
	byKey   map[K]*rate.Limiter
	pruneAt int
}

const minPruneAt = 64

// NewLimiters are buckets of limit tokens a second, burst at most; now may be nil.
func NewLimiters[K comparable](limit rate.Limit, burst int, now func() time.Time) *Limiters[K] {
	if now == nil {
		now = time.Now
	}
	return &Limiters[K]{limit: limit, burst: burst, now: now, byKey: map[K]*rate.Limiter{}, pruneAt: minPruneAt}
}

// Reserve takes a token of k's bucket and returns how long until it is due.
func (l *Limiters[K]) Reserve(k K) time.Duration {
	l.lock.Lock()
	defer l.lock.Unlock()
	now := l.now()
	return l.limiterOf(k, now).ReserveN(now, 1).DelayFrom(now)
}

// Allow takes a token of k's bucket if one is there, else says how long until one is.
func (l *Limiters[K]) Allow(k K) (bool, time.Duration) {
	l.lock.Lock()
	defer l.lock.Unlock()
	now := l.now()
	limiter := l.limiterOf(k, now)
	if limiter.AllowN(now, 1) {
		return true, 0
	}
	r := limiter.ReserveN(now, 1)
	defer r.CancelAt(now)
	return false, r.DelayFrom(now)
}

func (l *Limiters[K]) Len() int {
	l.lock.Lock()
	defer l.lock.Unlock()
	return len(l.byKey)
}

func (l *Limiters[K]) limiterOf(k K, now time.Time) *rate.Limiter {
	if limiter, found := l.byKey[k]; found {
		return limiter
	}
	if len(l.byKey) >= l.pruneAt {
		for other, limiter := range l.byKey {
			if limiter.TokensAt(now) >= float64(l.burst) {
				delete(l.byKey, other)
			}
		}
		l.pruneAt = max(minPruneAt, 2*len(l.byKey))
	}
	limiter := rate.NewLimiter(l.limit, l.burst)
	l.byKey[k] = limiter
	return limiter
}
