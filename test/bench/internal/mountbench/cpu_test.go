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

package mountbench

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseCPUTime: user and system time, fields 14 and 15, counted after a
// command that holds spaces and parentheses; a short line is an error.
func TestParseCPUTime(t *testing.T) {
	t.Parallel()
	stat := "42 (kcp (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 1000 10 18446744073709551615\n"
	got, err := parseCPUTime(42, []byte(stat))
	require.NoError(t, err)
	require.Equal(t, 3250*time.Millisecond, got)

	_, err = parseCPUTime(42, []byte("42 (kcp) S 1 42"))
	require.Error(t, err)

	self, err := cpuTime(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, self, time.Duration(0))
}
