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

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
)

// leadership hands each term as leader to the controllers of every shard,
// and ends it only once every one of them has stopped writing.
type leadership struct {
	lock    sync.Mutex
	term    <-chan struct{} // closed when the term ends; nil between terms
	changed chan struct{}   // closed, and replaced, when a term begins or ends
	running sync.WaitGroup  // the controllers of the current term
}

func newLeadership() *leadership { return &leadership{changed: make(chan struct{})} }

func (l *leadership) set(term <-chan struct{}) {
	l.lock.Lock()
	defer l.lock.Unlock()
	l.term = term
	close(l.changed)
	l.changed = make(chan struct{})
}

// lead is one term, until ctx is done; it returns once every controller stopped.
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

// whileLeading runs fn during each term until ctx is done, again after
// [leadershipRetry] when it fails within a term.
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

// installController installs the leader election whose terms the shards'
// controllers run in; without --leader-elect, one term lasts as long as the
// process.
func (s *Server) installController() part {
	return part{
		name:     workspacemounts.ControllerName,
		afterKCP: true,
		start: func(ctx context.Context) error {
			if s.Options.LeaderElection.Enabled {
				return runAsLeader(ctx, &s.Options.LeaderElection, s.Options.leaderFacts(), s.LeaseClusterClient, s.fence, s.leadership.lead)
			}
			return s.leadership.lead(ctx)
		},
	}
}
