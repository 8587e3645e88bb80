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
package tenant

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitersForgetFullBuckets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := NewLimiters[Name](10, 2, func() time.Time { return now })
	for i := range 10 * minPruneAt {
		l.Reserve(Name(fmt.Sprint("t", i)))
		now = now.Add(time.Second) // every earlier bucket is full again
	}
	require.LessOrEqual(t, l.Len(), minPruneAt, "idle keys are forgotten")

	l.Reserve("hot")
	l.Reserve("hot")
	ok, retryIn := l.Allow("hot")
	require.False(t, ok, "a spent bucket refuses")
	require.Equal(t, 100*time.Millisecond, retryIn)
	ok, _ = l.Allow("cold")
	require.True(t, ok, "another key's bucket is its own")
	now = now.Add(100 * time.Millisecond)
	ok, _ = l.Allow("hot")
	require.True(t, ok, "a refusal takes no token")
}
