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

package shards

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
)

// noWatchList has the reflector list, then watch: a fake watcher sends no
// initial-events-end bookmark.
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func shard(name, baseURL string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ShardSpec{BaseURL: baseURL}}
}

// event is what a runner saw: a start with the shard's config, or a return.
type event struct {
	shard, host, token string
	returned           bool
}

// recorder runs shards, records their starts and returns, and fails a
// shard's run as often as it is told to.
type recorder struct {
	lock   sync.Mutex
	events []event
	fails  map[string]int
	// linger is how long a run takes to return once its context ends.
	linger time.Duration
}

func (rec *recorder) run(ctx context.Context, s Shard) error {
	rec.lock.Lock()
	rec.events = append(rec.events, event{shard: s.Name, host: s.Config.Host, token: s.Config.BearerToken})
	fail := rec.fails[s.Name] > 0
	if fail {
		rec.fails[s.Name]--
	}
	rec.lock.Unlock()
	if fail {
		return errors.New("kcp is away")
	}
	<-ctx.Done()
	time.Sleep(rec.linger)
	rec.lock.Lock()
	rec.events = append(rec.events, event{shard: s.Name, host: s.Config.Host, returned: true})
	rec.lock.Unlock()
	return nil
}

func (rec *recorder) seen() []event {
	rec.lock.Lock()
	defer rec.lock.Unlock()
	return append([]event(nil), rec.events...)
}

func TestRunners(t *testing.T) {
	t.Parallel()
	source := watch.NewFake()
	informer := cache.NewSharedIndexInformer(noWatchList{&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1alpha1.ShardList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1alpha1.Shard{*shard("root", "https://root:6443/")}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return source, nil },
	}}, &corev1alpha1.Shard{}, 0, cache.Indexers{})

	rec := &recorder{fails: map[string]int{"flaky": 2}, linger: 50 * time.Millisecond}
	runners := New(&rest.Config{Host: "https://ignored", BearerToken: "shared"}, rec.run)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	require.NoError(t, runners.Follow(ctx, informer))
	go informer.Run(ctx.Done())

	waitFor := func(want []event) {
		t.Helper()
		require.Eventually(t, func() bool { return len(rec.seen()) >= len(want) }, 5*time.Second, 5*time.Millisecond, "saw %v", rec.seen())
		require.Equal(t, want, rec.seen())
	}
	waitFor([]event{{shard: "root", host: "https://root:6443", token: "shared"}})

	// The same baseURL again: nothing happens; a second shard runs beside.
	source.Modify(shard("root", "https://root:6443"))
	source.Add(shard("shard-2", "https://two:6443"))
	waitFor([]event{{shard: "root", host: "https://root:6443", token: "shared"}, {shard: "shard-2", host: "https://two:6443", token: "shared"}})
	require.ElementsMatch(t, []string{"root", "shard-2"}, runners.Names())

	// A new baseURL: the old runner returns before the new one starts.
	source.Modify(shard("shard-2", "https://two-moved:6443"))
	waitFor([]event{
		{shard: "root", host: "https://root:6443", token: "shared"}, {shard: "shard-2", host: "https://two:6443", token: "shared"},
		{shard: "shard-2", host: "https://two:6443", returned: true}, {shard: "shard-2", host: "https://two-moved:6443", token: "shared"},
	})

	// Deleted and added again at once: still one runner at a time.
	source.Delete(shard("shard-2", "https://two-moved:6443"))
	source.Add(shard("shard-2", "https://two-moved:6443"))
	before := len(rec.seen())
	require.Eventually(t, func() bool { return len(rec.seen()) == before+2 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, []event{{shard: "shard-2", host: "https://two-moved:6443", returned: true}, {shard: "shard-2", host: "https://two-moved:6443", token: "shared"}},
		rec.seen()[before:])

	// A runner that fails is started again, and stops no other.
	source.Add(shard("flaky", "https://flaky:6443"))
	before = len(rec.seen())
	require.Eventually(t, func() bool { return len(rec.seen()) == before+3 }, 10*time.Second, 5*time.Millisecond, "after waits of 1s and 2s")
	for _, e := range rec.seen()[before:] {
		require.Equal(t, event{shard: "flaky", host: "https://flaky:6443", token: "shared"}, e, "two failures, then it runs")
	}

	// A Shard without baseURL is not run; its runner stops.
	source.Modify(shard("flaky", ""))
	require.Eventually(t, func() bool { return len(runners.Names()) == 2 }, 5*time.Second, 5*time.Millisecond)

	// A Shard at http:// is refused: no credentials sent there; the
	// others run on. One moved to http:// is stopped.
	before = len(rec.seen())
	source.Add(shard("plain", "http://plain:6443"))
	source.Modify(shard("shard-2", "http://two-moved:6443"))
	require.Eventually(t, func() bool {
		return slices.Contains(rec.seen()[before:], event{shard: "shard-2", host: "https://two-moved:6443", returned: true})
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"root"}, runners.Names())
	source.Modify(shard("shard-2", "https://two-moved:6443"))
	require.Eventually(t, func() bool { return len(runners.Names()) == 2 }, 5*time.Second, 5*time.Millisecond)
	for _, e := range rec.seen() {
		require.NotEqual(t, "plain", e.shard)
		require.NotContains(t, e.host, "http://")
	}

	// Stopping: every runner returns.
	cancel()
	done := make(chan struct{})
	go func() { runners.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the runners did not return within 5s of the context ending")
	}
	returned := map[string]bool{}
	for _, e := range rec.seen() {
		if e.returned {
			returned[e.shard+" "+e.host] = true
		}
	}
	require.Equal(t, map[string]bool{
		"root https://root:6443": true, "shard-2 https://two:6443": true, "shard-2 https://two-moved:6443": true, "flaky https://flaky:6443": true,
	}, returned)
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		baseURL, want, wantErr string
	}{
		{baseURL: "https://shard-1.example.com:6443/", want: "https://shard-1.example.com:6443"},
		{baseURL: "HTTPS://shard-1:6443", want: "HTTPS://shard-1:6443"},
		{baseURL: "https://[::1]:6443", want: "https://[::1]:6443"},
		{baseURL: "", wantErr: `no spec.baseURL in Shard "s"`},
		{baseURL: "http://shard-1:6443", wantErr: `spec.baseURL "http://shard-1:6443" of Shard "s" is not an https:// URL`},
		{baseURL: "ftp://shard-1", wantErr: "not an https:// URL"},
		{baseURL: "shard-1:6443", wantErr: "not an https:// URL"},
		{baseURL: "https://", wantErr: "not an https:// URL"},
		{baseURL: "https:///path", wantErr: "not an https:// URL"},
		{baseURL: "//shard-1:6443", wantErr: "not an https:// URL"},
		{baseURL: "https://shard\x7f:6443", wantErr: "not an https:// URL"},
	} {
		got, err := BaseURL(shard("s", tc.baseURL))
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, tc.baseURL)
			continue
		}
		require.NoError(t, err, tc.baseURL)
		require.Equal(t, tc.want, got)
	}
}

// TestDelays: the waits double from 1s to 30s, and start again from 1s
// after a try that lasted longer than 30s.
func TestDelays(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	began := clock.Now()
	delays := Delays(clock, &began)
	var waits []time.Duration
	for try := 1; try <= 9; try++ {
		began = clock.Now()
		if try == 8 {
			clock.Step(time.Minute) // a long try
		}
		wait := delays()
		waits = append(waits, wait)
		clock.Step(wait)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, time.Second, 2 * time.Second} {
		require.InEpsilon(t, want, waits[i], 0.11, "wait %d: %v", i+1, waits)
	}
}
