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

package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeadership: the shards' controllers run only during a term, a shard
// found during one joins it, and a term ends only once all have stopped:
// no shard is written outside a term.
func TestLeadership(t *testing.T) {
	t.Parallel()
	l := newLeadership()
	var running, maxRunning atomic.Int32
	runs := map[string]*atomic.Int32{"root": {}, "shard-2": {}, "shard-3": {}}
	controller := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			runs[name].Add(1)
			if n := running.Add(1); n > maxRunning.Load() {
				maxRunning.Store(n)
			}
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond) // stopping takes a while
			running.Add(-1)
			return nil
		}
	}
	shardCtx, stopShards := context.WithCancel(t.Context())
	t.Cleanup(stopShards)
	done := make(chan struct{}, 3)
	for _, name := range []string{"root", "shard-2"} {
		go func() { l.whileLeading(shardCtx, controller(name)); done <- struct{}{} }()
	}
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, running.Load(), "no controller before a term")

	term, endTerm := context.WithCancel(t.Context())
	led := make(chan struct{})
	go func() { _ = l.lead(term); close(led) }()
	require.Eventually(t, func() bool { return running.Load() == 2 }, 5*time.Second, 5*time.Millisecond)
	go func() { l.whileLeading(shardCtx, controller("shard-3")); done <- struct{}{} }()
	require.Eventually(t, func() bool { return running.Load() == 3 }, 5*time.Second, 5*time.Millisecond, "a shard found during a term joins it")

	endTerm()
	<-led
	require.Zero(t, running.Load(), "the term ended once every controller had stopped")

	term, endTerm = context.WithCancel(t.Context())
	led = make(chan struct{})
	go func() { _ = l.lead(term); close(led) }()
	require.Eventually(t, func() bool { return running.Load() == 3 }, 5*time.Second, 5*time.Millisecond, "a new controller in the next term")
	for name, n := range runs {
		require.Equal(t, int32(2), n.Load(), name)
	}
	stopShards() // the shards go away during a term
	for range 3 {
		<-done
	}
	require.Zero(t, running.Load())
	endTerm()
	<-led
	require.Equal(t, int32(3), maxRunning.Load())
}

// TestLeadershipRetries: a shard's controller that fails runs again in the
// same term, after leadershipRetry.
func TestLeadershipRetries(t *testing.T) {
	t.Parallel()
	l := newLeadership()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() { _ = l.lead(ctx) }()
	var attempts atomic.Int32
	go l.whileLeading(ctx, func(ctx context.Context) error {
		if attempts.Add(1) == 1 {
			return context.DeadlineExceeded // any failure
		}
		<-ctx.Done()
		return nil
	})
	require.Eventually(t, func() bool { return attempts.Load() == 2 }, 2*leadershipRetry, 10*time.Millisecond)
}
