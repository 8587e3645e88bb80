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

package pagedlist

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// source serves a collection of full objects page by page, as kcp does,
// and records what each page request saw of the earlier pages' objects.
type source struct {
	lock    sync.Mutex
	items   []metav1.PartialObjectMetadata
	version string
	// requests are the options of each List; untrimmedEarlier counts, at each,
	// the objects of earlier pages not yet trimmed.
	requests         []metav1.ListOptions
	untrimmedEarlier []int
	served           []string
	trimmed          map[string]bool
	watches          chan *watch.FakeWatcher
}

func newSource(n int, version string) *source {
	s := &source{version: version, trimmed: map[string]bool{}, watches: make(chan *watch.FakeWatcher, 10)}
	for i := range n {
		s.items = append(s.items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("object-%04d", i), ResourceVersion: version,
			Annotations: map[string]string{"full": "a long value only the full object holds"},
		}})
	}
	return s
}

func (s *source) List(options metav1.ListOptions) (runtime.Object, error) {
	s.lock.Lock()
	defer s.lock.Unlock()
	s.requests = append(s.requests, options)
	untrimmed := 0
	for _, name := range s.served {
		if !s.trimmed[name] {
			untrimmed++
		}
	}
	s.untrimmedEarlier = append(s.untrimmedEarlier, untrimmed)
	start := 0
	if options.Continue != "" {
		start, _ = strconv.Atoi(options.Continue)
	}
	end := len(s.items)
	if options.Limit > 0 {
		end = min(end, start+int(options.Limit))
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: s.version}}
	list.Items = append(list.Items, s.items[start:end]...)
	for _, item := range list.Items {
		s.served = append(s.served, item.Name)
	}
	if end < len(s.items) {
		list.Continue = strconv.Itoa(end)
	}
	return list, nil
}

func (s *source) Watch(metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFake()
	s.watches <- w
	return w, nil
}

// trim drops the annotation only the full object holds, and records whom.
func (s *source) trim(obj interface{}) (interface{}, error) {
	o, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	s.lock.Lock()
	s.trimmed[o.Name] = true
	s.lock.Unlock()
	o.Annotations = nil
	o.Labels = map[string]string{"trimmed": "true"}
	return o, nil
}

func TestTrimmedListsPageByPage(t *testing.T) {
	t.Parallel()
	src := newSource(1234, "17")
	list, err := Trimmed(src, src.trim).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 10})
	require.NoError(t, err)

	require.Len(t, src.requests, 3)
	require.Equal(t, metav1.ListOptions{Limit: PageSize}, src.requests[0], "a first list at 0 is asked at \"\", in pages")
	require.Equal(t, metav1.ListOptions{Limit: PageSize, Continue: "500"}, src.requests[1])
	require.Equal(t, metav1.ListOptions{Limit: PageSize, Continue: "1000"}, src.requests[2])
	require.Equal(t, []int{0, 0, 0}, src.untrimmedEarlier, "every page is trimmed before the next is asked")

	items, err := meta.ExtractList(list)
	require.NoError(t, err)
	require.Len(t, items, 1234)
	for i, item := range items {
		o := item.(*metav1.PartialObjectMetadata)
		require.Equal(t, fmt.Sprintf("object-%04d", i), o.Name)
		require.Nil(t, o.Annotations)
		require.Equal(t, "true", o.Labels["trimmed"])
	}
	accessor, err := meta.ListAccessor(list)
	require.NoError(t, err)
	require.Equal(t, "17", accessor.GetResourceVersion())
	require.Empty(t, accessor.GetContinue())
}

// TestTrimmedResourceVersions: a relist at the last resourceVersion seen is
// asked at the latest, not at that past state; an exact one is kept.
func TestTrimmedResourceVersions(t *testing.T) {
	t.Parallel()
	src := newSource(3, "17")
	_, err := Trimmed(src, src.trim).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "12"})
	require.NoError(t, err)
	_, err = Trimmed(src, src.trim).ListWithContext(context.Background(),
		metav1.ListOptions{ResourceVersion: "12", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	_, err = Trimmed(src, src.trim).ListWithContext(context.Background(),
		metav1.ListOptions{ResourceVersion: "12", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	require.NoError(t, err)
	require.Equal(t, []metav1.ListOptions{
		{Limit: PageSize}, {Limit: PageSize},
		{ResourceVersion: "12", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: PageSize},
	}, src.requests)
}

func TestTrimmedFailsOnATransformError(t *testing.T) {
	t.Parallel()
	src := newSource(3, "17")
	_, err := Trimmed(src, func(interface{}) (interface{}, error) { return nil, errors.New("no") }).ListWithContext(context.Background(), metav1.ListOptions{})
	require.ErrorContains(t, err, "no")
	_, err = Trimmed(src, func(interface{}) (interface{}, error) { return "a string", nil }).ListWithContext(context.Background(), metav1.ListOptions{})
	require.ErrorContains(t, err, "not a runtime.Object")
}

type noWatchList struct{ *source }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestTrimmedKeepsWatchListSemantics(t *testing.T) {
	t.Parallel()
	src := newSource(1, "1")
	type semantics interface{ IsWatchListSemanticsUnSupported() bool }
	require.False(t, Trimmed(src, src.trim).(semantics).IsWatchListSemanticsUnSupported())
	require.True(t, Trimmed(noWatchList{src}, src.trim).(semantics).IsWatchListSemanticsUnSupported())
}

// TestInformerRelistTrimsTheSame runs an informer on a Trimmed source, makes
// its watch expire and checks that the relist's objects are trimmed as the
// first list's and a watch's.
func TestInformerRelistTrimsTheSame(t *testing.T) {
	t.Parallel()
	src := newSource(1200, "5")
	informer := cache.NewSharedIndexInformer(Trimmed(noWatchList{src}, src.trim), &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	require.NoError(t, informer.SetTransform(src.trim))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go informer.RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	firstWatch := <-src.watches
	checkTrimmed(t, informer.GetStore(), 1200)

	added := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "added", ResourceVersion: "6", Annotations: map[string]string{"full": "x"}}}
	src.lock.Lock()
	src.items, src.version = append(src.items[:1000], *added.DeepCopy()), "7"
	src.requests, src.served, src.trimmed = nil, nil, map[string]bool{}
	src.lock.Unlock()
	firstWatch.Add(added)
	firstWatch.Error(&apierrors.NewResourceExpired("too old").ErrStatus)
	<-src.watches
	require.Eventually(t, func() bool { return len(informer.GetStore().List()) == 1001 }, 10*time.Second, 10*time.Millisecond)
	checkTrimmed(t, informer.GetStore(), 1001)
	src.lock.Lock()
	requests, untrimmed := len(src.requests), src.untrimmedEarlier[len(src.untrimmedEarlier)-3:]
	src.lock.Unlock()
	require.Equal(t, 3, requests, "the relist pages too")
	require.Equal(t, []int{0, 0, 0}, untrimmed)
}

func checkTrimmed(t *testing.T, store cache.Store, n int) {
	t.Helper()
	objects := store.List()
	require.Len(t, objects, n)
	for _, obj := range objects {
		o := obj.(*metav1.PartialObjectMetadata)
		require.Nil(t, o.Annotations, o.Name)
		require.Equal(t, map[string]string{"trimmed": "true"}, o.Labels, o.Name)
	}
}
