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
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
)

// relistingLW lists lists[i] on its i-th list (the last one after that)
// and ends each watch with 410 Gone, as kcp's watch cache does after a
// restart, so that the reflector lists again.
type relistingLW struct {
	lock    sync.Mutex
	lists   [][]string
	listed  int
	watches chan *watch.FakeWatcher
}

func (l *relistingLW) ListWithContext(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	l.lock.Lock()
	defer l.lock.Unlock()
	names := l.lists[min(l.listed, len(l.lists)-1)]
	l.listed++
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, name := range names {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: name, ResourceVersion: "10", Annotations: map[string]string{logicalcluster.AnnotationKey: "c1"},
		}})
	}
	return list, nil
}

func (l *relistingLW) WatchWithContext(_ context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(1, false)
	l.watches <- w
	return w, nil
}

func (l *relistingLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

func (l *relistingLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

// IsWatchListSemanticsUnSupported makes the reflector list: the watch-list
// stream ends in the same Replace.
func (l *relistingLW) IsWatchListSemanticsUnSupported() bool { return true }

// TestInformersReportDeletesFoundByARelist: an object deleted while an
// informer's watch was down is found gone by its next list; the informer's
// cache must drop it and its handlers must see the delete. kcp-dev/apimachinery
// v2.32.3's informer (every informer of this plugin, the factories' too)
// keyed its cache with a function that refuses the tombstone of such a
// delete: the delete was lost, silently, and the object stayed in the cache
// for good (kcp-dev/kcp#4364; found by TestResilience, a mount object
// deleted right after kcp restarted). go.mod replaces the module with the
// fixed copy in third_party/.
func TestInformersReportDeletesFoundByARelist(t *testing.T) {
	t.Parallel()
	lw := &relistingLW{lists: [][]string{{"a", "b"}, {"a"}}, watches: make(chan *watch.FakeWatcher, 4)}
	informer := kcpinformers.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	deleted := make(chan string, 4)
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				deleted <- m.GetName()
			}
		},
	})
	require.NoError(t, err)
	ctx := t.Context() // ends the informer with the test
	go informer.RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	_, found, err := informer.GetIndexer().GetByKey("c1|b")
	require.NoError(t, err)
	require.True(t, found, "b after the first list")

	// The watch ends with 410 Gone: the reflector lists again, and b is gone.
	w := <-lw.watches
	gone := apierrors.NewResourceExpired("too old resource version: 10 (20)").Status()
	gone.Code = http.StatusGone
	w.Error(&gone)

	select {
	case name := <-deleted:
		require.Equal(t, "b", name)
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("the delete of b, found by the relist, never reached the handler")
	}
	_, found, err = informer.GetIndexer().GetByKey("c1|b")
	require.NoError(t, err)
	require.False(t, found, "b in the cache after the relist found it gone")
	_, found, err = informer.GetIndexer().GetByKey("c1|a")
	require.NoError(t, err)
	require.True(t, found, "a after the relist")
}
