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
	"fmt"
	"os"
	"sync"
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
		if err := s.Stop(); err != nil {
			t.Errorf("stopping kcp: %v", err)
		}
	})
	return s
}

// shared is the server of SharedServer, one per test binary.
var shared struct {
	configured bool // RunWithSharedServer was called
	opts       Options

	once   sync.Once
	server *Server
	err    error
}

// RunWithSharedServer runs the tests of m, whose tests may call SharedServer to
// get one kcp server started with opts, and stops that server afterwards. It
// starts the server only if a test asks for it. Call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Exit(framework.RunWithSharedServer(m, framework.Options{}))
//	}
func RunWithSharedServer(m *testing.M, opts Options) int {
	shared.configured, shared.opts = true, opts
	code := m.Run()

	if s := shared.server; s != nil {
		if err := s.CheckRunning(); err != nil {
			fmt.Fprintf(os.Stderr, "shared kcp exited before the tests ended: %v\n", err)
			code = max(code, 1)
		} else if code != 0 {
			fmt.Fprintf(os.Stderr, "last lines of the shared kcp's log:\n%s\n", s.LogTail(40))
		}
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared kcp: %v\n", err)
		}
	}
	return code
}

// SharedServer returns the kcp server shared by the tests of this test binary,
// starting it on first use. TestMain must run the tests with
// RunWithSharedServer, which stops the server. SharedServer fails the test if
// the server did not start or is no longer running.
func SharedServer(t testing.TB) *Server {
	t.Helper()

	if !shared.configured {
		t.Fatal("framework.SharedServer needs TestMain to run the tests with framework.RunWithSharedServer")
	}
	shared.once.Do(func() {
		shared.server, shared.err = Start(context.Background(), shared.opts)
		if s := shared.server; s != nil {
			t.Logf("shared kcp at %s ready after %s (admin.kubeconfig after %s), root directory %s",
				s.BaseURL, s.ReadyAfter.Round(time.Millisecond), s.KubeconfigAfter.Round(time.Millisecond), s.RootDir)
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the shared kcp: %v", shared.err)
	}
	s := shared.server
	if err := s.CheckRunning(); err != nil {
		t.Fatalf("the shared kcp is not running: %v", err)
	}
	t.Cleanup(func() {
		if err := s.CheckRunning(); err != nil {
			t.Errorf("the shared kcp exited during the test: %v", err)
		}
	})
	return s
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
