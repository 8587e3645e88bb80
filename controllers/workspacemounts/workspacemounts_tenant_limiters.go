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
	"time"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// tenantBucketRateLimiter is client-go's overall bucket of retries per tenant: a tenant whose keys keep failing waits
// for its own tokens; the others' retries are not delayed.
type tenantBucketRateLimiter struct {
	tenantOf func(key string) tenant.Name
	buckets  *tenant.Limiters[tenant.Name]
}

func (r *tenantBucketRateLimiter) When(key string) time.Duration {
	return r.buckets.Reserve(r.tenantOf(key))
}

func (r *tenantBucketRateLimiter) Forget(string) {}

func (r *tenantBucketRateLimiter) NumRequeues(string) int { return 0 }

// keyTenant is the tenant of a workspacemounts-workspaces key (cluster|workspace): of its cluster, by tenantOf.
func keyTenant(tenantOf func(logicalcluster.Name) tenant.Name) func(key string) tenant.Name {
	return func(key string) tenant.Name {
		cluster, _, _, err := kcpcache.SplitMetaClusterNamespaceKey(key)
		if err != nil || cluster.Empty() {
			return ""
		}
		return tenantOf(cluster)
	}
}
