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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
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
