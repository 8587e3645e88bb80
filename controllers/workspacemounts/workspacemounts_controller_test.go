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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/reconciler/committer"
)

// TestHandlerForAllIgnoresRelistedObjects: a relist (kcp's watch cache gone,
// 410 Gone) reports every object again as an update of itself; only a new
// resourceVersion is a change worth reconciling.
func TestHandlerForAllIgnoresRelistedObjects(t *testing.T) {
	t.Parallel()
	var seen []string
	handler := handlerForAll(func(obj interface{}) { seen = append(seen, obj.(*metav1.PartialObjectMetadata).ResourceVersion) })
	object := func(rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: rv}}
	}
	handler.OnAdd(object("1"), false)
	handler.OnUpdate(object("1"), object("1"))
	handler.OnUpdate(object("1"), object("2"))
	handler.OnUpdate(object(""), object("")) // no version to compare: a change
	handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "a", Obj: object("2")})
	require.Equal(t, []string{"1", "2", "", "2"}, seen)
}

// TestRetryRateLimiterIsCapped: a key that keeps failing (conflicts from a
// cache that catches up late after a kcp outage) is tried again at least
// every maxRetryDelay, not after client-go's default of up to 1000s.
func TestRetryRateLimiterIsCapped(t *testing.T) {
	t.Parallel()
	limiter := retryRateLimiter()
	var last time.Duration
	for range 30 {
		last = limiter.When("root|ws")
	}
	require.Equal(t, maxRetryDelay, last)
	limiter.Forget("root|ws")
	require.Less(t, limiter.When("root|ws"), time.Second, "a success starts the backoff again")
}

// TestProcessWorkspaceRetriesAConflictFromKCP: after a patch conflicted (the
// cache is behind kcp, as while a watch catches up after kcp came back), the
// next try reads the Workspace from kcp and patches against that version,
// instead of conflicting again from the cache; the try after reads the
// cache again.
func TestProcessWorkspaceRetriesAConflictFromKCP(t *testing.T) {
	t.Parallel()
	cached := mountedWorkspace(kubeClusterRef)
	cached.ResourceVersion = "1"
	indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(cached))
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(cached)
	require.NoError(t, err)

	var committedVersions []string
	var liveReads int
	c := &Controller{
		workspaceLister: tenancyv1alpha1listers.NewWorkspaceClusterLister(indexer),
		workspaces: &workspaceReconciler{
			resolve: servedEverywhere, getMountObject: returns(mountObject(map[string]interface{}{"phase": "Ready"}), nil),
			informerDenied: neverDenied, now: time.Now,
		},
		commit: func(_ context.Context, old, _ *committer.Resource[tenancyv1alpha1.WorkspaceSpec, tenancyv1alpha1.WorkspaceStatus]) error {
			committedVersions = append(committedVersions, old.ResourceVersion)
			if old.ResourceVersion == "1" {
				return apierrors.NewConflict(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, old.Name, errors.New("the object has been modified"))
			}
			return nil
		},
		getWorkspace: func(context.Context, logicalcluster.Name, string) (*tenancyv1alpha1.Workspace, error) {
			liveReads++
			live := cached.DeepCopy()
			live.ResourceVersion = "2"
			return live, nil
		},
		observed:   map[string]time.Time{},
		conflicted: map[string]bool{},
	}
	ctx := context.Background()
	require.True(t, apierrors.IsConflict(c.processWorkspace(ctx, key)), "the cache's version conflicts")
	// kcp just started: it answers 404 for Workspaces, not served yet. The
	// key is retried (and read from kcp again), not dropped.
	notServed := c.getWorkspace
	c.getWorkspace = func(context.Context, logicalcluster.Name, string) (*tenancyv1alpha1.Workspace, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, "")
	}
	require.True(t, apierrors.IsNotFound(c.processWorkspace(ctx, key)), "a 404 from kcp is retried")
	c.getWorkspace = notServed
	require.NoError(t, c.processWorkspace(ctx, key), "the retry patches kcp's version")
	require.Equal(t, []string{"1", "2"}, committedVersions)
	require.Equal(t, 1, liveReads)

	require.True(t, apierrors.IsConflict(c.processWorkspace(ctx, key)), "after a success, the cache again")
	require.Equal(t, 1, liveReads)
}
