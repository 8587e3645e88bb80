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

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	opts, err := parseFlags([]string{"--plugin-binary", "/bin/true", "--duration", "10s"})
	require.NoError(t, err)
	require.Equal(t, 100, opts.clusters)
	require.Equal(t, 10, opts.mountsPerCluster)
	require.Equal(t, 50, opts.users)
	require.Equal(t, 10*time.Second, opts.duration)

	for _, args := range [][]string{
		{"--plugin-binary", "/bin/true", "--clusters", "0"},
		{"--plugin-binary", "/bin/true", "--grants-per-user", "3", "--clusters", "2"},
		{"--plugin-binary", "/bin/true", "--plugin-args", "--secure-port=1"},
		{"--plugin-binary", "/bin/true", "extra"},
		{"--plugin-binary", "/bin/true", "--conns", "-1"},
	} {
		_, err := parseFlags(args)
		require.Error(t, err, "%v", args)
	}
}

func TestWriteTokenFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	f, err := writeTokenFile(path, 3)
	require.NoError(t, err)
	require.Len(t, f.tenants, 3)
	require.Equal(t, "tenant-02", f.tenants[2].name)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 5)
	require.Equal(t, f.honest.token+",honest,honest", lines[3])
	require.Equal(t, f.flooder, f.byName(flooderName))
	require.NotEqual(t, f.tenants[0].token, f.tenants[1].token)
}

func TestFloodNames(t *testing.T) {
	t.Parallel()
	names := floodNames(3, 2)
	require.Equal(t, []string{"x00001z", "x00002z", "x00003z", "system:" + strings.Repeat("a:", 10) + "a", "system:" + strings.Repeat("a:", 11) + "a"}, names)
}

func TestPercentileAndCodes(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, percentile(ds, 50))
	require.Equal(t, 99*time.Millisecond, percentile(ds, 99))
	require.Equal(t, time.Duration(0), percentile(nil, 50))
	require.Equal(t, "403:10 400:2 error:2", codes(map[string]int{"400": 2, "403": 10, "error": 2}))
	require.Equal(t, "-", codes(nil))
}
