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
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

// installMetrics registers the plugin's metrics, the mount collector over
// the Workspace informer among them, and installs the listener serving them
// with the health endpoints from the start, so that the process is alive, and
// says why it is not ready, while it waits for kcp; nil with
// --metrics-bind-address=0.
func (s *Server) installMetrics(workspaces metrics.WorkspaceLister) *part {
	metrics.Register()
	metrics.RegisterMountCollector(workspaces)
	if s.Options.MetricsBindAddress == "0" {
		return nil
	}
	return &part{name: "metrics", start: func(ctx context.Context) error {
		return serveMetrics(ctx, s.Options.MetricsBindAddress, s.ready)
	}}
}

// serveMetrics serves /metrics, /healthz, /livez and /readyz on plain HTTP
// until ctx is done. ready says why the process is not ready yet, or nil.
func serveMetrics(ctx context.Context, address string, ready func() error) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	healthz.InstallHandler(mux, healthz.PingHealthz)
	healthz.InstallLivezHandler(mux, healthz.PingHealthz)
	healthz.InstallReadyzHandler(mux, healthz.NamedCheck("caches-synced", func(*http.Request) error { return ready() }))

	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	klog.FromContext(ctx).Info("serving metrics and health", "address", listener.Addr().String())

	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
}
