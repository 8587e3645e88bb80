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
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// leadership hands one term as leader (one Lease in root, for all shards)
// to the controllers of every shard of a sharded kcp: each runs during the
// term, a shard found during it joins at once, and the term ends only once
// every one of them has stopped writing. So a shard never has two writers:
// one leader, and pkg/shards runs one runner per shard.
type leadership struct {
	lock sync.Mutex
	// term is closed when the current term ends; nil between terms.
	term <-chan struct{}
	// changed is closed, and replaced, when a term begins or ends.
	changed chan struct{}
	// running counts the controllers running in the current term.
	running sync.WaitGroup
}

func newLeadership() *leadership { return &leadership{changed: make(chan struct{})} }

func (l *leadership) set(term <-chan struct{}) {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.term = term
	close(l.changed)
	l.changed = make(chan struct{})
}

// lead is one term, until ctx is done: the shards' controllers run; it
// returns once all have stopped.
func (l *leadership) lead(ctx context.Context) error {
	l.set(ctx.Done())
	<-ctx.Done()
	l.set(nil)
	l.running.Wait()
	return nil
}

// leadershipRetry is how long a shard's controller that failed waits before
// it runs again in the same term.
const leadershipRetry = 5 * time.Second

// whileLeading runs fn during each term until ctx is done, with a context
// that ends with the term or ctx; fn failing runs it again after
// leadershipRetry, in the same term.
func (l *leadership) whileLeading(ctx context.Context, fn func(context.Context) error) {
	for ctx.Err() == nil {
		l.lock.Lock()
		term, changed := l.term, l.changed
		if term != nil && !closed(term) {
			l.running.Add(1) // lead has not begun to wait: the term goes on
		} else {
			term = nil
		}
		l.lock.Unlock()
		if term == nil {
			select {
			case <-ctx.Done():
			case <-changed:
			}
			continue
		}
		runCtx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-term:
				cancel()
			case <-runCtx.Done():
			}
		}()
		err := fn(runCtx)
		failed := err != nil && runCtx.Err() == nil
		cancel()
		l.running.Done()
		if failed {
			klog.FromContext(ctx).Error(err, "the shard's controller failed; it starts again", "retryIn", leadershipRetry)
			select {
			case <-ctx.Done():
			case <-term:
			case <-time.After(leadershipRetry):
			}
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
