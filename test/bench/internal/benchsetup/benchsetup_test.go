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

package benchsetup

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	t.Parallel()
	var calls, running, most atomic.Int64
	err := ForEach(context.Background(), 50, 3, func(context.Context, int) error {
		calls.Add(1)
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		running.Add(-1)
		return nil
	})
	if err != nil || calls.Load() != 50 || most.Load() > 3 {
		t.Fatalf("err %v, calls %d, most at once %d; want nil, 50, <= 3", err, calls.Load(), most.Load())
	}

	boom := errors.New("boom")
	calls.Store(0)
	err = ForEach(context.Background(), 1000, 1, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls.Load() > 7 {
		t.Fatalf("err %v after %d calls; want boom, and the loop stopped", err, calls.Load())
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(boom)
	if err := ForEach(ctx, 10, 2, func(context.Context, int) error { return nil }); !errors.Is(err, boom) {
		t.Fatalf("err %v on a done context; want its cause", err)
	}
}
