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
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/watch"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// watchBenchObjects is how many WorkspaceMounts the watch benchmarks' store
// holds: over 100 clusters of 100 (benchmarkStore).
const watchBenchObjects = 10000

// flipper changes one WorkspaceMount of a store back and forth, as the
// informer would: every call is a change that empties the store's sorted
// lists of its cluster and of all.
type flipper struct {
	store *Store
	src   *source
	ws    [2]*tenancyv1alpha1.Workspace
	n     int
}

func newFlipper(s *Store, cluster string) *flipper {
	return &flipper{store: s, src: s.sources[""], ws: [2]*tenancyv1alpha1.Workspace{
		mounted(cluster, "flipping", mount.PhaseReady, nil),
		mounted(cluster, "flipping", mount.PhaseConnecting, nil),
	}}
}

func (f *flipper) flip() {
	f.n++
	ws := f.ws[f.n%2]
	ws.ResourceVersion = strconv.Itoa(1000000 + f.n)
	f.store.upsert(f.src, ws)
}

// BenchmarkFlip is what the store's handler of one change of a mount costs,
// no watcher registered, at 10,000 WorkspaceMounts: the status annotation
// parsed, the WorkspaceMount converted and encoded, the change recorded; for
// a mount in one state since first seen and one with a full history.
func BenchmarkFlip(b *testing.B) {
	for _, transitions := range []int{0, mount.MaxTransitions - 1} {
		b.Run(fmt.Sprintf("transitions-before-current=%d", transitions), func(b *testing.B) {
			s := benchmarkStore(b, watchBenchObjects)
			f := newFlipper(s, "cluster-007")
			for i, ws := range f.ws {
				ws.Annotations[mount.StatusAnnotationKey] = historyAnnotation(fmt.Sprintf("flipping-%d", i), transitions)
			}
			b.ReportAllocs()
			for b.Loop() {
				f.flip()
			}
		})
	}
}

// startAndStop starts a watch from no resource version (the whole target
// first), waits for its first event and stops it.
func startAndStop(b *testing.B, r *REST, target string) {
	ctx, cancel := context.WithCancel(requestContext(target))
	defer cancel()
	w, err := r.Watch(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := <-w.ResultChan(); !ok {
		b.Fatal("the watch ended before its first event")
	}
	w.Stop()
}

// BenchmarkWatchStart is what one watch from no resource version costs
// until its first event, at 10,000 WorkspaceMounts: at one cluster (100 of
// them), at * with the store's sorted list of all at hand, and at * right
// after a change (which empties that list).
func BenchmarkWatchStart(b *testing.B) {
	for _, tc := range []struct {
		name   string
		target string
		change bool
	}{
		{name: "one-cluster", target: "cluster-042"},
		{name: "all", target: "*"},
		{name: "all-after-a-change", target: "*", change: true},
	} {
		b.Run(fmt.Sprintf("%s/%d", tc.name, watchBenchObjects), func(b *testing.B) {
			s := benchmarkStore(b, watchBenchObjects)
			r := NewREST(s, allVisible)
			f := newFlipper(s, "cluster-007")
			f.flip()
			b.ReportAllocs()
			for b.Loop() {
				if tc.change {
					f.flip()
				}
				startAndStop(b, r, tc.target)
			}
		})
	}
}

// BenchmarkListDuringWatchStarts is a list of one cluster (100 objects)
// while another goroutine changes the store and starts a watch at * after
// every change, without pause, at 10,000 WorkspaceMounts: how long a list
// waits for the store behind watch starts. p50-ns, p99-ns and max-ns are
// the lists' own latencies; ns/op, their mean, counts the time the list
// loop stood still.
func BenchmarkListDuringWatchStarts(b *testing.B) {
	for _, starting := range []bool{false, true} {
		name := "alone"
		if starting {
			name = "beside-watch-starts"
		}
		b.Run(fmt.Sprintf("%s/%d", name, watchBenchObjects), func(b *testing.B) {
			s := benchmarkStore(b, watchBenchObjects)
			r := NewREST(s, allVisible)
			ctx := requestContext("cluster-042")
			options := &metainternalversion.ListOptions{}
			stop := make(chan struct{})
			var background sync.WaitGroup
			starts := 0
			if starting {
				f := newFlipper(s, "cluster-007")
				background.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						f.flip()
						startAndStop(b, r, "*")
						starts++
					}
				})
			}
			latencies := make([]time.Duration, 0, 100000)
			began := time.Now()
			for b.Loop() {
				t0 := time.Now()
				if _, err := r.List(ctx, options); err != nil {
					b.Fatal(err)
				}
				latencies = append(latencies, time.Since(t0))
			}
			elapsed := time.Since(began)
			close(stop)
			background.Wait()
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2]), "p50-ns")
			b.ReportMetric(float64(latencies[len(latencies)*99/100]), "p99-ns")
			b.ReportMetric(float64(latencies[len(latencies)-1]), "max-ns")
			b.ReportMetric(float64(starts)/elapsed.Seconds(), "starts/s")
		})
	}
}

// BenchmarkIdleWatchMemory is what an idle watch holds in the storage, at
// 10,000 WorkspaceMounts: 1,000 watches started from the store's resource
// version (as a client watches after its list) and left waiting, heap and
// goroutine stacks after a GC, per watch (B/idle-watch). The HTTP side (the
// handler's goroutine, the connection's buffers) comes on top.
func BenchmarkIdleWatchMemory(b *testing.B) {
	const watches = 1000
	for _, target := range []string{"cluster-042", "*"} {
		b.Run(fmt.Sprintf("%s/%d", target, watchBenchObjects), func(b *testing.B) {
			s := benchmarkStore(b, watchBenchObjects)
			r := NewREST(s, allVisible)
			_, rv := s.list(allClusters)
			var perWatch float64
			for b.Loop() {
				perWatch = bytesPerWatch(b, watches, func() watch.Interface {
					w, err := r.Watch(requestContext(target), &metainternalversion.ListOptions{ResourceVersion: rv})
					if err != nil {
						b.Fatal(err)
					}
					return w
				}, func(started []watch.Interface) {
					for !allWaiting(s, started) {
						time.Sleep(10 * time.Millisecond)
					}
				})
			}
			b.ReportMetric(perWatch, "B/idle-watch")
		})
	}
}

// BenchmarkWildcardWatchMemory is what an idle watch at * holds in the
// storage as the number of clusters grows (one WorkspaceMount each, every
// cluster visible, the worst case: an answer kept for every cluster):
// watches started from no resource version, their initial events read,
// then left waiting,
// heap and goroutine stacks after a GC, per watch (B/watch). Times
// --max-watches, it bounds the memory of the pool of watches at *.
func BenchmarkWildcardWatchMemory(b *testing.B) {
	const watches = 200
	for _, clusters := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("clusters/%d", clusters), func(b *testing.B) {
			s := NewStore(mount.Rule{})
			src := &source{synced: true}
			s.sources[""] = src
			for i := range clusters {
				ws := mounted(fmt.Sprintf("cluster-%05d", i), "mount", mount.PhaseReady, nil)
				ws.ResourceVersion = fmt.Sprint(i + 1)
				s.upsert(src, ws)
			}
			r := NewREST(s, allVisible)
			var perWatch float64
			for b.Loop() {
				perWatch = bytesPerWatch(b, watches, func() watch.Interface {
					w, err := r.Watch(requestContext("*"), &metainternalversion.ListOptions{})
					if err != nil {
						b.Fatal(err)
					}
					for range clusters { // the initial events: an answer taken for every cluster
						<-w.ResultChan()
					}
					return w
				}, func([]watch.Interface) {})
			}
			b.ReportMetric(perWatch, "B/watch")
		})
	}
}

// bytesPerWatch starts n watches, waits until settled says they are all
// waiting, and returns the heap and goroutine stacks they hold each (after a
// GC); then stops them and waits until their goroutines are gone.
func bytesPerWatch(b *testing.B, n int, start func() watch.Interface, settled func([]watch.Interface)) float64 {
	b.Helper()
	inUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse + m.StackInuse
	}
	goroutines := runtime.NumGoroutine()
	before := inUse()
	started := make([]watch.Interface, 0, n)
	for range n {
		started = append(started, start())
	}
	settled(started)
	perWatch := float64(inUse()-before) / float64(n)
	for _, w := range started {
		w.Stop()
	}
	for runtime.NumGoroutine() > goroutines { // the watchers gone
		time.Sleep(10 * time.Millisecond)
	}
	return perWatch
}

// allWaiting tells whether every watch is registered and past its start
// (at *, its answers taken for every cluster).
func allWaiting(s *Store, started []watch.Interface) bool {
	s.watchersLock.Lock()
	defer s.watchersLock.Unlock()
	for _, w := range started {
		if _, found := s.watchers[w.(*watcher)]; !found {
			return false
		}
	}
	return runtime.NumGoroutine() >= 2*len(started)
}
