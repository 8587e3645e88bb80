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

package main

import (
	"encoding/base64"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

func newTestSource(t *testing.T, n int) *fakeSource {
	t.Helper()
	src, err := newFakeSource(t.TempDir(), collection{apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadataList", resourceVersion: "42", n: n,
		item: func(i int) any {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%d", i), ResourceVersion: fmt.Sprint(i + 1)}}
		},
		newList: func() runtime.Object { return &metav1.PartialObjectMetadataList{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.forget() })
	return src
}

func names(list runtime.Object) []string {
	items := list.(*metav1.PartialObjectMetadataList).Items
	out := make([]string, 0, len(items))
	for _, item := range items {
		out = append(out, item.Name)
	}
	return out
}

func TestFakeSourcePages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int
		limit int64
		pages [][]string
	}{
		{n: 5, limit: 0, pages: [][]string{{"item-0", "item-1", "item-2", "item-3", "item-4"}}},
		{n: 5, limit: 2, pages: [][]string{{"item-0", "item-1"}, {"item-2", "item-3"}, {"item-4"}}},
		{n: 4, limit: 2, pages: [][]string{{"item-0", "item-1"}, {"item-2", "item-3"}}},
		{n: 3, limit: 500, pages: [][]string{{"item-0", "item-1", "item-2"}}},
		{n: 0, limit: 500, pages: [][]string{nil}},
	} {
		t.Run(fmt.Sprintf("n=%d,limit=%d", tc.n, tc.limit), func(t *testing.T) {
			t.Parallel()
			src := newTestSource(t, tc.n)
			continueToken := ""
			for i, want := range tc.pages {
				list, err := src.List(metav1.ListOptions{Limit: tc.limit, Continue: continueToken})
				if err != nil {
					t.Fatalf("page %d: %v", i, err)
				}
				meta := list.(*metav1.PartialObjectMetadataList).ListMeta
				if got := names(list); !slices.Equal(got, want) {
					t.Errorf("page %d: items %v, want %v", i, got, want)
				}
				if meta.ResourceVersion != "42" {
					t.Errorf("page %d: resourceVersion %q, want the list's", i, meta.ResourceVersion)
				}
				last := i == len(tc.pages)-1
				if (meta.Continue == "") != last {
					t.Errorf("page %d of %d: continue %q", i, len(tc.pages), meta.Continue)
				}
				if !last && (meta.RemainingItemCount == nil || *meta.RemainingItemCount != int64(tc.n-(i+1)*int(tc.limit))) {
					t.Errorf("page %d: remainingItemCount %v", i, meta.RemainingItemCount)
				}
				continueToken = meta.Continue
			}
		})
	}
}

func TestFakeSourceThroughPager(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, 1234)
	calls := 0
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		calls++
		return src.List(opts)
	}))
	list, paginated, err := p.List(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if !paginated || calls != 3 {
		t.Errorf("paginated %t in %d calls, want 3 pages of the pager's 500", paginated, calls)
	}
	var got int
	if err := apimeta.EachListItem(list, func(runtime.Object) error { got++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != 1234 {
		t.Errorf("%d items, want 1234", got)
	}
}

func TestFakeSourceRefuses(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, 3)
	otherVersion := base64.RawURLEncoding.EncodeToString([]byte("41/1"))
	if _, err := src.List(metav1.ListOptions{Limit: 1, Continue: otherVersion}); !apierrors.IsResourceExpired(err) {
		t.Errorf("a continue of another resourceVersion: %v, want expired", err)
	}
	for _, token := range []string{"%%%", base64.RawURLEncoding.EncodeToString([]byte("42/4")), base64.RawURLEncoding.EncodeToString([]byte("42"))} {
		if _, err := src.List(metav1.ListOptions{Limit: 1, Continue: token}); !apierrors.IsBadRequest(err) {
			t.Errorf("continue %q: %v, want a bad request", token, err)
		}
	}
	if err := src.forget(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.List(metav1.ListOptions{}); err == nil {
		t.Error("listed after forget")
	}
}
