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

package kcpcontact

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWrapCountsAnswers: a 2xx or 4xx is kcp answering; a 5xx or a failed
// connection is not.
func TestWrapCountsAnswers(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(server.Close)

	tracker := New()
	now := time.Unix(1000, 0)
	tracker.now = func() time.Time { return now }
	client := &http.Client{Transport: tracker.Wrap(http.DefaultTransport)}
	get := func(url string) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}
	_, ok := tracker.Since()
	require.False(t, ok, "never reached")

	status.Store(http.StatusServiceUnavailable)
	get(server.URL)
	require.True(t, tracker.LastContact().IsZero(), "a 503 is not an answer")

	status.Store(http.StatusForbidden)
	get(server.URL)
	require.Equal(t, now, tracker.LastContact())

	now = now.Add(time.Minute)
	get("http://127.0.0.1:1") // refused
	since, ok := tracker.Since()
	require.True(t, ok)
	require.Equal(t, time.Minute, since)
}

// TestRunProbesWhenNothingElseAnswers: the probe runs while kcp has not
// answered for the interval, and its answer counts.
func TestRunProbesWhenNothingElseAnswers(t *testing.T) {
	t.Parallel()
	tracker := New()
	var probes atomic.Int32
	var down atomic.Bool
	down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tracker.Run(ctx, 10*time.Millisecond, func(context.Context) error {
			probes.Add(1)
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		})
	}()
	require.Eventually(t, func() bool { return probes.Load() >= 3 }, 5*time.Second, time.Millisecond)
	require.True(t, tracker.LastContact().IsZero())
	down.Store(false)
	require.Eventually(t, func() bool { return !tracker.LastContact().IsZero() }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
}
