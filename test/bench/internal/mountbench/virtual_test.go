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

package mountbench

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

var testLayout = layout{clusters: []logicalcluster.Name{"c0", "c1"}, mounts: 3}

// item is a listed object as JSON.
func item(cluster, name, phase string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"annotations":{"kcp.io/cluster":%q,"other":"x"}},"spec":{},"status":{"phase":%q,"ready":true}}`, name, cluster, phase)
}

// listServer serves body at every path over HTTP/2, gzipped when asked for.
func listServer(t *testing.T, body string) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Accept-Encoding") != "gzip" {
			_, _ = w.Write([]byte(body))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		_, _ = gz.Write([]byte(body))
		_ = gz.Close()
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func TestFetch(t *testing.T) {
	t.Parallel()
	items := []string{
		item("c0", "mount-0", "Ready"),
		item("c1", "mount-1", "Connecting"),
		item("c0", "mount-2", "Ready"),
		item("c0", "mount-1", "Ready"),  // the wrong cluster
		item("c0", "mount-0", "Ready"),  // twice
		item("c1", "mount-3", "Ready"),  // beyond the layout
		item("c0", "bench-0", "Ready"),  // not a mount
		item("c1", "mount-x1", "Ready"), // not a mount index
	}
	list := `{"kind":"List","metadata":{"resourceVersion":"42"},"items":[` + strings.Join(items, ",") + `]}`
	rows := make([]string, 0, len(items))
	for _, i := range items {
		rows = append(rows, `{"cells":["a",1],"object":`+i+`}`)
	}
	table := `{"kind":"Table","metadata":{"resourceVersion":"43"},"columnDefinitions":[],"rows":[` + strings.Join(rows, ",") + `]}`

	for _, tc := range []struct {
		name, body, resourceVersion string
		gzip                        bool
		ready                       int
	}{
		{name: "list", body: list, resourceVersion: "42", ready: 2},
		{name: "list, gzip", body: list, resourceVersion: "42", gzip: true, ready: 2},
		{name: "table, gzip", body: table, resourceVersion: "43", gzip: true, ready: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := listServer(t, tc.body)
			c := listCase{name: tc.name, client: s.Client(), url: s.URL + "/list", accept: acceptJSON, gzip: tc.gzip, proto: http2}
			r, err := c.fetch(context.Background(), testLayout, 0)
			require.NoError(t, err)
			require.Equal(t, len(items), r.items)
			require.Equal(t, 3, r.benchItems)
			require.Equal(t, tc.ready, r.ready)
			require.Equal(t, tc.resourceVersion, r.resourceVersion)
			require.Equal(t, int64(len(tc.body)), r.bytes)
			require.Equal(t, http2, r.proto)
			if tc.gzip {
				require.Equal(t, "gzip", r.encoding)
				require.Less(t, r.wire, r.bytes)
			} else {
				require.Empty(t, r.encoding)
				require.Equal(t, r.bytes, r.wire)
			}
			require.LessOrEqual(t, r.headers, r.body)
			require.Equal(t, r.total, r.body+r.decode)
		})
	}
}

// TestFetchPages lists as kubectl does: limit, then each continue token
// until a page has none.
func TestFetchPages(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"":   `{"metadata":{"resourceVersion":"42","continue":"p2"},"items":[` + item("c0", "mount-0", "Ready") + `]}`,
		"p2": `{"metadata":{"continue":"p3"},"items":[` + item("c1", "mount-1", "Ready") + `]}`,
		"p3": `{"metadata":{},"items":[` + item("c0", "mount-2", "Connecting") + `]}`,
	}
	var asked []string
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		asked = append(asked, req.URL.RawQuery)
		if req.URL.Query().Get("limit") != "2" {
			http.Error(w, "no limit", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, pages[req.URL.Query().Get("continue")])
	}))
	t.Cleanup(s.Close)
	c := listCase{client: s.Client(), url: s.URL + "/list", accept: acceptKubectlTable, pageSize: 2}
	r, err := c.fetch(context.Background(), testLayout, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"limit=2", "continue=p2&limit=2", "continue=p3&limit=2"}, asked)
	require.Equal(t, 3, r.items)
	require.Equal(t, 3, r.benchItems)
	require.Equal(t, 2, r.ready)
	require.Equal(t, "42", r.resourceVersion)
	require.Equal(t, int64(len(pages[""])+len(pages["p2"])+len(pages["p3"])), r.bytes)
	require.Equal(t, r.total, r.body+r.decode)
}

func TestFetchError(t *testing.T) {
	t.Parallel()
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no way", http.StatusForbidden)
	}))
	t.Cleanup(s.Close)
	_, err := listCase{client: s.Client(), url: s.URL, accept: acceptJSON}.fetch(context.Background(), testLayout, 0)
	require.ErrorContains(t, err, "403 Forbidden: no way")
}

func TestWatchFor(t *testing.T) {
	t.Parallel()
	target := watchTarget{name: "mount-0", cluster: "c0", phase: mount.PhaseConnecting}
	events := []string{
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}`,
		`{"type":"MODIFIED","object":` + item("c0", "mount-0", "Ready") + `}`,
		`{"type":"MODIFIED","object":` + item("c1", "mount-0", "Connecting") + `}`,
		`{"type":"ADDED","object":` + item("c0", "mount-0", "Connecting") + `}`,
		`{"type":"MODIFIED","object":` + item("c0", "mount-0", "Connecting") + `}`,
	}
	stopped := make(chan struct{})
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(stopped)
		if r.URL.Query().Get("watch") != "true" {
			http.Error(w, "not a watch", http.StatusBadRequest)
			return
		}
		for _, e := range events {
			_, _ = w.Write([]byte(e + "\n"))
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // open until the client goes
	}))
	t.Cleanup(s.Close)

	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan watcherReport, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchFor(ctx, s.Client(), s.URL+"?watch=true", target, reports)
	}()
	require.Equal(t, watchEstablished, (<-reports).kind)
	require.Equal(t, watchReceived, (<-reports).kind)
	select {
	case <-done:
		t.Fatal("the watcher stopped reading before it was cancelled")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-done
	<-stopped
	require.Empty(t, reports, "no failure reported for a cancelled watch")
}

func TestWatchForError(t *testing.T) {
	t.Parallel()
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"type":"ERROR","object":{"kind":"Status","message":"too old resource version"}}`))
	}))
	t.Cleanup(s.Close)
	reports := make(chan watcherReport, 2)
	watchFor(context.Background(), s.Client(), s.URL, watchTarget{}, reports)
	require.Equal(t, watchEstablished, (<-reports).kind)
	r := <-reports
	require.Equal(t, watchFailed, r.kind)
	require.ErrorIs(t, r.err, errWatchEnded)
	require.ErrorContains(t, r.err, "too old resource version")
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	opts, err := parseFlags(Virtual, []string{"--workspaces", "10000", "--plugin", "/bin/true"})
	require.NoError(t, err)
	require.Equal(t, 100, opts.clusters)
	require.False(t, opts.inTree, "the virtual workspace benchmark runs kcp without its in-tree mounts controller")
	require.Equal(t, 50, opts.listIterations)
	require.Equal(t, 100, opts.watchers)
	for _, args := range [][]string{{"--in-tree=false"}, {"--mode=routing"}, {"--settle=1s"}} {
		_, err := parseFlags(Virtual, append([]string{"--plugin", "/bin/true"}, args...))
		require.Error(t, err, "%q is a flag of the controller benchmark", args)
	}

	for _, args := range []string{"--secure-port=1", "--cert-dir /x", "--bind-address=0.0.0.0", "--metrics-bind-address 0"} {
		_, err := parseFlags(Virtual, []string{"--plugin", "/bin/true", "--plugin-args", "--workspace-workers=2 " + args})
		require.ErrorContains(t, err, "--plugin-args must not set", args)
	}
	_, err = parseFlags(Virtual, []string{"--plugin", "/bin/true", "--watchers", "0"})
	require.Error(t, err)
}

func TestFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1.23ms", formatLatency(1234567*time.Nanosecond))
	require.Equal(t, "12.3ms", formatLatency(12345678*time.Nanosecond))
	require.Equal(t, "123ms", formatLatency(123456789*time.Nanosecond))
	require.Equal(t, "1.23s", formatLatency(1234567891*time.Nanosecond))
	require.Equal(t, "6.1MB", formatBytes(6_123_456))
	require.Equal(t, "636kB", formatBytes(636_400))
	require.Equal(t, "999B", formatBytes(999))
	require.Equal(t, "-", latencyPercentile([]time.Duration{time.Millisecond}, 2, 1))
	require.Equal(t, "1ms", latencyPercentile([]time.Duration{time.Millisecond}, 2, 0.5))
	require.Equal(t, 2*time.Millisecond, mean([]time.Duration{time.Millisecond, 3 * time.Millisecond}))
	require.Zero(t, mean(nil))
}

func TestNewHTTPClient(t *testing.T) {
	t.Parallel()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "%s %s %q", r.Proto, r.Header.Get("Authorization"), r.Header.Get("Accept-Encoding"))
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	cfg := &rest.Config{
		Host:            s.URL,
		BearerToken:     "secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})},
	}
	for _, proto := range []string{http2, http1} {
		client, err := newHTTPClient(cfg, proto)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL, http.NoBody)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, proto+` Bearer secret ""`, string(body), "no gzip asked for unless the caller does")
		client.CloseIdleConnections()
	}
}

func TestParseHeapAlloc(t *testing.T) {
	t.Parallel()
	heap, err := parseHeapAlloc(strings.NewReader("heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 123\n# TotalAlloc = 456\n# HeapAlloc = 234567\n# HeapSys = 999\n"))
	require.NoError(t, err)
	require.Equal(t, uint64(234567), heap)
	_, err = parseHeapAlloc(strings.NewReader("no stats"))
	require.Error(t, err)
}
