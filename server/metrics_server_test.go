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
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetricsHandlerProfiling(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, handler http.Handler, path string) (int, string) {
		t.Helper()
		server := httptest.NewServer(handler)
		defer server.Close()
		resp, err := http.Get(server.URL + path) //nolint:noctx // a test
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	ready := func() error { return errors.New("not yet") }

	off := metricsHandler(ready, false)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		code, _ := get(t, off, path)
		require.Equal(t, http.StatusNotFound, code, "%s without --profiling", path)
	}
	code, _ := get(t, off, "/readyz")
	require.Equal(t, http.StatusInternalServerError, code, "/readyz says not ready")

	on := metricsHandler(ready, true)
	code, body := get(t, on, "/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap")
	code, body = get(t, on, "/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap profile:")
	code, _ = get(t, on, "/debug/pprof/goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	code, _ = get(t, on, "/healthz")
	require.Equal(t, http.StatusOK, code, "health is served beside the profiles")
}
