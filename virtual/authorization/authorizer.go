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

// Package authorization decides who sees which WorkspaceMounts, delegating to
// kcp: a user sees the WorkspaceMounts of logical cluster X iff kcp says, by
// a SubjectAccessReview in X, that they may list (for list and watch) or get
// (for get) workspaces.tenancy.kcp.io there. Requests to all clusters (*) are
// allowed for authenticated users and filtered object by object with the same
// check (Visible). Decisions are cached briefly by kcp's delegated authorizer.
package authorization

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/authorization/delegated"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// How long kcp's answers are remembered.
const (
	AllowCacheTTL = time.Minute
	DenyCacheTTL  = 10 * time.Second
)

// ClusterAuthorizers returns the authorizer asking kcp about one logical cluster.
type ClusterAuthorizers func(cluster logicalcluster.Name) (authorizer.Authorizer, error)

// NewClusterAuthorizers asks kcp through client, which may create
// SubjectAccessReviews in every logical cluster.
func NewClusterAuthorizers(client kcpkubernetesclientset.ClusterInterface) ClusterAuthorizers {
	caching := delegated.NewCachingAuthorizer(client, nil, delegated.CachingOptions{
		Options: delegated.Options{AllowCacheTTL: AllowCacheTTL, DenyCacheTTL: DenyCacheTTL},
	})
	return caching.Get
}

// Authorizer is the virtual workspace's request authorizer.
type Authorizer struct {
	clusters ClusterAuthorizers
}

// New returns the authorizer.
func New(clusters ClusterAuthorizers) *Authorizer {
	return &Authorizer{clusters: clusters}
}

// Authorize implements authorizer.Authorizer:
//   - discovery, OpenAPI and version (non-resource GET and HEAD): any authenticated user;
//   - workspacemounts get, list, watch in cluster X: kcp's answer for workspaces in X;
//   - the same at *: allowed, the storage filters by Visible;
//   - anything else: denied (writes never get here: they are answered 405 before).
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() {
		if attrs.GetVerb() == "get" || attrs.GetVerb() == "head" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "only GET is served", nil
	}
	if attrs.GetAPIGroup() != wsmv1alpha1.GroupName || attrs.GetResource() != wsmv1alpha1.Resource || attrs.GetSubresource() != "" {
		return authorizer.DecisionDeny, "only workspacemounts are served", nil
	}
	verb, ok := workspaceVerb(attrs.GetVerb())
	if !ok {
		return authorizer.DecisionDeny, fmt.Sprintf("workspacemounts are read-only: %s is not allowed", attrs.GetVerb()), nil
	}
	target, ok := clusterpath.From(ctx)
	if !ok {
		return authorizer.DecisionDeny, "no logical cluster in the request", nil
	}
	if target.Wildcard {
		return authorizer.DecisionAllow, "objects are filtered per logical cluster", nil
	}
	return a.authorizeCluster(ctx, attrs.GetUser(), target.Cluster, verb)
}

// Visible tells whether the user of the request may list the Workspaces, and
// so see the WorkspaceMounts, of a cluster.
func (a *Authorizer) Visible(ctx context.Context, cluster logicalcluster.Name) (bool, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	decision, _, err := a.authorizeCluster(ctx, u, cluster, "list")
	return decision == authorizer.DecisionAllow, err
}

func (a *Authorizer) authorizeCluster(ctx context.Context, u user.Info, cluster logicalcluster.Name, verb string) (authorizer.Decision, string, error) {
	clusterAuthorizer, err := a.clusters(cluster)
	if err != nil {
		return authorizer.DecisionDeny, "", err
	}
	decision, reason, err := clusterAuthorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            verb,
		APIGroup:        tenancyv1alpha1.SchemeGroupVersion.Group,
		APIVersion:      tenancyv1alpha1.SchemeGroupVersion.Version,
		Resource:        "workspaces",
		ResourceRequest: true,
	})
	if decision != authorizer.DecisionAllow {
		return authorizer.DecisionDeny, fmt.Sprintf("%s workspaces in %s is not allowed: %s", verb, cluster, reason), err
	}
	return decision, reason, err
}

// workspaceVerb maps a WorkspaceMount verb to the Workspace verb kcp is asked about.
func workspaceVerb(verb string) (string, bool) {
	switch verb {
	case "get":
		return "get", true
	case "list", "watch":
		return "list", true
	default:
		return "", false
	}
}
