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
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// recorder is an inner handler that records the request it got.
type recorder struct {
	called  bool
	request *http.Request
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.called = true
	r.request = req
	w.WriteHeader(http.StatusTeapot)
}

// status decodes the Status an error response carries.
func status(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var s metav1.Status
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s), "body: %s", rec.Body.String())
	require.Equal(t, "Status", s.Kind)
	require.EqualValues(t, rec.Code, s.Code)
	return s
}

func TestWithClusterPath(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name string
		url  string
		// wantCode is the response code; http.StatusTeapot when the inner handler answered.
		wantCode    int
		wantPath    string
		wantQuery   string
		wantTarget  *clusterpath.Target
		wantCluster bool // a genericapirequest cluster in the context
	}{
		{name: "not prefixed", url: "/apis/workspacemounts.io/v1alpha1/workspacemounts", wantCode: http.StatusNotFound},
		{name: "root", url: "/", wantCode: http.StatusNotFound},
		{name: "another virtual workspace", url: "/services/apiexport/clusters/root/apis", wantCode: http.StatusNotFound},
		{name: "prefix without the slash", url: "/services/workspacemounts/clusters", wantCode: http.StatusNotFound},
		{name: "kcp-style cluster path", url: "/clusters/root/apis", wantCode: http.StatusNotFound},
		{name: "healthz", url: "/healthz", wantCode: http.StatusTeapot, wantPath: "/healthz"},
		{name: "livez", url: "/livez", wantCode: http.StatusTeapot, wantPath: "/livez"},
		{name: "readyz", url: "/readyz", wantCode: http.StatusTeapot, wantPath: "/readyz"},
		{name: "readyz check", url: "/readyz/workspace-cache-synced?verbose", wantCode: http.StatusTeapot, wantPath: "/readyz/workspace-cache-synced", wantQuery: "verbose"},
		{name: "healthz look-alike", url: "/healthzz", wantCode: http.StatusNotFound},
		{name: "metrics are not served here", url: "/metrics", wantCode: http.StatusNotFound},
		{name: "empty cluster", url: "/services/workspacemounts/clusters//apis", wantCode: http.StatusBadRequest},
		{name: "upper case", url: "/services/workspacemounts/clusters/Root/apis", wantCode: http.StatusBadRequest},
		{name: "parent directory", url: "/services/workspacemounts/clusters/../apis", wantCode: http.StatusBadRequest},
		{name: "percent-encoded parent directory", url: "/services/workspacemounts/clusters/%2e%2e/apis", wantCode: http.StatusBadRequest},
		{name: "trailing colon", url: "/services/workspacemounts/clusters/root:/apis", wantCode: http.StatusBadRequest},
		{
			name: "cluster name", url: "/services/workspacemounts/clusters/2x8f3kq9/apis/workspacemounts.io/v1alpha1/workspacemounts?limit=5",
			wantCode: http.StatusTeapot, wantPath: "/apis/workspacemounts.io/v1alpha1/workspacemounts", wantQuery: "limit=5",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("2x8f3kq9")}, wantCluster: true,
		},
		{
			name: "workspace path", url: "/services/workspacemounts/clusters/root:org:team/apis",
			wantCode: http.StatusTeapot, wantPath: "/apis",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("root:org:team")}, wantCluster: true,
		},
		{
			name: "wildcard", url: "/services/workspacemounts/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts?watch=true",
			wantCode: http.StatusTeapot, wantPath: "/apis/workspacemounts.io/v1alpha1/workspacemounts", wantQuery: "watch=true",
			wantTarget: &clusterpath.Target{Wildcard: true}, wantCluster: true,
		},
		{
			name: "no rest", url: "/services/workspacemounts/clusters/root",
			wantCode: http.StatusTeapot, wantPath: "/",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("root")}, wantCluster: true,
		},
		{
			name: "openapi v3", url: "/services/workspacemounts/clusters/root/openapi/v3",
			wantCode: http.StatusTeapot, wantPath: "/openapi/v3",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("root")}, wantCluster: true,
		},
		{
			name: "openapi v2 has no kcp cluster", url: "/services/workspacemounts/clusters/root/openapi/v2",
			wantCode: http.StatusTeapot, wantPath: "/openapi/v2",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("root")}, wantCluster: false,
		},
		{
			name: "encoded characters in the rest", url: "/services/workspacemounts/clusters/root/apis/a%2Fb",
			wantCode: http.StatusTeapot, wantPath: "/apis/a/b",
			wantTarget: &clusterpath.Target{Path: logicalcluster.NewPath("root")}, wantCluster: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner := &recorder{}
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, tc.url, http.NoBody)
			withClusterPath(inner).ServeHTTP(rec, req)

			require.Equal(t, tc.wantCode, rec.Code, "body: %s", rec.Body.String())
			if tc.wantCode != http.StatusTeapot {
				require.False(t, inner.called)
				s := status(t, rec)
				require.Equal(t, metav1.StatusFailure, s.Status)
				return
			}
			require.True(t, inner.called)
			got := inner.request
			require.Equal(t, tc.wantPath, got.URL.Path)
			require.Empty(t, got.URL.RawPath)
			require.Equal(t, tc.wantQuery, got.URL.RawQuery)
			target, found := clusterpath.From(got.Context())
			if tc.wantTarget == nil {
				require.False(t, found, "a health check has no target")
				require.Nil(t, genericapirequest.ClusterFrom(got.Context()))
				return
			}
			require.True(t, found)
			require.Equal(t, *tc.wantTarget, target)
			if tc.wantCluster {
				require.NotNil(t, genericapirequest.ClusterFrom(got.Context()))
			} else {
				require.Nil(t, genericapirequest.ClusterFrom(got.Context()))
			}
			// The outer request is left as it was.
			require.Equal(t, tc.url, req.URL.RequestURI())
		})
	}
}

func TestWithReadOnly(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name     string
		method   string
		info     *genericapirequest.RequestInfo
		wantCode int
	}{
		{name: "get", method: http.MethodGet, info: resourceInfo("get"), wantCode: http.StatusTeapot},
		{name: "list", method: http.MethodGet, info: resourceInfo("list"), wantCode: http.StatusTeapot},
		{name: "watch", method: http.MethodGet, info: resourceInfo("watch"), wantCode: http.StatusTeapot},
		{name: "create", method: http.MethodPost, info: resourceInfo("create"), wantCode: http.StatusMethodNotAllowed},
		{name: "update", method: http.MethodPut, info: resourceInfo("update"), wantCode: http.StatusMethodNotAllowed},
		{name: "patch", method: http.MethodPatch, info: resourceInfo("patch"), wantCode: http.StatusMethodNotAllowed},
		{name: "delete", method: http.MethodDelete, info: resourceInfo("delete"), wantCode: http.StatusMethodNotAllowed},
		{name: "deletecollection", method: http.MethodDelete, info: resourceInfo("deletecollection"), wantCode: http.StatusMethodNotAllowed},
		{name: "non-resource GET", method: http.MethodGet, info: nonResourceInfo("get"), wantCode: http.StatusTeapot},
		{name: "non-resource HEAD", method: http.MethodHead, info: nonResourceInfo("head"), wantCode: http.StatusTeapot},
		{name: "non-resource POST", method: http.MethodPost, info: nonResourceInfo("post"), wantCode: http.StatusMethodNotAllowed},
		{name: "non-resource PUT", method: http.MethodPut, info: nonResourceInfo("put"), wantCode: http.StatusMethodNotAllowed},
		{name: "non-resource DELETE", method: http.MethodDelete, info: nonResourceInfo("delete"), wantCode: http.StatusMethodNotAllowed},
		{name: "non-resource OPTIONS", method: http.MethodOptions, info: nonResourceInfo("options"), wantCode: http.StatusMethodNotAllowed},
		{name: "no request info", method: http.MethodPost, wantCode: http.StatusTeapot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner := &recorder{}
			req := httptest.NewRequestWithContext(context.Background(), tc.method, "/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody)
			if tc.info != nil {
				req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), tc.info))
			}
			rec := httptest.NewRecorder()
			withReadOnly(inner).ServeHTTP(rec, req)
			require.Equal(t, tc.wantCode, rec.Code, "body: %s", rec.Body.String())
			require.Equal(t, tc.wantCode == http.StatusTeapot, inner.called)
			if tc.wantCode == http.StatusMethodNotAllowed {
				s := status(t, rec)
				require.Equal(t, metav1.StatusReasonMethodNotAllowed, s.Reason)
				if tc.info.IsResourceRequest {
					require.Equal(t, "workspacemounts", s.Details.Kind)
					require.Equal(t, "workspacemounts.io", s.Details.Group)
				}
			}
		})
	}
}

func resourceInfo(verb string) *genericapirequest.RequestInfo {
	return &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIPrefix: "apis", APIGroup: "workspacemounts.io", APIVersion: "v1alpha1", Resource: "workspacemounts",
	}
}

func nonResourceInfo(verb string) *genericapirequest.RequestInfo {
	return &genericapirequest.RequestInfo{IsResourceRequest: false, Verb: verb, Path: "/apis"}
}

func TestWithClusterResolution(t *testing.T) {
	t.Parallel()

	workspaces := map[string]*tenancyv1alpha1.Workspace{
		"root|org":      {ObjectMeta: metav1.ObjectMeta{Name: "org"}, Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "c-org"}},
		"c-org|mounted": {ObjectMeta: metav1.ObjectMeta{Name: "mounted"}, Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{}}},
	}
	getWorkspace := func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
		if cluster == "broken" {
			return nil, errors.New("the cache is broken")
		}
		ws, found := workspaces[cluster.String()+"|"+name]
		if !found {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
		}
		return ws, nil
	}

	for _, tc := range []struct {
		name        string
		target      *clusterpath.Target
		wantCode    int
		wantCluster logicalcluster.Name
	}{
		{name: "no target (health)", wantCode: http.StatusTeapot},
		{name: "wildcard", target: &clusterpath.Target{Wildcard: true}, wantCode: http.StatusTeapot},
		{name: "cluster name", target: &clusterpath.Target{Path: logicalcluster.NewPath("c-org")}, wantCode: http.StatusTeapot, wantCluster: "c-org"},
		{name: "workspace path", target: &clusterpath.Target{Path: logicalcluster.NewPath("root:org")}, wantCode: http.StatusTeapot, wantCluster: "c-org"},
		// Passed on unresolved: the authorizer denies them as it denies a cluster the user may not see.
		{name: "unknown path", target: &clusterpath.Target{Path: logicalcluster.NewPath("root:nope")}, wantCode: http.StatusTeapot},
		{name: "mounted workspace", target: &clusterpath.Target{Path: logicalcluster.NewPath("root:org:mounted")}, wantCode: http.StatusTeapot},
		{name: "cache error", target: &clusterpath.Target{Path: logicalcluster.NewPath("broken:x")}, wantCode: http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner := &recorder{}
			req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/apis", http.NoBody)
			if tc.target != nil {
				req = req.WithContext(clusterpath.WithTarget(req.Context(), *tc.target))
			}
			rec := httptest.NewRecorder()
			withClusterResolution(inner, getWorkspace, func() bool { return true }).ServeHTTP(rec, req)
			require.Equal(t, tc.wantCode, rec.Code, "body: %s", rec.Body.String())
			if tc.wantCode != http.StatusTeapot {
				require.False(t, inner.called)
				return
			}
			target, found := clusterpath.From(inner.request.Context())
			require.Equal(t, tc.target != nil, found)
			if tc.target != nil {
				want := *tc.target
				want.Cluster = tc.wantCluster
				require.Equal(t, want, target)
			}
		})
	}
}

// TestWithClusterResolutionBeforeSync: until the LogicalCluster cache has
// synced, no cluster can be told to exist: 503.
func TestWithClusterResolutionBeforeSync(t *testing.T) {
	t.Parallel()
	inner := &recorder{}
	req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/apis", http.NoBody)
	req = req.WithContext(clusterpath.WithTarget(req.Context(), clusterpath.Target{Path: logicalcluster.NewPath("c-org")}))
	rec := httptest.NewRecorder()
	withClusterResolution(inner, nil, func() bool { return false }).ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.False(t, inner.called)
}

func TestIsHealthPath(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/healthz": true, "/livez": true, "/readyz": true, "/readyz/ping": true, "/livez/poststarthook/x": true,
		"/healthzz": false, "/": false, "/apis": false, "/services/workspacemounts/clusters/root/healthz": false, "": false,
	} {
		require.Equal(t, want, isHealthPath(path), path)
	}
}

// shardContacts is a ShardContacts of fixed answers.
type shardContacts map[string]time.Duration // negative: never answered

func (s shardContacts) Names() []string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (s shardContacts) LastContact(shard string) (time.Duration, bool) {
	since, found := s[shard]
	return since, found && since >= 0
}

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func TestStaleShards(t *testing.T) {
	t.Parallel()
	shards := shardContacts{"root": time.Second, "shard-2": 45 * time.Second, "shard-3": -1}
	var served bool
	handler := withStaleWarnings(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }), nil, shards)
	var got warnings
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody)
	handler.ServeHTTP(httptest.NewRecorder(), req.WithContext(warning.WithWarningRecorder(req.Context(), &got)))
	require.True(t, served)
	require.Equal(t, warnings{
		"shard shard-2 has not answered for 45s: its WorkspaceMounts are the last known state",
		"shard shard-3 has not answered yet: its WorkspaceMounts are the last known state",
	}, got, "a warning per shard not answering, none for root")
}
