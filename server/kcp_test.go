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
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetryUntil: a failed try is tried again after a second, a success
// ends the tries, and ctx ends them too.
func TestRetryUntil(t *testing.T) {
	t.Parallel()
	failure := errors.New("kcp does not answer")
	tries := 0
	began := time.Now()
	attempts, err := retryUntil(t.Context(), func(context.Context) error {
		tries++
		if tries == 1 {
			return failure
		}
		return nil
	}, "waiting for kcp")
	require.NoError(t, err)
	require.Equal(t, 2, attempts)
	require.InDelta(t, time.Second, time.Since(began), float64(300*time.Millisecond))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	attempts, err = retryUntil(ctx, func(context.Context) error { return failure }, "waiting for kcp")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, attempts)
}
