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

package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestUntil: the waits double from 1s to 30s, start again from 1s after a
// try that lasted longer than 30s, and ctx ends the tries.
func TestUntil(t *testing.T) {
	t.Parallel()
	clock := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	failure := errors.New("kcp does not answer")
	var waits []time.Duration
	tries := 0
	done := make(chan struct{})
	var attempts int
	var err error
	go func() {
		defer close(done)
		attempts, err = until(ctx, clock, func(context.Context) error {
			tries++
			switch tries {
			case 8:
				clock.Step(time.Minute) // a long try
			case 10:
				return nil
			}
			return failure
		}, func(err error, attempt int, retryIn time.Duration) {
			if errors.Is(err, failure) && attempt == len(waits)+1 {
				waits = append(waits, retryIn)
			}
		})
	}()
	for {
		select {
		case <-done:
			require.NoError(t, err)
			require.Equal(t, 10, attempts)
			require.Len(t, waits, 9)
			for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, time.Second, 2 * time.Second} {
				require.InEpsilon(t, want, waits[i], 0.11, "wait %d: %v", i+1, waits)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			attempts, err := until(ctx, clock, func(context.Context) error { return failure }, func(error, int, time.Duration) {})
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, 1, attempts)
			return
		default:
			if clock.HasWaiters() {
				clock.Step(time.Minute)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
