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
	"sync"

	"k8s.io/klog/v2"
)

// boundedPool holds at most limit slots, one per wanted item by key, each with the stop function of what runs for it
// (nil while nothing does); a slot stays while its item is wanted, a freed one goes to the first item without one.
type boundedPool[T any] struct {
	limit int
	key   func(T) string
	start func(ctx context.Context, item T) (stop func(), err error)

	lock  sync.Mutex
	slots map[string]*poolSlot[T]
}

type poolSlot[T any] struct {
	item T
	stop func()
}

func newBoundedPool[T any](limit int, key func(T) string, start func(context.Context, T) (func(), error)) *boundedPool[T] {
	return &boundedPool[T]{limit: limit, key: key, start: start, slots: map[string]*poolSlot[T]{}}
}

// allot frees the slots of items no longer wanted and gives free ones to the wanted items in order, running each new
// one's item if started; it returns the items beyond the limit and those that failed to start. The caller holds lock.
func (p *boundedPool[T]) allot(ctx context.Context, wanted []T, started bool) (denied, failed []T) {
	logger := klog.FromContext(ctx)
	wantedKeys := make(map[string]bool, len(wanted))
	for _, item := range wanted {
		wantedKeys[p.key(item)] = true
	}
	for key, slot := range p.slots {
		if !wantedKeys[key] {
			if slot.stop != nil {
				logger.V(2).Info("stopping mount object informer, no Workspace mounts its resource any more", "resource", key)
				slot.stop()
			}
			delete(p.slots, key)
		}
	}
	seen := make(map[string]bool, len(wanted))
	for _, item := range wanted {
		key := p.key(item)
		if _, found := p.slots[key]; found || seen[key] {
			continue
		}
		seen[key] = true
		if len(p.slots) >= p.limit {
			denied = append(denied, item)
			continue
		}
		slot := &poolSlot[T]{item: item}
		p.slots[key] = slot
		if started && !p.run(ctx, key, slot) {
			failed = append(failed, item)
		}
	}
	return denied, failed
}

// run starts what runs for a slot; one that cannot start gives up its slot. The caller holds lock.
func (p *boundedPool[T]) run(ctx context.Context, key string, slot *poolSlot[T]) bool {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("starting mount object informer", "resource", key)
	stop, err := p.start(ctx, slot.item)
	if err != nil {
		logger.Error(err, "cannot watch mount objects", "resource", key)
		delete(p.slots, key)
		return false
	}
	slot.stop = stop
	return true
}
