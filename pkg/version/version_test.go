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

package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAPIServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version, major, minor, treeState string
	}{
		{"v0.1.0", "0", "1", "clean"},
		{"v0.1.0-3-gabcdef0", "0", "1", "clean"},
		{"v1.12.4-3-gabcdef0-dirty", "1", "12", "dirty"},
		{"v0.1.0-dev", "0", "1", "clean"},
		{"v0.0.0-dev", "0", "0", "clean"},
		{"dev", "", "", "clean"},
	} {
		got := Info{Version: tc.version, Revision: "c0ffee", GoVersion: "go1.26.8", Platform: "linux/arm64"}.APIServer()
		require.Equal(t, tc.version, got.GitVersion)
		require.Equal(t, tc.major, got.Major, tc.version)
		require.Equal(t, tc.minor, got.Minor, tc.version)
		require.Equal(t, tc.treeState, got.GitTreeState, tc.version)
		require.Equal(t, "c0ffee", got.GitCommit)
		require.Equal(t, "go1.26.8", got.GoVersion)
		require.Equal(t, "linux/arm64", got.Platform)
	}
}

func TestModuleVersion(t *testing.T) {
	t.Parallel()
	build := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "github.com/kcp-dev/sdk", Version: "v0.32.3"},
		{Path: kcpModule, Version: "v0.32.3"},
		{Path: "k8s.io/api", Version: "v0.36.0", Replace: &debug.Module{Path: "github.com/kcp-dev/kubernetes/staging/src/k8s.io/api", Version: "v0.0.0-2026"}},
	}}
	require.Equal(t, "v0.32.3", moduleVersion(build, kcpModule))
	require.Equal(t, "v0.0.0-2026", moduleVersion(build, "k8s.io/api"))
	require.Equal(t, "unknown", moduleVersion(build, "example.com/none"))
}

// TestGet: this package's test binary does not link kcp's libraries (the
// command's test checks the version it reports).
func TestGet(t *testing.T) {
	t.Parallel()
	info := Get()
	require.Equal(t, "unknown", info.KcpVersion)
	require.Equal(t, "v0.0.0-dev", info.Version, "a build without the Makefile's -ldflags")
	require.NotEmpty(t, info.GoVersion)
	require.Contains(t, info.String(), "workspacemounts v0.0.0-dev (revision unknown, ")
}
