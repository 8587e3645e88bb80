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
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// frontProxyHeaders is the request-header authenticator of the front-proxy's
// headers, without the certificate check (headerrequest.New).
func frontProxyHeaders(t testing.TB) authenticator.Request {
	t.Helper()
	a, err := headerrequest.New([]string{"X-Remote-User"}, []string{"X-Remote-Uid"}, []string{"X-Remote-Group"}, []string{"X-Remote-Extra-"})
	require.NoError(t, err)
	return a
}

// TestFrontProxyGroupFilter: a user of the request headers keeps every group
// but those kcp's front-proxy drops (system:masters,
// system:kcp:logical-cluster-admin, system:kcp:initializer:*,
// system:kcp:terminator:*), in their order, and their name, UID and extras.
func TestFrontProxyGroupFilter(t *testing.T) {
	t.Parallel()
	filter := frontProxyGroupFilter{requestHeader: frontProxyHeaders(t)}
	for name, tc := range map[string]struct {
		groups []string
		want   []string
	}{
		"none":                          {groups: nil, want: nil},
		"ordinary groups":               {groups: []string{"team-a", "system:authenticated"}, want: []string{"team-a", "system:authenticated"}},
		"system:masters":                {groups: []string{"system:masters"}, want: []string{}},
		"logical-cluster-admin":         {groups: []string{"team-a", "system:kcp:logical-cluster-admin"}, want: []string{"team-a"}},
		"an initializer":                {groups: []string{"system:kcp:initializer:root:org:tenant", "team-a"}, want: []string{"team-a"}},
		"a terminator":                  {groups: []string{"team-a", "system:kcp:terminator:x", "team-b"}, want: []string{"team-a", "team-b"}},
		"every dropped one, kept order": {groups: []string{"b", "system:masters", "a", "system:kcp:logical-cluster-admin", "system:kcp:initializer:x", "c", "system:kcp:terminator:y"}, want: []string{"b", "a", "c"}},
		// Not dropped by kcp either: the external admin, the bare prefixes'
		// stems, other cases, look-alikes.
		"kcp's forwarded ones": {
			groups: []string{"system:kcp:external-logical-cluster-admin", "system:kcp:initializer", "system:kcp:terminator", "System:Masters", "system:masters ", "system:kcp:admin"},
			want:   []string{"system:kcp:external-logical-cluster-admin", "system:kcp:initializer", "system:kcp:terminator", "System:Masters", "system:masters ", "system:kcp:admin"},
		},
		"the prefixes themselves": {groups: []string{"system:kcp:initializer:", "system:kcp:terminator:"}, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "/", http.NoBody)
			require.NoError(t, err)
			req.Header.Set("X-Remote-User", "mallory")
			req.Header.Set("X-Remote-Uid", "uid-1")
			req.Header.Set("X-Remote-Extra-Scopes", "cluster:c1")
			for _, g := range tc.groups {
				req.Header.Add("X-Remote-Group", g)
			}
			resp, ok, err := filter.AuthenticateRequest(req)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "mallory", resp.User.GetName())
			require.Equal(t, "uid-1", resp.User.GetUID())
			require.Equal(t, map[string][]string{"scopes": {"cluster:c1"}}, resp.User.GetExtra())
			if len(tc.want) == 0 {
				require.Empty(t, resp.User.GetGroups())
			} else {
				require.Equal(t, tc.want, resp.User.GetGroups())
			}
		})
	}

	t.Run("no user", func(t *testing.T) {
		t.Parallel()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "/", http.NoBody)
		require.NoError(t, err)
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, ok, err := filter.AuthenticateRequest(req)
		require.NoError(t, err)
		require.False(t, ok)
		require.Nil(t, resp)
	})
}

// FuzzFrontProxyGroupFilter: whatever groups the request headers name, the
// user keeps exactly those kcp's front-proxy forwards, in their order, and
// never one it drops (by kcp's rule, written out again here).
func FuzzFrontProxyGroupFilter(f *testing.F) {
	for _, seed := range []string{
		"", "team-a", "system:masters", "system:masters\nteam-a", "system:kcp:logical-cluster-admin",
		"system:kcp:initializer:root:org\nsystem:kcp:terminator:root", "system:kcp:initializer:\nsystem:kcp:terminator",
		"System:Masters\nsystem:kcp:external-logical-cluster-admin",
	} {
		f.Add(seed)
	}
	filter := frontProxyGroupFilter{requestHeader: frontProxyHeaders(f)}
	dropped := func(g string) bool {
		return g == "system:masters" || g == "system:kcp:logical-cluster-admin" ||
			strings.HasPrefix(g, "system:kcp:initializer:") || strings.HasPrefix(g, "system:kcp:terminator:")
	}
	f.Fuzz(func(t *testing.T, lines string) {
		groups := strings.Split(lines, "\n")
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "/", http.NoBody)
		require.NoError(t, err)
		req.Header.Set("X-Remote-User", "mallory")
		for _, g := range groups {
			req.Header.Add("X-Remote-Group", g)
		}
		// What the headers carry (net/http's header values as given; the
		// request-header authenticator skips empty ones).
		sent := slices.DeleteFunc(slices.Clone(req.Header.Values("X-Remote-Group")), func(g string) bool { return g == "" })
		resp, ok, err := filter.AuthenticateRequest(req)
		require.NoError(t, err)
		require.True(t, ok)
		want := slices.DeleteFunc(slices.Clone(sent), dropped)
		got := resp.User.GetGroups()
		require.Len(t, got, len(want), "kept %q of %q", got, sent)
		for i := range want {
			require.Equal(t, want[i], got[i])
		}
		require.False(t, slices.ContainsFunc(got, dropped), "a dropped group kept: %q", got)
		require.Equal(t, got, withoutDroppedGroups(got), "the filter is idempotent")
	})
}

// TestServerFrontProxyDroppedGroups: through the server's authentication, a
// user of the front-proxy's headers in system:masters (or another group
// kcp's front-proxy drops) reaches the SubjectAccessReview without it, and
// is denied where the group would have been allowed; a user of a client
// certificate keeps the groups its certificate names.
func TestServerFrontProxyDroppedGroups(t *testing.T) {
	t.Parallel()
	frontProxy := newPKI(t)
	asked := make(chan authorizationv1.SubjectAccessReviewSpec, 100)
	ts := startServer(t, func(_ *testServer, o *Options, deps *Dependencies) {
		o.RequestHeader = frontProxy.requestHeader()
		// kcp allows system:masters everything, and nobody else anything.
		review := func(_ context.Context, _ logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			asked <- spec
			return slices.Contains(spec.Groups, "system:masters"), nil
		}
		exists := func(cluster logicalcluster.Name) bool { return cluster == "c1" }
		deps.Authorizer = authorization.New(authorization.NewReviews(review, authorization.DefaultReviewOptions(), nil), exists)
	})
	proxyCert := frontProxy.clientCert(t, "kcp-front-proxy")
	proxy := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{proxyCert}}}, Timeout: 10 * time.Second}
	// get answers the status code, and the review kcp was asked (none: the
	// answer came from the cache).
	get := func(t *testing.T, c *http.Client, groups ...string) (int, *authorizationv1.SubjectAccessReviewSpec) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "c1", resourcePath), http.NoBody)
		require.NoError(t, err)
		if c == proxy {
			req.Header.Set("X-Remote-User", "mallory")
			for _, g := range groups {
				req.Header.Add("X-Remote-Group", g)
			}
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		select {
		case spec := <-asked:
			return resp.StatusCode, &spec
		default:
			return resp.StatusCode, nil
		}
	}

	code, spec := get(t, proxy, "team-a")
	require.Equal(t, http.StatusForbidden, code)
	require.NotNil(t, spec)
	require.Equal(t, "mallory", spec.User)
	require.ElementsMatch(t, []string{"team-a", "system:authenticated"}, spec.Groups)
	for _, group := range []string{"system:masters", "system:kcp:logical-cluster-admin", "system:kcp:initializer:root:org", "system:kcp:terminator:root:org"} {
		code, spec := get(t, proxy, "team-a", group)
		require.Equal(t, http.StatusForbidden, code, group)
		require.Nil(t, spec, "with %s, mallory is the user already asked about (the same cache key): no review", group)
	}
	code, spec = get(t, ts.client(t, "root-admin", "system:masters"))
	require.Equal(t, http.StatusOK, code, "a client certificate's system:masters is kept")
	require.NotNil(t, spec)
	require.Equal(t, "root-admin", spec.User)
	require.ElementsMatch(t, []string{"system:masters", "system:authenticated"}, spec.Groups)
}
