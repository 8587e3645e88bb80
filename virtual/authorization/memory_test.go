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

package authorization

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/kcp-dev/logicalcluster/v3"
)

// BenchmarkReviewsMemory reports the heap a full cache of answers holds, per
// answer, for users with long names and many groups: what the cache keeps
// does not grow with them.
func BenchmarkReviewsMemory(b *testing.B) {
	allow := func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		return true, nil
	}
	opts := DefaultReviewOptions()
	groups := make([]string, 50)
	for i := range groups {
		groups[i] = strings.Repeat("g", 200) + fmt.Sprint(i)
	}
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := NewReviews(allow, opts, nil)
		for i := range opts.CacheSize {
			u := &user.DefaultInfo{Name: strings.Repeat("u", 1000) + fmt.Sprint(i), Groups: groups}
			if _, err := r.Allowed(context.Background(), u, "1a2b3c4d5e6f7g8h", "list", 0); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(opts.CacheSize), "heap-bytes/answer")
		runtime.KeepAlive(r)
	}
}
