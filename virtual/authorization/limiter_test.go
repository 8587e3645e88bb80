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

package authorization

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func limiterKey(b byte) UserKey { return UserKey{b} }

func TestLimiterTryAcquire(t *testing.T) {
	t.Parallel()
	l := NewLimiter(2, 3)
	a1, full := l.TryAcquire(limiterKey(1))
	if full != Fits {
		t.Fatalf("first turn of a: %v", full)
	}
	if _, full = l.TryAcquire(limiterKey(1)); full != Fits {
		t.Fatalf("second turn of a: %v", full)
	}
	if release, full := l.TryAcquire(limiterKey(1)); release != nil || full != KeyFull {
		t.Fatalf("third turn of a: got %v, want KeyFull", full)
	}
	if _, full = l.TryAcquire(limiterKey(2)); full != Fits {
		t.Fatalf("first turn of b: %v", full)
	}
	if release, full := l.TryAcquire(limiterKey(3)); release != nil || full != TotalFull {
		t.Fatalf("a turn of c over the total: got %v, want TotalFull", full)
	}
	a1()
	a1() // a second call gives nothing back twice
	if ofKey, all := l.Taken(limiterKey(1)); ofKey != 1 || all != 2 {
		t.Fatalf("after a release: a holds %d, all %d; want 1 and 2", ofKey, all)
	}
	if _, full = l.TryAcquire(limiterKey(3)); full != Fits {
		t.Fatalf("a turn of c after a release: %v", full)
	}
}

func TestLimiterNoTotal(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1, 0)
	for k := range byte(100) {
		if _, full := l.TryAcquire(limiterKey(k)); full != Fits {
			t.Fatalf("key %d: %v", k, full)
		}
	}
	if _, full := l.TryAcquire(limiterKey(7)); full != KeyFull {
		t.Fatalf("a second turn of one key: %v, want KeyFull", full)
	}
}

// TestLimiterForgetsKeys: a key with no turn left is not kept.
func TestLimiterForgetsKeys(t *testing.T) {
	t.Parallel()
	l := NewLimiter(3, 0)
	releases := make([]func(), 0, 50)
	for k := range byte(50) {
		release, _ := l.TryAcquire(limiterKey(k))
		releases = append(releases, release)
	}
	for _, release := range releases {
		release()
	}
	if n := len(l.taken); n != 0 {
		t.Fatalf("%d keys kept after every turn was given back", n)
	}
}

func TestLimiterAcquireWaits(t *testing.T) {
	t.Parallel()
	l := NewLimiter(1, 2)
	ctx := context.Background()
	releaseA, _, err := l.Acquire(ctx, limiterKey(1))
	if err != nil {
		t.Fatal(err)
	}
	releaseB, _, err := l.Acquire(ctx, limiterKey(2))
	if err != nil {
		t.Fatal(err)
	}

	// a waits for its own turn, c for the total; b's release is c's (a's
	// key is still full), a's release is a's.
	got := make(chan string, 2)
	go func() {
		release, _, err := l.Acquire(ctx, limiterKey(1))
		if err == nil {
			got <- "a"
			release()
		}
	}()
	waitForWaiters(t, l, 1)
	go func() {
		release, _, err := l.Acquire(ctx, limiterKey(3))
		if err == nil {
			got <- "c"
			defer release()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	waitForWaiters(t, l, 2)
	releaseB()
	if first := <-got; first != "c" {
		t.Fatalf("b's turn went to %s, want c: a's own key is full", first)
	}
	releaseA()
	if second := <-got; second != "a" {
		t.Fatalf("a's turn went to %s, want a", second)
	}
}

func TestLimiterAcquireTimesOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold UserKey
		want Bound
	}{
		{name: "the key's turns", hold: limiterKey(1), want: KeyFull},
		{name: "the total", hold: limiterKey(2), want: TotalFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLimiter(1, 1)
			release, _ := l.TryAcquire(tc.hold)
			defer release()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			got, full, err := l.Acquire(ctx, limiterKey(1))
			if got != nil || !errors.Is(err, context.DeadlineExceeded) || full != tc.want {
				t.Fatalf("Acquire: %v, %v; want DeadlineExceeded, %v", full, err, tc.want)
			}
			if l.waiters.Len() != 0 {
				t.Fatal("a waiter that gave up is still queued")
			}
		})
	}
}

// TestLimiterConcurrent takes and gives back turns from many goroutines,
// waiting and not, and checks that no bound is ever exceeded and that every
// turn is given back (run with -race).
func TestLimiterConcurrent(t *testing.T) {
	t.Parallel()
	const perKey, total, keys, workers, rounds = 2, 5, 4, 32, 200
	l := NewLimiter(perKey, total)
	var held [keys]atomic.Int32
	var all atomic.Int32
	check := func(k byte) {
		if n := held[k].Add(1); n > perKey {
			t.Errorf("key %d holds %d turns", k, n)
		}
		if n := all.Add(1); n > total {
			t.Errorf("%d turns held in all", n)
		}
		time.Sleep(time.Microsecond)
		held[k].Add(-1)
		all.Add(-1)
	}
	var wg sync.WaitGroup
	for i := range byte(workers) {
		wg.Go(func() {
			k := i % keys
			for r := range rounds {
				if r%2 == 0 {
					if release, full := l.TryAcquire(limiterKey(k)); full == Fits {
						check(k)
						release()
					}
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r%3)*time.Millisecond)
				if release, _, err := l.Acquire(ctx, limiterKey(k)); err == nil {
					check(k)
					release()
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if _, n := l.Taken(limiterKey(0)); n != 0 || len(l.taken) != 0 || l.waiters.Len() != 0 {
		t.Fatalf("after every turn was given back: %d taken, %d keys, %d waiters", n, len(l.taken), l.waiters.Len())
	}
}

func waitForWaiters(t *testing.T, l *Limiter, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.lock.Lock()
		waiting := l.waiters.Len()
		l.lock.Unlock()
		if waiting == n {
			return
		}
	}
	t.Fatalf("no %d waiters", n)
}
