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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// StartT starts a kcp server private to the test and stops it when the test
// ends. It fails the test if kcp does not become ready, and reports an error if
// kcp exits before the test ends.
func StartT(t testing.TB, opts Options) *Server {
	t.Helper()

	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting kcp: %v", err)
	}
	t.Logf("kcp at %s ready after %s (admin.kubeconfig after %s), root directory %s",
		s.BaseURL, s.ReadyAfter.Round(time.Millisecond), s.KubeconfigAfter.Round(time.Millisecond), s.RootDir)
	t.Cleanup(func() {
		if err := s.CheckRunning(); err != nil {
			t.Errorf("kcp exited before the test ended: %v", err)
		} else if t.Failed() {
			t.Logf("last lines of kcp's log:\n%s", s.LogTail(40))
		}
		ReportKCPStop(t, "kcp", s.Stop())
	})
	return s
}

// StartShardedT starts a sharded kcp private to the test (StartSharded)
// and stops it when the test ends. It fails the test if the sharded kcp
// does not become ready, and reports an error if a process of it is not
// running when the test ends; if the test failed, it logs the last lines of
// every process's log first.
func StartShardedT(t testing.TB, opts ShardedOptions) *ShardedServer {
	t.Helper()

	s, err := StartSharded(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the sharded kcp: %v", err)
	}
	t.Logf("sharded kcp ready after %s (%s), front-proxy at %s, root directory %s",
		s.ReadyAfter.Round(time.Millisecond), readyAfter(s.Processes()), s.FrontProxyURL, s.RootDir)
	t.Cleanup(func() {
		if err := s.CheckRunning(); err != nil {
			t.Errorf("the sharded kcp did not run until the test ended: %v", err)
		}
		if t.Failed() {
			t.Logf("%s", s.LogTails(40))
		}
		ReportKCPStop(t, "the sharded kcp", s.Stop())
	})
	return s
}

// readyAfter lists how long each process took to become ready, and where
// it serves.
func readyAfter(processes []*Server) string {
	parts := make([]string, 0, len(processes))
	for _, p := range processes {
		parts = append(parts, fmt.Sprintf("%s at %s after %s", p.Name(), p.BaseURL, p.ReadyAfter.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// pluginLogLines is how many lines of the plugin's log StartPluginT logs
// when the test failed.
const pluginLogLines = 40

// StartPluginT starts the plugin (StartPlugin) for a test, failing t if it
// cannot, and stops it (SIGTERM, then SIGKILL) when owner ends: t itself, or
// a parent test, so that the plugin may outlive the subtest t that starts it.
// If owner failed, it logs the last lines of the plugin's log first.
func StartPluginT(t, owner testing.TB, opts PluginOptions) *Plugin {
	t.Helper()

	p, err := StartPlugin(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the plugin %s: %v", opts.Name, err)
	}
	t.Logf("%s: pid %d, metrics %s, virtual workspace %s, log %s", p.Name, p.Pid(), p.MetricsURL, p.VirtualWorkspaceURL, p.LogPath)
	owner.Cleanup(func() {
		if owner.Failed() {
			owner.Logf("%s", LogTails{Lines: pluginLogLines, Plugins: []*Plugin{p}})
		}
		if err := p.Stop(); err != nil {
			owner.Errorf("stopping %s: %v", p.Name, err)
		}
	})
	return p
}

// ConfigT is Config that fails the test on error.
func (s *Server) ConfigT(t testing.TB, contextName string) *rest.Config {
	t.Helper()
	cfg, err := s.Config(contextName)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// BaseConfigT is BaseConfig that fails the test on error.
func (s *Server) BaseConfigT(t testing.TB, contextName string) *rest.Config {
	t.Helper()
	cfg, err := s.BaseConfig(contextName)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ReportKCPStop reports the error of stopping kcp (or a sharded kcp's
// processes): an error of the test, but for a process that had to be killed
// (ErrKilled), only logged: how fast kcp stops under load is kcp's matter,
// not the plugin's (a plugin that has to be killed fails its test).
func ReportKCPStop(t testing.TB, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
	case onlyKilled(err):
		t.Logf("stopping %s: %v", what, err)
	default:
		t.Errorf("stopping %s: %v", what, err)
	}
}

// onlyKilled tells whether err, or every error joined in it, is ErrKilled.
func onlyKilled(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyKilled(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, ErrKilled)
}
