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

package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"
)

// fakePlugin writes a shell script standing in for the workspacemounts
// binary: it logs its arguments and a few lines, then runs script.
func fakePlugin(t *testing.T, script string) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "workspacemounts")
	require.NoError(t, os.WriteFile(binary, []byte("#!/bin/sh\necho \"args: $*\"\necho line2\necho line3\n"+script+"\n"), 0o700))
	return binary
}

func TestPluginSignalAndLogs(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	p := StartPluginT(t, t, PluginOptions{Binary: fakePlugin(t, "exec sleep 60"), Name: "replica-a", Kubeconfig: "admin.kubeconfig", WorkDir: dir, ExtraArgs: []string{"--extra"}})
	require.Equal(t, "replica-a", p.Name)
	require.Equal(t, filepath.Join(dir, "workspacemounts.log"), p.LogPath)
	require.Equal(t, filepath.Join(dir, "certificates", "workspacemounts.crt"), p.CAFile)
	require.False(t, p.Started.IsZero())
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		return p.LogTail(1) == "line3", fmt.Sprintf("last line %q", p.LogTail(1))
	}, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, p.LogTail(3), "--context shard-base")
	require.Contains(t, p.LogTail(3), "--extra")
	require.NoError(t, p.CheckRunning())
	require.Equal(t, -1, p.ExitCode(), "running")
	require.Contains(t, LogTails{Lines: 2, Plugins: []*Plugin{p}}.String(), "--- last 2 lines of replica-a (running, ")

	require.NoError(t, p.Signal(syscall.SIGKILL))
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the fake plugin did not exit after SIGKILL")
	}
	require.ErrorContains(t, p.CheckRunning(), "replica-a exited")
	require.Error(t, p.ExitErr())
	require.Equal(t, -1, p.ExitCode(), "ended by a signal")
	require.Contains(t, LogTails{Lines: 1, Plugins: []*Plugin{p}}.String(), "(replica-a exited: signal: killed, ")
	require.NoError(t, p.Signal(syscall.SIGTERM), "a process group that is gone is no error")
	require.NoError(t, p.Stop(), "Stop after the process exited")
}

func TestPluginExitCode(t *testing.T) {
	t.Parallel()

	p, err := StartPlugin(t.Context(), PluginOptions{Binary: fakePlugin(t, "exit 3"), WorkDir: t.TempDir()})
	require.NoError(t, err)
	<-p.Exited()
	require.Equal(t, 3, p.ExitCode())
	require.ErrorContains(t, p.CheckRunning(), "the plugin exited: exit status 3")
	require.NoError(t, p.Stop())
}
