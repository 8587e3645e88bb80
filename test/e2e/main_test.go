//go:build e2e

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

// Package e2e runs workspacemounts against a real kcp (v0.28.1, built by the
// Makefile into bin/kcp): one kcp and one controller, started in TestMain and
// shared by the tests, which keep to workspaces of their own.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/workspacemounts/workspacemounts/cmd/workspacemounts/app"
	"github.com/workspacemounts/workspacemounts/server"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

var (
	// kcp is the shared kcp server, with kcp's own in-tree mounts controller on
	// (--feature-gates=WorkspaceMounts=true), as a mounts user runs it, and its
	// mini front-proxy forwarding /services/workspacemounts to the plugin.
	kcp *framework.Server
	// virtualWorkspaceURL is the plugin's own HTTPS listener.
	virtualWorkspaceURL string
	// virtualWorkspaceCertDir holds its self-signed serving pair.
	virtualWorkspaceCertDir string
	// pluginMetricsURL is the in-process plugin's metrics listener
	// (http://127.0.0.1:<port>; /metrics under it).
	pluginMetricsURL string
)

// mountHeartbeatTimeout is the in-process plugin's --mount-heartbeat-timeout,
// its one flag that is not a default, short for TestMountHeartbeatExpires:
// heartbeats are opt-in, so it changes nothing for a mount object without
// one, which is every other test's. (A plugin process of that test's own
// would need a kcp of its own: two controllers on one kcp write each other's
// Workspaces.)
const mountHeartbeatTimeout = 6 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	vwPort, err := framework.FreePort(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "workspacemounts-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	virtualWorkspaceURL = fmt.Sprintf("https://127.0.0.1:%d", vwPort)
	virtualWorkspaceCertDir = dir

	began := time.Now()
	s, err := framework.Start(ctx, framework.Options{
		FeatureGates:      "WorkspaceMounts=true",
		BatteriesIncluded: "workspace-types,admin,user",
		ServiceMappings:   []framework.ServiceMapping{framework.PluginServiceMapping(vwPort)},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kcp: %v\n", err)
		return 1
	}
	kcp = s
	fmt.Fprintf(os.Stderr, "kcp at %s ready after %s\n", s.BaseURL, time.Since(began).Round(time.Millisecond))
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping kcp: %v\n", err)
		}
	}()

	// The controller runs in this process, so the race detector watches it.
	options := server.NewOptions()
	options.Kubeconfig = s.KubeconfigPath
	options.Context = "shard-base"
	options.MountHeartbeatTimeout = mountHeartbeatTimeout
	metricsPort, err := framework.FreePort(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	options.MetricsBindAddress = fmt.Sprintf("127.0.0.1:%d", metricsPort)
	pluginMetricsURL = "http://" + options.MetricsBindAddress
	options.VirtualWorkspace.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	options.VirtualWorkspace.SecureServing.BindPort = vwPort
	options.VirtualWorkspace.SecureServing.ServerCert.CertDirectory = dir
	controllerDone := make(chan error, 1)
	controllerCtx, stopController := context.WithCancel(ctx)
	go func() { controllerDone <- app.Run(controllerCtx, options) }()

	code := m.Run()

	if err := stopURLEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "the kcp and the plugin of the URL contract tests: %v\n", err)
		code = max(code, 1)
	}

	stopController()
	select {
	case err := <-controllerDone:
		if err != nil {
			fmt.Fprintf(os.Stderr, "the controller failed: %v\n", err)
			code = max(code, 1)
		}
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "the controller did not stop within 30s of its context ending")
		code = max(code, 1)
	}
	if err := s.CheckRunning(); err != nil {
		fmt.Fprintf(os.Stderr, "kcp exited before the tests ended: %v\n", err)
		code = max(code, 1)
	} else if code != 0 {
		fmt.Fprintf(os.Stderr, "last lines of kcp's log:\n%s\n", s.LogTail(60))
	}
	return code
}
