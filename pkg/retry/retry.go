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
// Package retry is the process's one way of trying again while kcp, or one
// of its shards, does not answer: waiting for kcp at start, reading a
// shard's /metrics, running a shard's work. The waits grow from 1s,
// doubling to 30s with 10% jitter, and start again from 1s after a try that
// lasted longer than that: a new failure, not the same one.
package retry

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// backoff is the waits between tries.
var backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// Until calls try until it succeeds (it returns the number of tries) or ctx
// is done (it returns ctx's error). Each failure is handed to failed with
// the try's number and the wait before the next one, for the caller to log.
func Until(ctx context.Context, try func(context.Context) error, failed func(err error, attempt int, retryIn time.Duration)) (int, error) {
	return until(ctx, clock.RealClock{}, try, failed)
}

func until(ctx context.Context, c clock.Clock, try func(context.Context) error, failed func(err error, attempt int, retryIn time.Duration)) (int, error) {
	waits := backoff
	for attempt := 1; ; attempt++ {
		began := c.Now()
		err := try(ctx)
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, ctx.Err()
		}
		if c.Since(began) > backoff.Cap {
			waits = backoff // it ran a good while: a new failure, not the same one
		}
		wait := waits.Step()
		failed(err, attempt, wait)
		timer := c.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return attempt, ctx.Err()
		case <-timer.C():
		}
	}
}
