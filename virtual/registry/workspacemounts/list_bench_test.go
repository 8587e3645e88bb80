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
	"encoding/json"
	"fmt"
	"io"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// benchmarkStore is a synced store of n mounted Workspaces over n/100 clusters,
// filled without an informer.
func benchmarkStore(b *testing.B, n int) *Store {
	b.Helper()
	s := newStore()
	src := &source{hasSynced: func() bool { return true }, synced: true}
	s.sources[""] = src
	for i := range n {
		ws := mounted(fmt.Sprintf("cluster-%03d", i%max(1, n/100)), fmt.Sprintf("mount-%05d", i), mount.PhaseReady, map[string]string{"team": "a"})
		ws.ResourceVersion = fmt.Sprint(i + 1)
		s.upsert(src, ws)
	}
	return s
}

// BenchmarkList measures what a list of every WorkspaceMount at * costs in
// the plugin, step by step: the storage, the table, and JSON encoding.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		r := NewREST(benchmarkStore(b, n), allVisible)
		ctx := requestContext("*")
		options := &metainternalversion.ListOptions{}

		b.Run(fmt.Sprintf("storage/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.List(ctx, options); err != nil {
					b.Fatal(err)
				}
			}
		})
		list, err := r.List(ctx, options)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("table/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.ConvertToTable(context.Background(), list, &metav1.TableOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("json/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(list); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What the server writes a list from now: the store's encodings.
		encodedREST := NewREST(r.store, allVisible).WithEncodedJSON("json")
		encoded, err := encodedREST.List(ctx, options)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("json-encoded/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := encoded.(*encodedList).CacheEncode("json", nil, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("table-encoded/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodedREST.ConvertToTable(ctx, encoded, &metav1.TableOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A meta.k8s.io/v1 Table (kubectl get), written by the server's
		// encoder: as the handlers made it before ListTable (ConvertToTable,
		// rows with the kept PartialObjectMetadata, encoding/json of the
		// Table), and ListTable's, written from the store's encodings.
		tableEncoder := metaJSONEncoder(b)
		v1Table := WithListAnswer(ctx, &tableGVK)
		b.Run(fmt.Sprintf("table-json/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list, err := encodedREST.List(v1Table, options)
				if err != nil {
					b.Fatal(err)
				}
				table, err := encodedREST.ConvertToTable(v1Table, list, &metav1.TableOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := tableEncoder.Encode(table, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		tableREST := NewREST(r.store, allVisible).WithEncodedTableJSON(tableEncoder.Identifier())
		b.Run(fmt.Sprintf("table-written/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				table, err := tableREST.ListTable(ctx, options, &metav1.TableOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if err := tableEncoder.Encode(table, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
