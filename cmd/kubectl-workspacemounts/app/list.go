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

package app

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	watchtools "k8s.io/client-go/tools/watch"
)

// listPageSize is the most items a page of any list asks for, kubectl's --chunk-size.
const listPageSize = 500

// errEnough stops the pager: the caller has what it needs.
var errEnough = errors.New("enough listed")

// listBounded lists with client-go's pager and hands each item to each until each says stop or max items were
// handed; more is true when an item past max was left. A page that expires is an error, as the pager's fallback,
// a full list, has no bound. each copies what it keeps: the item is in its page's slice.
func listBounded(ctx context.Context, list pager.ListPageFunc, opts metav1.ListOptions, max int, each func(runtime.Object) (stop bool)) (more bool, err error) {
	p := pager.New(list)
	p.PageSize = min(listPageSize, int64(max)+1)
	p.PageBufferSize = 0
	p.FullListIfExpired = false
	handed := 0
	err = p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		if handed == max {
			more = true
			return errEnough
		}
		handed++
		if each(obj) {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return more, err
}

// watchFrom watches from resourceVersion with client-go's [watchtools.RetryWatcher], which resumes where a watch
// the server closed ended, and hands each event to each until ctx is done. An error event, such as 410 Gone or a
// refusal, ends it with an error: it never ends silently.
func watchFrom(ctx context.Context, resourceVersion string, watchFunc cache.WatchFuncWithContext, each func(watch.Event) error) error {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFunc})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case event, ok := <-w.ResultChan():
			switch {
			case !ok && ctx.Err() != nil:
				return nil
			case !ok:
				return errors.New("the watch ended")
			case event.Type == watch.Error:
				return fmt.Errorf("the watch ended: %w", apierrors.FromObject(event.Object))
			}
			if err := each(event); err != nil {
				return err
			}
		}
	}
}
