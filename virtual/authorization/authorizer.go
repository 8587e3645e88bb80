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

// Package authorization decides who sees which WorkspaceMounts by asking kcp: a user sees those of logical cluster X
// iff a SubjectAccessReview in X lets them list (list, watch) or get (get) workspaces.tenancy.kcp.io there, and at *
// the storage filters cluster by cluster with [Authorizer.Visible]. Why it answers as it does and what the reviews
// cost: docs/design/virtual-authorization.md.
package authorization

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// Asker answers whether a user may verb workspaces in an existing cluster, as [Reviews.Allowed] does.
type Asker interface {
	Allowed(ctx context.Context, u user.Info, cluster logicalcluster.Name, verb string, maxAge time.Duration) (bool, error)
	Failing() bool
}

// ClusterExists tells whether a logical cluster of this shard has the name, from a cache.
type ClusterExists func(cluster logicalcluster.Name) bool

// Authorizer is the virtual workspace's request authorizer.
type Authorizer struct {
	asker  Asker
	exists ClusterExists
}

// New returns the authorizer.
func New(asker Asker, exists ClusterExists) *Authorizer {
	return &Authorizer{asker: asker, exists: exists}
}

// servedPaths are the non-resource paths an API client needs; a trailing / also serves what is below it.
var servedPaths = []string{
	"/api", "/api/", "/apis", "/apis/", "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/version", "/version/",
	"/healthz", "/healthz/", "/livez", "/livez/", "/readyz", "/readyz/",
}

func isServedPath(path string) bool {
	for _, p := range servedPaths {
		if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// Authorize implements [authorizer.Authorizer]. A cluster that does not exist gets the very denial of one the user
// may not see, without asking kcp, and while reviews are failing both are the error of a failed review.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() {
		if (attrs.GetVerb() == "get" || attrs.GetVerb() == "head") && isServedPath(attrs.GetPath()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, "only discovery, OpenAPI, version and health are served", nil
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
	notVisible := fmt.Sprintf("%s workspaces in %s is not allowed, or %s does not exist", verb, target, target)
	if target.Cluster == "" || !a.exists(target.Cluster) {
		return a.denied(notVisible)
	}
	allowed, err := a.asker.Allowed(ctx, attrs.GetUser(), target.Cluster, verb, 0)
	if err != nil {
		return authorizer.DecisionDeny, notVisible, fmt.Errorf("asking kcp whether %s may %s workspaces in %s: %w", attrs.GetUser().GetName(), verb, target, err)
	}
	if !allowed {
		return a.denied(notVisible)
	}
	return authorizer.DecisionAllow, "", nil
}

// denied is a denial, or while reviews are failing the error of a failed review.
func (a *Authorizer) denied(reason string) (authorizer.Decision, string, error) {
	if a.asker.Failing() {
		return authorizer.DecisionDeny, reason, fmt.Errorf("%w: a review failed in the last %s", ErrUnavailable, failingFor)
	}
	return authorizer.DecisionDeny, reason, nil
}

// Visible tells whether the request's user may list the Workspaces, and so see the WorkspaceMounts, of a cluster;
// maxAge is as in [Reviews.Allowed].
func (a *Authorizer) Visible(ctx context.Context, cluster logicalcluster.Name, maxAge time.Duration) (bool, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	allowed, err := a.asker.Allowed(ctx, u, cluster, "list", maxAge)
	return allowed && err == nil, err
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
