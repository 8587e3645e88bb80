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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// listPageSize is the most items a page of any list asks for (client-go's
// pager's default, kubectl's --chunk-size).
const listPageSize = 500

// errEnough stops the pager: the caller has what it needs.
var errEnough = errors.New("enough listed")

// listBounded lists with client-go's pager, a page at a time, and hands
// each item to each until each says stop or max items were handed; more is
// true when an item past max was left. At most one page past the one
// where it stops is asked for (the pager asks for the next page while the
// caller reads one). A page that expires is an error: the pager's fallback,
// a full list, has no bound. An item handed to each is in its page's
// slice: each copies what it keeps.
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
