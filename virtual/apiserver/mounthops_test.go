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

package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithMountHopsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// hops is the header's values; nil sends no header.
		hops     []string
		wantCode int // http.StatusTeapot when the inner handler answered
	}{
		{name: "no header", wantCode: http.StatusTeapot},
		{name: "first hop", hops: []string{"1"}, wantCode: http.StatusForbidden},
		{name: "zero", hops: []string{"0"}, wantCode: http.StatusForbidden},
		{name: "at the hop limit", hops: []string{"3"}, wantCode: http.StatusForbidden},
		{name: "empty value", hops: []string{""}, wantCode: http.StatusForbidden},
		{name: "not a number", hops: []string{"many"}, wantCode: http.StatusForbidden},
		{name: "twice", hops: []string{"1", "2"}, wantCode: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner := &recorder{}
			req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/services/workspacemounts/clusters/root/apis", http.NoBody)
			for _, v := range tc.hops {
				req.Header.Add("x-kcp-mount-hops", v)
			}
			rec := httptest.NewRecorder()
			withMountHopsRefused(inner).ServeHTTP(rec, req)
			require.Equal(t, tc.wantCode, rec.Code, rec.Body.String())
			require.Equal(t, tc.wantCode == http.StatusTeapot, inner.called)
			if tc.wantCode == http.StatusForbidden {
				s := status(t, rec)
				require.Equal(t, metav1.StatusReasonForbidden, s.Reason)
				require.Contains(t, s.Message, "never a mount target")
				require.Contains(t, s.Message, MountHopsHeader)
			}
		})
	}
}

// TestServerRefusesMountHops checks the filter is in the server's chain, in
// front of authentication, and leaves what comes without the header alone:
// the health endpoints answer, /metrics is not served here.
func TestServerRefusesMountHops(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	alice := ts.client(t, "alice", "team-a")
	anonymous := ts.client(t, "")
	for _, tc := range []struct {
		name     string
		client   *http.Client
		url      string
		hops     string // "" sends no header
		wantCode int
	}{
		{name: "list", client: alice, url: clusterURL(ts, "c1", resourcePath), wantCode: http.StatusOK},
		{name: "list through a mount", client: alice, url: clusterURL(ts, "c1", resourcePath), hops: "1", wantCode: http.StatusForbidden},
		{name: "no credentials through a mount", client: anonymous, url: clusterURL(ts, "c1", resourcePath), hops: "1", wantCode: http.StatusForbidden},
		{name: "no credentials", client: anonymous, url: clusterURL(ts, "c1", resourcePath), wantCode: http.StatusUnauthorized},
		{name: "healthz", client: alice, url: ts.url + "/healthz", wantCode: http.StatusOK},
		{name: "livez", client: alice, url: ts.url + "/livez", wantCode: http.StatusOK},
		{name: "readyz", client: alice, url: ts.url + "/readyz", wantCode: http.StatusOK},
		{name: "readyz through a mount", client: alice, url: ts.url + "/readyz", hops: "2", wantCode: http.StatusForbidden},
		{name: "metrics are not served here", client: alice, url: ts.url + "/metrics", wantCode: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, tc.url, http.NoBody)
			require.NoError(t, err)
			if tc.hops != "" {
				req.Header.Set(MountHopsHeader, tc.hops)
			}
			resp, err := tc.client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.wantCode, resp.StatusCode, "%s", body)
			if tc.hops != "" {
				var s metav1.Status
				require.NoError(t, json.Unmarshal(body, &s), "%s", body)
				require.Equal(t, metav1.StatusReasonForbidden, s.Reason)
			}
		})
	}
}
