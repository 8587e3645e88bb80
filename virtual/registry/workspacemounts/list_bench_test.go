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
	"fmt"
	"io"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// benchmarkStore is a synced store of n mounted Workspaces over n/100 clusters,
// filled without an informer.
func benchmarkStore(b *testing.B, n int) *Store {
	b.Helper()
	s := NewStore(mount.Rule{})
	src := &source{synced: true}
	s.sources[""] = src
	for i := range n {
		ws := mounted(fmt.Sprintf("cluster-%03d", i%max(1, n/100)), fmt.Sprintf("mount-%05d", i), mount.PhaseReady, map[string]string{"team": "a"})
		ws.ResourceVersion = fmt.Sprint(i + 1)
		s.upsert(src, ws)
	}
	return s
}

// BenchmarkList measures what a list of every WorkspaceMount at * costs in
// the plugin, step by step: the storage (List), the list written as JSON
// from the store's JSON (json-encoded), a meta.k8s.io/v1 Table (kubectl
// get) written by WriteTableJSON as the server's fastTables answers it
// (table-written), and as the list handler would make and write it
// without fastTables (table-json: ConvertToTable, a PartialObjectMetadata
// per row, encoding/json of the Table), and the decoding of every object
// that answers other than these need (decode).
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		r := NewREST(benchmarkStore(b, n), allVisible).WithEncodedJSON("json")
		ctx := requestContext("*")
		options := &metainternalversion.ListOptions{}
		list := func(b *testing.B) runtime.Object {
			list, err := r.List(ctx, options)
			if err != nil {
				b.Fatal(err)
			}
			return list
		}

		b.Run(fmt.Sprintf("storage/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list(b)
			}
		})
		b.Run(fmt.Sprintf("json-encoded/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			answer := list(b).(*listAnswer)
			for b.Loop() {
				if err := answer.CacheEncode("json", nil, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("table-written/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.WriteTableJSON(io.Discard, list(b), &metav1.TableOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		tableEncoder := metaJSONEncoder(b)
		b.Run(fmt.Sprintf("table-json/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				table, err := r.ConvertToTable(context.Background(), list(b), &metav1.TableOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for i := range table.Rows {
					m, err := meta.Accessor(table.Rows[i].Object.Object)
					if err != nil {
						b.Fatal(err)
					}
					partial := meta.AsPartialObjectMetadata(m)
					partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
					table.Rows[i].Object.Object = partial
				}
				if err := tableEncoder.Encode(table, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("decode/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list(b).(*listAnswer).GetObject()
			}
		})
	}
}
