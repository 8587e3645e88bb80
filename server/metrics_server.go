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
	"net/http/pprof"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

// installMetrics registers the metrics and installs the listener serving
// them with the health endpoints from the start; nil with
// --metrics-bind-address=0.
func (s *Server) installMetrics() *part {
	metrics.Register()
	metrics.RegisterMountCollector(s.Shards, s.Options.mountRule())
	if s.Options.MetricsBindAddress == "0" {
		return nil
	}
	return &part{name: "metrics", start: func(ctx context.Context) error {
		return serveMetrics(ctx, s.Options.MetricsBindAddress, metricsHandler(s.ready, s.Options.Profiling))
	}}
}

// metricsHandler serves /metrics, the health endpoints, and with profiling
// net/http/pprof; ready says why the process is not ready yet, or nil.
func metricsHandler(ready func() error, profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	healthz.InstallHandler(mux, healthz.PingHealthz)
	healthz.InstallLivezHandler(mux, healthz.PingHealthz)
	healthz.InstallReadyzHandler(mux, healthz.NamedCheck("caches-synced", func(*http.Request) error { return ready() }))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serveMetrics serves handler on plain HTTP at address until ctx is done.
func serveMetrics(ctx context.Context, address string, handler http.Handler) error {
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	// No WriteTimeout: a CPU profile or trace answers after its ?seconds=.
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
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
