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
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/shards"
)

// contactProbeInterval is how long kcp may go without answering before a
// probe asks it, see [kcpcontact.Tracker.Run].
const contactProbeInterval = 10 * time.Second

// kcpProbe is one cheap request to kcp, GET /version.
func kcpProbe(cfg *rest.Config) (func(context.Context) error, error) {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	}, nil
}

// waitForKCP reads what must be known of root before anything is watched,
// see [Config.KCPReady], until it succeeds or ctx is done.
func (s *Server) waitForKCP(ctx context.Context) error {
	attempts, err := retryUntil(ctx, s.KCPReady, "waiting for kcp: cannot list Workspaces across clusters yet", "server", s.ClientConfig.Host)
	if err == nil && attempts > 1 {
		klog.FromContext(ctx).Info("kcp answered, starting", "attempts", attempts)
	}
	return err
}

// retryUntil calls try until it succeeds or ctx is done, logging each
// failure with message, and returns the number of tries.
func retryUntil(ctx context.Context, try func(context.Context) error, message string, keysAndValues ...any) (attempts int, err error) {
	logger := klog.FromContext(ctx)
	return shards.RetryUntil(ctx, try, func(err error, attempts int, retryIn time.Duration) {
		logger.Error(err, message+", retrying", append(keysAndValues, "attempt", attempts, "retryIn", retryIn.Round(100*time.Millisecond))...)
	})
}

// baseURL strips a /clusters/<name> path from a kcp server URL: the clients
// here are cluster-aware and add it per request.
func baseURL(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return host
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	return strings.TrimSuffix(u.String(), "/")
}
