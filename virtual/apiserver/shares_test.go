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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// get answers a GET of url: its code, body and warnings.
func get(t *testing.T, client *http.Client, url string) (int, string, []string) {
	t.Helper()
	code, body, header := doWithHeaders(t, client, http.MethodGet, url)
	return code, string(body), header.Values("Warning")
}

// TestServerReviewFails: a review that fails is answered 503 with a generic
// message, for an existing cluster, one the user may not see and a made-up
// one alike; kcp's error (its URL, the cluster) is not in the answer. At *
// the cluster is not visible.
func TestServerReviewFails(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(_ *testServer, _ *Options, deps *Dependencies) {
		failing := func(context.Context, logicalcluster.Name, authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			return false, errors.New(`post "https://shard-2.internal:6443/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews": dial tcp 10.0.0.7:6443: connection refused`)
		}
		exists := func(cluster logicalcluster.Name) bool { return cluster == "c1" || cluster == "c2" }
		deps.Authorizer = authorization.New(authorization.NewReviews(failing, authorization.DefaultReviewOptions(), nil), exists)
	})
	alice := ts.client(t, "alice", "team-a")
	for _, cluster := range []string{"c1", "c2", "made-up", "root:nowhere"} {
		code, body, _ := get(t, alice, clusterURL(ts, cluster, resourcePath))
		require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s", cluster, body)
		require.Contains(t, body, unavailableMessage)
		for _, detail := range []string{"shard-2", "10.0.0.7", "dial tcp", "subjectaccessreviews", "c1", "c2", "post"} {
			require.NotContains(t, body, detail, cluster)
		}
	}
	code, body, _ := get(t, alice, clusterURL(ts, "*", resourcePath))
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, `"name":"a"`, "no cluster whose review failed is visible at *")
}

// TestServerWarningsAfterAuthorization: the stale-shard warning is on the
// answers the user may read, never on a denial, so that a denial names no
// shard.
func TestServerWarningsAfterAuthorization(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(_ *testServer, _ *Options, deps *Dependencies) {
		deps.Shards = shardContacts{"root": time.Second, "shard-2": 45 * time.Second}
	})
	alice, bob := ts.client(t, "alice", "team-a"), ts.client(t, "bob")
	want := "shard shard-2 has not answered for 45s"

	code, _, warnings := get(t, alice, clusterURL(ts, "c1", resourcePath))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], want)
	code, _, warnings = get(t, bob, clusterURL(ts, "*", resourcePath))
	require.Equal(t, http.StatusOK, code, "at *: bob may read the (empty) answer")
	require.Len(t, warnings, 1)

	for _, cluster := range []string{"c1", "c2", "made-up"} {
		code, body, warnings := get(t, bob, clusterURL(ts, cluster, resourcePath))
		require.Equal(t, http.StatusForbidden, code, body)
		require.Empty(t, warnings, "a denial in %s carries no warning", cluster)
		require.NotContains(t, body, "shard-2")
	}
}

// serviceAccountToken is one token of a ServiceAccount, as kcp authenticates
// it: each token its own credential id.
func serviceAccountToken(name string, i int) user.Info {
	return &user.DefaultInfo{
		Name: "system:serviceaccount:default:" + name, UID: fmt.Sprint("uid-", i),
		Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Extra: map[string][]string{
			"authentication.kubernetes.io/cluster-name":  {"c-tenant"},
			"authentication.kubernetes.io/credential-id": {fmt.Sprint("JTI=", i)},
		},
	}
}

// TestWithUserShares: the requests in flight and the watches of one user,
// whatever token they come with (of a ServiceAccount: of any ServiceAccount
// of its workspace), are bounded by their shares, the watches
// of all by the total; over a share the answer is 429 with Retry-After, and
// the other users are not affected.
func TestWithUserShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		verb  string
		opts  ShareOptions
		limit int
	}{
		{name: "requests in flight", verb: "list", opts: ShareOptions{PerUserInFlight: 3, PerUserWatches: 100, MaxWatches: 100}, limit: 3},
		{name: "watches", verb: "watch", opts: ShareOptions{PerUserInFlight: 100, PerUserWatches: 2, MaxWatches: 100}, limit: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release, entered := make(chan struct{}), make(chan struct{}, 100)
			handler := withUserShares(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				entered <- struct{}{}
				<-release
				w.WriteHeader(http.StatusTeapot)
			}), newShares(tc.opts, nil))
			serve := func(u user.Info) *httptest.ResponseRecorder {
				ctx := genericapirequest.WithUser(t.Context(), u)
				ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: tc.verb, Resource: "workspacemounts"})
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody))
				return rec
			}
			held := make(chan int, tc.limit)
			for i := range tc.limit {
				go func() { held <- serve(serviceAccountToken("flooder", i)).Code }()
				<-entered
			}
			for i := range 5 { // more tokens, of the same ServiceAccount and of others of its workspace
				rec := serve(serviceAccountToken(fmt.Sprint("flooder-", i%2), 100+i))
				require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
				require.Equal(t, "1", rec.Header().Get("Retry-After"))
			}
			go func() { held <- serve(&user.DefaultInfo{Name: "honest"}).Code }()
			<-entered // another user is served
			close(release)
			for range tc.limit + 1 {
				require.Equal(t, http.StatusTeapot, <-held)
			}
			require.Equal(t, http.StatusTeapot, serve(serviceAccountToken("flooder", 0)).Code, "the share is given back")
		})
	}
}

// TestSharesTotalWatches: the watches of all users are bounded too.
func TestSharesTotalWatches(t *testing.T) {
	t.Parallel()
	s := newShares(ShareOptions{PerUserInFlight: 1, PerUserWatches: 2, MaxWatches: 3}, nil)
	releases := make([]func(), 0, 3)
	for i := range 3 {
		release, full := s.take(authorization.FairnessKey(&user.DefaultInfo{Name: fmt.Sprint("u", i)}, nil), true)
		require.NotNil(t, release)
		require.Empty(t, full)
		releases = append(releases, release)
	}
	release, full := s.take(authorization.FairnessKey(&user.DefaultInfo{Name: "u9"}, nil), true)
	require.Nil(t, release)
	require.Equal(t, "the server's watches", full)
	release, _ = s.take(authorization.FairnessKey(&user.DefaultInfo{Name: "u9"}, nil), false)
	require.NotNil(t, release, "requests that are not watches are not counted with watches")
	release()
	for _, release := range releases {
		release()
	}
	for _, limiter := range []*authorization.Limiter{s.watches, s.inFlight} {
		ofKey, all := limiter.Taken(authorization.FairnessKey(&user.DefaultInfo{Name: "u0"}, nil))
		require.Zero(t, ofKey)
		require.Zero(t, all)
	}
}

// TestWithUserSharesByOrg: the ServiceAccounts of an org's child workspaces
// hold one share of watches, the org's; another org's ServiceAccount, and a
// cluster whose path is not known, hold their own.
func TestWithUserSharesByOrg(t *testing.T) {
	t.Parallel()
	pathOf := func(cluster logicalcluster.Name) logicalcluster.Path {
		return map[logicalcluster.Name]logicalcluster.Path{
			"c-child-0": logicalcluster.NewPath("root:org:child-0"),
			"c-child-1": logicalcluster.NewPath("root:org:child-1"),
			"c-child-2": logicalcluster.NewPath("root:org:team:child-2"),
			"c-other":   logicalcluster.NewPath("root:other"),
		}[cluster]
	}
	release, entered := make(chan struct{}), make(chan struct{}, 10)
	handler := withUserShares(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusTeapot)
	}), newShares(ShareOptions{PerUserInFlight: 100, PerUserWatches: 2, MaxWatches: 100}, pathOf))
	watch := func(cluster string) *httptest.ResponseRecorder {
		u := &user.DefaultInfo{Name: "system:serviceaccount:default:sa", Extra: map[string][]string{"authentication.kcp.io/cluster-name": {cluster}}}
		ctx := genericapirequest.WithUser(t.Context(), u)
		ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "workspacemounts"})
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody))
		return rec
	}
	held := make(chan int, 5)
	for _, cluster := range []string{"c-child-0", "c-child-1"} {
		go func() { held <- watch(cluster).Code }()
		<-entered
	}
	rec := watch("c-child-2")
	require.Equal(t, http.StatusTooManyRequests, rec.Code, "a third child's watch is over the org's share")
	require.Contains(t, rec.Body.String(), "your watches")
	for _, cluster := range []string{"c-other", "c-unknown", "c-unknown-2"} {
		go func() { held <- watch(cluster).Code }()
		<-entered // a share of its own
	}
	close(release)
	for range 5 {
		require.Equal(t, http.StatusTeapot, <-held)
	}
}

// TestWithAuthorizationShareErrors: a review over the tenant's share of
// turns or of new subjects is answered 429 with Retry-After, a review that
// failed 503.
func TestWithAuthorizationShareErrors(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]int{
		authorization.ErrSubjectRate:                          http.StatusTooManyRequests,
		fmt.Errorf("waiting: %w", authorization.ErrUserShare): http.StatusTooManyRequests,
		authorization.ErrUnavailable:                          http.StatusServiceUnavailable,
	} {
		handler := withAuthorization(http.NotFoundHandler(), authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionDeny, "", err
		}), codecs)
		ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: "u"})
		ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "workspacemounts"})
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody))
		require.Equal(t, want, rec.Code, "%v: %s", err, rec.Body.String())
		if want == http.StatusTooManyRequests {
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
		}
	}
}
