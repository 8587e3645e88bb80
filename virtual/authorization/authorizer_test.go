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
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// asked is one question to a cluster's authorizer.
type asked struct {
	cluster logicalcluster.Name
	attrs   authorizer.Attributes
}

// fakeClusters is a ClusterAuthorizers that allows what allow says, and
// records every question.
type fakeClusters struct {
	lock  sync.Mutex
	asked []asked
	// allow tells the decision for a cluster, user and verb.
	allow func(cluster logicalcluster.Name, user, verb string) bool
	// authorizeErr is returned by Authorize; clustersErr by the lookup of a cluster's authorizer.
	authorizeErr error
	clustersErr  error
}

func (f *fakeClusters) get(cluster logicalcluster.Name) (authorizer.Authorizer, error) {
	if f.clustersErr != nil {
		return nil, f.clustersErr
	}
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		f.lock.Lock()
		f.asked = append(f.asked, asked{cluster: cluster, attrs: attrs})
		f.lock.Unlock()
		if f.authorizeErr != nil {
			return authorizer.DecisionNoOpinion, "", f.authorizeErr
		}
		if f.allow != nil && f.allow(cluster, attrs.GetUser().GetName(), attrs.GetVerb()) {
			return authorizer.DecisionAllow, "RBAC: allowed", nil
		}
		return authorizer.DecisionNoOpinion, "RBAC: no rule", nil
	}), nil
}

func (f *fakeClusters) questions() []asked {
	f.lock.Lock()
	defer f.lock.Unlock()
	return append([]asked{}, f.asked...)
}

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

func inCluster(cluster string) context.Context {
	return clusterpath.WithTarget(context.Background(), clusterpath.Target{Path: logicalcluster.NewPath(cluster), Cluster: logicalcluster.Name(cluster)})
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
		// authorizeErr is what the cluster authorizer fails with.
		authorizeErr error
		clustersErr  error

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
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "get"}}},
		},
		{
			name: "get, with only list allowed", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "get"}}},
		},
		{
			name: "list, allowed", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("list"), want: authorizer.DecisionAllow,
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "list"}}},
		},
		{
			name: "watch is asked as list", target: "c1", allow: aliceMayIn("list"),
			attrs: resourceAttrs("watch"), want: authorizer.DecisionAllow,
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "list"}}},
		},
		{
			name: "watch, with only watch allowed", target: "c1", allow: aliceMayIn("watch"),
			attrs: resourceAttrs("watch"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "list"}}},
		},
		{
			name: "in a cluster where alice may not", target: "c2", allow: aliceMayIn("get", "list"),
			attrs: resourceAttrs("list"), want: authorizer.DecisionDeny,
			wantAsked: []asked{{cluster: "c2", attrs: authorizer.AttributesRecord{Verb: "list"}}},
		},
		{
			name: "the cluster authorizer fails", target: "c1", allow: aliceMayIn("get"), authorizeErr: errors.New("SAR failed"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionDeny, wantErr: true,
			wantAsked: []asked{{cluster: "c1", attrs: authorizer.AttributesRecord{Verb: "get"}}},
		},
		{
			name: "no authorizer for the cluster", target: "c1", allow: aliceMayIn("get"), clustersErr: errors.New("no client"),
			attrs: resourceAttrs("get"), want: authorizer.DecisionDeny, wantErr: true,
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
			clusters := &fakeClusters{allow: tc.allow, authorizeErr: tc.authorizeErr, clustersErr: tc.clustersErr}
			decision, reason, err := New(clusters.get).Authorize(targetContext(tc.target), tc.attrs)
			require.Equal(t, tc.want, decision, "reason: %s", reason)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			if decision == authorizer.DecisionDeny && err == nil {
				require.NotEmpty(t, reason, "a denial says why")
			}

			got := clusters.questions()
			require.Len(t, got, len(tc.wantAsked), "questions to kcp")
			for i, q := range got {
				require.Equal(t, tc.wantAsked[i].cluster, q.cluster)
				require.Equal(t, tc.wantAsked[i].attrs.GetVerb(), q.attrs.GetVerb())
				// Always workspaces.tenancy.kcp.io, as the user, no name or namespace.
				require.Equal(t, authorizer.AttributesRecord{
					User: alice, Verb: q.attrs.GetVerb(), APIGroup: "tenancy.kcp.io", APIVersion: "v1alpha1",
					Resource: "workspaces", ResourceRequest: true,
				}, q.attrs)
			}
		})
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name         string
		user         user.Info // nil: none in the context
		cluster      logicalcluster.Name
		allow        func(logicalcluster.Name, string, string) bool
		authorizeErr error
		clustersErr  error
		want         bool
		wantErr      bool
		wantAsked    bool
	}{
		{name: "may list", user: alice, cluster: "c1", allow: aliceMayIn("list"), want: true, wantAsked: true},
		{name: "may only get", user: alice, cluster: "c1", allow: aliceMayIn("get"), want: false, wantAsked: true},
		{name: "other cluster", user: alice, cluster: "c2", allow: aliceMayIn("list"), want: false, wantAsked: true},
		{name: "other user", user: &user.DefaultInfo{Name: "bob"}, cluster: "c1", allow: aliceMayIn("list"), want: false, wantAsked: true},
		{name: "no user", cluster: "c1", allow: aliceMayIn("list"), want: false},
		{name: "error", user: alice, cluster: "c1", allow: aliceMayIn("list"), authorizeErr: errors.New("SAR failed"), want: false, wantErr: true, wantAsked: true},
		{name: "no authorizer", user: alice, cluster: "c1", allow: aliceMayIn("list"), clustersErr: errors.New("no client"), want: false, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clusters := &fakeClusters{allow: tc.allow, authorizeErr: tc.authorizeErr, clustersErr: tc.clustersErr}
			ctx := context.Background()
			if tc.user != nil {
				ctx = genericapirequest.WithUser(ctx, tc.user)
			}
			visible, err := New(clusters.get).Visible(ctx, tc.cluster)
			require.Equal(t, tc.want, visible)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			got := clusters.questions()
			if !tc.wantAsked {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			require.Equal(t, tc.cluster, got[0].cluster)
			require.Equal(t, "list", got[0].attrs.GetVerb())
			require.Equal(t, "workspaces", got[0].attrs.GetResource())
			require.Equal(t, "tenancy.kcp.io", got[0].attrs.GetAPIGroup())
			require.Equal(t, tc.user, got[0].attrs.GetUser())
		})
	}
}

// TestVisibleAsVisibilityFunc: Visible is what the storage filters * with.
func TestVisibleAsVisibilityFunc(t *testing.T) {
	t.Parallel()
	visible := wsmregistry.VisibilityFunc(New((&fakeClusters{}).get).Visible)
	ok, err := visible(genericapirequest.WithUser(context.Background(), alice), "c1")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestNewClusterAuthorizers: kcp is asked by a SubjectAccessReview in the
// target cluster (here a fake kcp over HTTP), and its answers are cached.
func TestNewClusterAuthorizers(t *testing.T) {
	t.Parallel()

	type review struct {
		path string
		spec authorizationv1.SubjectAccessReviewSpec
	}
	var lock sync.Mutex
	var reviews []review
	kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if req.Method != http.MethodPost || json.NewDecoder(req.Body).Decode(&sar) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		lock.Lock()
		reviews = append(reviews, review{path: req.URL.Path, spec: sar.Spec})
		lock.Unlock()
		sar.APIVersion, sar.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		sar.Status.Allowed = sar.Spec.User == "alice" && strings.HasPrefix(req.URL.Path, "/clusters/c1/")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(kcp.Close)

	client, err := kcpkubernetesclientset.NewForConfig(&rest.Config{Host: kcp.URL})
	require.NoError(t, err)
	a := New(NewClusterAuthorizers(client))

	decision, _, err := a.Authorize(inCluster("c1"), resourceAttrs("watch"))
	require.NoError(t, err)
	require.Equal(t, authorizer.DecisionAllow, decision)
	decision, _, err = a.Authorize(inCluster("c1"), resourceAttrs("list"))
	require.NoError(t, err)
	require.Equal(t, authorizer.DecisionAllow, decision)
	decision, _, err = a.Authorize(inCluster("c2"), resourceAttrs("list"))
	require.NoError(t, err)
	require.Equal(t, authorizer.DecisionDeny, decision)
	visible, err := a.Visible(genericapirequest.WithUser(context.Background(), alice), "c1")
	require.NoError(t, err)
	require.True(t, visible)

	lock.Lock()
	t.Cleanup(lock.Unlock)
	require.Len(t, reviews, 2, "the allowed list in c1 is asked once, then cached: %+v", reviews)
	require.Equal(t, "/clusters/c1/apis/authorization.k8s.io/v1/subjectaccessreviews", reviews[0].path)
	require.Equal(t, "alice", reviews[0].spec.User)
	require.Equal(t, []string{"team-a"}, reviews[0].spec.Groups)
	require.Equal(t, &authorizationv1.ResourceAttributes{Verb: "list", Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}, reviews[0].spec.ResourceAttributes)
	require.Equal(t, "/clusters/c2/apis/authorization.k8s.io/v1/subjectaccessreviews", reviews[1].path)
}
