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
	"math"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// contactProbeInterval is how long kcp may go without answering before a
// probe asks it (kcpcontact).
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

// waitForKCP resolves the identities the informers need, retrying with
// backoff (1s doubling to 30s) while kcp does not answer or refuses, until
// ctx is done.
func (s *Server) waitForKCP(ctx context.Context) error {
	attempts, err := retryUntilDone(ctx, "waiting for kcp: cannot list Workspaces across clusters yet", s.KCPReady, "server", s.ClientConfig.Host)
	if err == nil && attempts > 1 {
		klog.FromContext(ctx).Info("kcp answered, starting", "attempts", attempts)
	}
	return err
}

// retryUntilDone calls try until it succeeds (the attempts it took) or ctx
// is done (the error), with backoff from 1s to 30s, logging each failure
// with message and keysAndValues.
func retryUntilDone(ctx context.Context, message string, try func(context.Context) error, keysAndValues ...interface{}) (int, error) {
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	for attempt := 1; ; attempt++ {
		err := try(ctx)
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, ctx.Err()
		}
		delay := backoff.Step()
		klog.FromContext(ctx).Error(err, message+", retrying", append(keysAndValues, "attempt", attempt, "retryIn", delay.Round(100*time.Millisecond))...)
		select {
		case <-ctx.Done():
			return attempt, ctx.Err()
		case <-time.After(delay):
		}
	}
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
