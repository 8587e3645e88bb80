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

package authorization

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// asked is one question to kcp.
type asked struct {
	cluster logicalcluster.Name
	user    user.Info
	verb    string
	maxAge  time.Duration
}

// fakeAsker allows what allow says, and records every question.
type fakeAsker struct {
	lock  sync.Mutex
	asked []asked
	// allow tells the decision for a cluster, user and verb.
	allow func(cluster logicalcluster.Name, user, verb string) bool
	// err is what Allowed fails with.
	err error
	// failing is what Failing says.
	failing bool
}

func (f *fakeAsker) Allowed(_ context.Context, u user.Info, cluster logicalcluster.Name, verb string, maxAge time.Duration) (bool, error) {
	f.lock.Lock()
	f.asked = append(f.asked, asked{cluster: cluster, user: u, verb: verb, maxAge: maxAge})
	f.lock.Unlock()
	if f.err != nil {
		return false, f.err
	}
	return f.allow != nil && f.allow(cluster, u.GetName(), verb), nil
}

func (f *fakeAsker) Failing() bool { return f.failing }

func (f *fakeAsker) questions() []asked {
	f.lock.Lock()
	defer f.lock.Unlock()
	return append([]asked{}, f.asked...)
}

// existing is the ClusterExists of a shard with the clusters c1 and c2.
func existing(cluster logicalcluster.Name) bool { return cluster == "c1" || cluster == "c2" }

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{"team-a"}}

// aliceMayIn allows alice the given verbs on workspaces in cluster c1.
func aliceMayIn(verbs ...string) func(logicalcluster.Name, string, string) bool {
	return func(cluster logicalcluster.Name, u, verb string) bool {
		if cluster != "c1" || u != "alice" {
			return false
		}
		for _, v := range verbs {
			if v == verb {
				return true
			}
		}
		return false
	}
}

func resourceAttrs(verb string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: alice, Verb: verb, APIGroup: "workspacemounts.io", APIVersion: "v1alpha1",
		Resource: "workspacemounts", Name: "a", ResourceRequest: true,
	}
}

// inCluster is the context of a request to a cluster name, or to a
// workspace path that did not resolve (one with a colon).
func inCluster(cluster string) context.Context {
	target := clusterpath.Target{Path: logicalcluster.NewPath(cluster)}
	if !strings.Contains(cluster, ":") {
		target.Cluster = logicalcluster.Name(cluster)
	}
	return clusterpath.WithTarget(context.Background(), target)
}

// targetContext is the context of a request to a cluster, to * or, for "", to none.
func targetContext(target string) context.Context {
	switch target {
	case "":
		return context.Background()
	case "*":
		return clusterpath.WithTarget(context.Background(), clusterpath.Target{Wildcard: true})
	default:
		return inCluster(target)
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()

	withAttrs := func(mutate func(*authorizer.AttributesRecord)) authorizer.AttributesRecord {
		attrs := resourceAttrs("get")
		mutate(&attrs)
		return attrs
	}

	for _, tc := range []struct {
		name string
		// target is a cluster name, * or empty for none.
		target string
		attrs  authorizer.AttributesRecord
		allow  func(logicalcluster.Name, string, string) bool
		// askErr is what asking kcp fails with.
		askErr error

		want      authorizer.Decision
		wantAsked []asked // with the cluster and verb; the rest is checked for all
		wantErr   bool
	}{
		{
			name: "non-resource GET", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/openapi/v3"},
			want:  authorizer.DecisionAllow,
		},
		{
			name:  "non-resource GET without a target",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/healthz"},
			want:  authorizer.DecisionAllow,
		},
		{
			name: "non-resource HEAD", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "head", Path: "/apis"},
			want:  authorizer.DecisionAllow,
		},
		{
			name: "profiling", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/debug/pprof/heap"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "debug flags", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/debug/flags/v"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "metrics", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/metrics"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "the index", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "discovery of the group", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/apis/workspacemounts.io/v1alpha1"},
			want:  authorizer.DecisionAllow,
		},
		{
			name: "a path that only starts like a served one", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/versions"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "non-resource POST", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "post", Path: "/apis"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "non-resource DELETE", target: "c1",
			attrs: authorizer.AttributesRecord{User: alice, Verb: "delete", Path: "/apis"},
			want:  authorizer.DecisionDeny,
		},
		{
			name: "another group", target: "c1", allow: aliceMayIn("get", "list"),
			attrs: withAttrs(func(a *authorizer.AttributesRecord) { a.APIGroup = "tenancy.kcp.io"; a.Resource = "workspaces" }),
			want:  authorizer.DecisionDeny,
		},
		{
			name: "another resource", target: "c1", allow: aliceMayIn("get", "list"),
			attrs: withAttrs(func(a *authorizer.AttributesRecord) { a.Resource = "secrets" }),
			want:  authorizer.DecisionDeny,
		},
		{
			name: "a subresource", target: "c1", allow: aliceMayIn("get", "list"),
			attrs: withAttrs(func(a *authorizer.AttributesRecord) { a.Subresource = "status" }),
			want:  authorizer.DecisionDeny,
		},
		{
			name: "get, allowed", target: "c1", allow: aliceMayIn("get"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionAllow,
			wantAsked: []asked{{cluster: "c1", verb: "get"}},
		},
		{
			name: "get, with only list allowed", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c1", verb: "get"}},
		},
		{
			name: "list, allowed", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("list"), want: authorizer.DecisionAllow,
			wantAsked: []asked{{cluster: "c1", verb: "list"}},
		},
		{
			name: "watch is asked as list", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("watch"), want: authorizer.DecisionAllow,
			wantAsked: []asked{{cluster: "c1", verb: "list"}},
		},
		{
			name: "watch, with only watch allowed", target: "c1", allow: aliceMayIn("watch"),
			attrs: resourceAttrs("watch"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c1", verb: "list"}},
		},
		{
			name: "in a cluster where alice may not", target: "c2", allow: aliceMayIn("get", "list"),
			attrs: resourceAttrs("list"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c2", verb: "list"}},
		},
		{
			name: "asking kcp fails", target: "c1", allow: aliceMayIn("get"), askErr: errors.New("SAR failed"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionDeny, wantErr: true,
			wantAsked: []asked{{cluster: "c1", verb: "get"}},
		},
		{
			name: "a cluster that does not exist is not asked about", target: "c3", allow: func(logicalcluster.Name, string, string) bool { return true },
			attrs: resourceAttrs("list"), want: authorizer.DecisionDeny,
		},
		{
			name: "a path that leads nowhere is not asked about", target: "root:nowhere", allow: func(logicalcluster.Name, string, string) bool { return true },
			attrs: resourceAttrs("list"), want: authorizer.DecisionDeny,
		},
		{name: "create", target: "c1", allow: aliceMayIn("create", "get", "list"), attrs: resourceAttrs("create"), want: authorizer.DecisionDeny},
		{name: "update", target: "c1", allow: aliceMayIn("update", "get", "list"), attrs: resourceAttrs("update"), want: authorizer.DecisionDeny},
		{name: "patch", target: "c1", allow: aliceMayIn("patch", "get", "list"), attrs: resourceAttrs("patch"), want: authorizer.DecisionDeny},
		{name: "delete", target: "c1", allow: aliceMayIn("delete", "get", "list"), attrs: resourceAttrs("delete"), want: authorizer.DecisionDeny},
		{name: "deletecollection", target: "c1", allow: aliceMayIn("deletecollection"), attrs: resourceAttrs("deletecollection"), want: authorizer.DecisionDeny},
		{name: "create at *", target: "*", attrs: resourceAttrs("create"), want: authorizer.DecisionDeny},
		{name: "get at *", target: "*", attrs: resourceAttrs("get"), want: authorizer.DecisionAllow},
		{name: "list at *", target: "*", attrs: resourceAttrs("list"), want: authorizer.DecisionAllow},
		{name: "watch at *", target: "*", attrs: resourceAttrs("watch"), want: authorizer.DecisionAllow},
		{name: "no target", allow: aliceMayIn("get", "list"), attrs: resourceAttrs("list"), want: authorizer.DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			asker := &fakeAsker{allow: tc.allow, err: tc.askErr}
			decision, reason, err := New(asker, existing).Authorize(targetContext(tc.target), tc.attrs)
			require.Equal(t, tc.want, decision, "reason: %s", reason)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			if decision == authorizer.DecisionDeny && err == nil {
				require.NotEmpty(t, reason, "a denial says why")
			}

			got := asker.questions()
			require.Len(t, got, len(tc.wantAsked), "questions to kcp")
			for i, q := range got {
				require.Equal(t, asked{cluster: tc.wantAsked[i].cluster, user: alice, verb: tc.wantAsked[i].verb}, q)
			}
		})
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name      string
		user      user.Info // nil: none in the context
		cluster   logicalcluster.Name
		maxAge    time.Duration
		allow     func(logicalcluster.Name, string, string) bool
		askErr    error
		want      bool
		wantErr   bool
		wantAsked bool
	}{
		{name: "an answer at most 30s old", user: alice, cluster: "c1", maxAge: 30 * time.Second, allow: aliceMayIn("list"), want: true, wantAsked: true},
		{name: "an answer at most 30s old fails", user: alice, cluster: "c1", maxAge: 30 * time.Second, allow: aliceMayIn("list"), askErr: ErrUnavailable, want: false, wantErr: true, wantAsked: true},
		{name: "may list", user: alice, cluster: "c1", allow: aliceMayIn("list"), want: true, wantAsked: true},
		{name: "may only get", user: alice, cluster: "c1", allow: aliceMayIn("get"), want: false, wantAsked: true},
		{name: "other cluster", user: alice, cluster: "c2", allow: aliceMayIn("list"), want: false, wantAsked: true},
		{name: "other user", user: &user.DefaultInfo{Name: "bob"}, cluster: "c1", allow: aliceMayIn("list"), want: false, wantAsked: true},
		{name: "no user", cluster: "c1", allow: aliceMayIn("list"), want: false},
		{name: "error", user: alice, cluster: "c1", allow: aliceMayIn("list"), askErr: errors.New("SAR failed"), want: false, wantErr: true, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			asker := &fakeAsker{allow: tc.allow, err: tc.askErr}
			ctx := context.Background()
			if tc.user != nil {
				ctx = genericapirequest.WithUser(ctx, tc.user)
			}
			visible, err := New(asker, existing).Visible(ctx, tc.cluster, tc.maxAge)
			require.Equal(t, tc.want, visible)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			got := asker.questions()
			if !tc.wantAsked {
				require.Empty(t, got)
				return
			}
			require.Equal(t, []asked{{cluster: tc.cluster, user: tc.user, verb: "list", maxAge: tc.maxAge}}, got)
		})
	}
}

// TestVisibleAsVisibilityFunc: Visible, with any answer kept (maxAge 0), is
// what the storage filters * with.
func TestVisibleAsVisibilityFunc(t *testing.T) {
	t.Parallel()
	a := New(&fakeAsker{}, existing)
	visible := wsmregistry.VisibilityFunc(a.Visible)
	ok, err := visible(genericapirequest.WithUser(context.Background(), alice), "c1", 0)
	require.NoError(t, err)
	require.False(t, ok)
}

// TestAuthorizeWhileReviewsFail: while reviews are failing, every request
// in one cluster that is not allowed (denied, made up, a path that leads
// nowhere) fails as a failed review does, so that none tells a cluster that
// exists from one that does not; what is allowed stays allowed, and * is
// filtered cluster by cluster as always.
func TestAuthorizeWhileReviewsFail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, target string
		askErr       error
		failing      bool
		want         authorizer.Decision
		wantErr      error
	}{
		{name: "denied", target: "c2", want: authorizer.DecisionDeny},
		{name: "made up", target: "c3", want: authorizer.DecisionDeny},
		{name: "denied, reviews failing", target: "c2", failing: true, want: authorizer.DecisionDeny, wantErr: ErrUnavailable},
		{name: "made up, reviews failing", target: "c3", failing: true, want: authorizer.DecisionDeny, wantErr: ErrUnavailable},
		{name: "nowhere, reviews failing", target: "root:nowhere", failing: true, want: authorizer.DecisionDeny, wantErr: ErrUnavailable},
		{name: "allowed, reviews failing", target: "c1", failing: true, want: authorizer.DecisionAllow},
		{name: "at *, reviews failing", target: "*", failing: true, want: authorizer.DecisionAllow},
		{name: "review failed", target: "c1", askErr: fmt.Errorf("%w: dial tcp: connection refused", ErrUnavailable), want: authorizer.DecisionDeny, wantErr: ErrUnavailable},
		{name: "over the user's share", target: "c1", askErr: fmt.Errorf("%w: waited", ErrUserShare), want: authorizer.DecisionDeny, wantErr: ErrUserShare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := New(&fakeAsker{allow: aliceMayIn("list"), err: tc.askErr, failing: tc.failing}, existing)
			decision, reason, err := a.Authorize(targetContext(tc.target), resourceAttrs("list"))
			require.Equal(t, tc.want, decision)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, fmt.Sprintf("list workspaces in %s is not allowed, or %s does not exist", tc.target, tc.target), reason)
		})
	}
}

// TestNotFoundIsForbidden: a tenant cannot tell a cluster or path that does
// not exist from one they may not see.
func TestNotFoundIsForbidden(t *testing.T) {
	t.Parallel()
	a := New(&fakeAsker{allow: aliceMayIn("list")}, existing)
	reasonFor := func(target string) string {
		decision, reason, err := a.Authorize(inCluster(target), resourceAttrs("list"))
		require.NoError(t, err)
		require.Equal(t, authorizer.DecisionDeny, decision)
		return strings.ReplaceAll(reason, target, "<target>")
	}
	forbidden := reasonFor("c2")
	require.Equal(t, forbidden, reasonFor("c3"), "a cluster that does not exist")
	require.Equal(t, forbidden, reasonFor("root:nowhere"), "a path that leads nowhere")
}
