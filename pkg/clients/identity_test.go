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

package clients

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"
)

func TestWithIdentity(t *testing.T) {
	t.Parallel()
	identities := map[string]string{"tenancy.kcp.io": "abc"}
	for _, tc := range []struct {
		path, want string
	}{
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces", "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:abc"},
		{"/base/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces", "/base/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:abc"},
		// Already named, one cluster, another group, discovery: untouched.
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:xyz", "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:xyz"},
		{"/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/ws", "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/ws"},
		{"/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings", "/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings"},
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1", "/clusters/*/apis/tenancy.kcp.io/v1alpha1"},
	} {
		got, changed := withIdentity(tc.path, identities)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.path != tc.want, changed)
	}
}

// TestNewConfigWithWildcardIdentities: a client built before the identity
// is known sends nothing across all clusters until resolve has read it, and
// names it after.
func TestNewConfigWithWildcardIdentities(t *testing.T) {
	t.Parallel()
	var exportAnswers atomic.Int32
	var paths []string
	var mu sync.Mutex
	kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports/tenancy.kcp.io":
			if exportAnswers.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`))
				return
			}
			_, _ = w.Write([]byte(`{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"tenancy.kcp.io"},"status":{"identityHash":"abc"}}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		}
	}))
	t.Cleanup(kcp.Close)

	cfg, resolve := NewConfigWithWildcardIdentities(&rest.Config{Host: kcp.URL}, &rest.Config{Host: kcp.URL}, map[string]string{"tenancy.kcp.io": "tenancy.kcp.io"})
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	get := func(path string) error {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, kcp.URL+path, http.NoBody)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	const workspaces = "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces"
	require.ErrorContains(t, get(workspaces), "the identity of APIExport tenancy.kcp.io in root is not known yet")
	require.NoError(t, get("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces"), "one cluster needs no identity")
	require.Error(t, resolve(t.Context()), "kcp answered 503")
	require.ErrorContains(t, get(workspaces), "not known yet")
	require.NoError(t, resolve(t.Context()))
	require.NoError(t, get(workspaces))

	mu.Lock()
	got := paths
	mu.Unlock()
	require.Equal(t, []string{
		"/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
		"/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports/tenancy.kcp.io",
		"/clusters/root/apis/apis.kcp.io/v1alpha1/apiexports/tenancy.kcp.io",
		workspaces + ":abc",
	}, got)
}
