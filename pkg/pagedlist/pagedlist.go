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

// Package pagedlist gives informers a list that never holds a whole
// collection of full objects: see [Trimmed].
package pagedlist

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/watchlist"
)

// PageSize is how many objects each page of a [Trimmed] list asks for.
const PageSize = 500

// Trimmed returns lw whose List walks the collection in pages of [PageSize]
// and passes each page's items through transform before it asks for the
// next, so that a list holds the trimmed objects and one page of full ones.
// A list not older than a resourceVersion (a first list at "0", a relist at
// the last one seen) is asked at "", the latest: the watch cache answers
// those in one piece whatever the limit, and a limit would make a relist's
// resourceVersion an exact one, a past state. Watches, streaming initial lists
// included, are lw's: the informer's transform trims their objects one by
// one. transform must be idempotent, since the informer applies it again.
func Trimmed(lw cache.ListerWatcher, transform cache.TransformFunc) ListerWatcher {
	return &trimmed{
		withContext:          cache.ToListerWatcherWithContext(lw),
		transform:            transform,
		watchListUnsupported: watchlist.DoesClientNotSupportWatchListSemantics(lw),
	}
}

// ListerWatcher lists and watches with and without a context.
type ListerWatcher interface {
	cache.ListerWatcher
	cache.ListerWatcherWithContext
}

type trimmed struct {
	withContext          cache.ListerWatcherWithContext
	transform            cache.TransformFunc
	watchListUnsupported bool
}

var _ cache.ListerWatcherWithContext = &trimmed{}

func (t *trimmed) List(options metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), options)
}

func (t *trimmed) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	p := pager.New(t.page)
	p.PageSize = PageSize
	// An expired continue token fails the list, which the reflector retries
	// from the start, rather than a full list of full objects.
	p.FullListIfExpired = false
	if options.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		options.ResourceVersion, options.ResourceVersionMatch = "", ""
	}
	options.Limit, options.Continue = PageSize, ""
	list, _, err := p.List(ctx, options)
	return list, err
}

// page lists one page and returns it trimmed, its full objects left to the
// garbage collector.
func (t *trimmed) page(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	page, err := t.withContext.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	listMeta, err := meta.ListAccessor(page)
	if err != nil {
		return nil, err
	}
	out := &metainternalversion.List{ListMeta: metav1.ListMeta{
		ResourceVersion: listMeta.GetResourceVersion(), Continue: listMeta.GetContinue(), RemainingItemCount: listMeta.GetRemainingItemCount(),
	}}
	err = meta.EachListItemWithAlloc(page, func(item runtime.Object) error {
		trimmedItem, err := t.transform(item)
		if err != nil {
			return err
		}
		obj, ok := trimmedItem.(runtime.Object)
		if !ok {
			return fmt.Errorf("the transform made a %T of a %T, not a runtime.Object", trimmedItem, item)
		}
		out.Items = append(out.Items, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *trimmed) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return t.withContext.WatchWithContext(context.Background(), options)
}

func (t *trimmed) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return t.withContext.WatchWithContext(ctx, options)
}

// IsWatchListSemanticsUnSupported is lw's, so that the reflector streams
// initial lists where lw can.
func (t *trimmed) IsWatchListSemanticsUnSupported() bool { return t.watchListUnsupported }
