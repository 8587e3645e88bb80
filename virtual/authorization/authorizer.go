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
// allowed for authenticated users and filtered cluster by cluster with the
// same check (Visible).
//
// Every tenant may be hostile, so nothing a request names creates state here:
// a cluster that is not a logical cluster of the shard is denied before any
// review, with the same answer as one the user may not see; answers are kept
// in one bounded cache (Reviews) per (user hash, cluster, verb); and only
// the few non-resource paths an API client needs are served.
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

// Asker answers whether a user may verb workspaces in an existing cluster.
type Asker interface {
	Allowed(ctx context.Context, u user.Info, cluster logicalcluster.Name, verb string) (bool, error)
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

// servedPaths are the non-resource paths a client of this API needs
// (discovery, OpenAPI, version, health); a trailing / also serves what is
// below it. Everything else (profiling, metrics, flags, the index) is denied.
var servedPaths = []string{
	"/api", "/api/", "/apis", "/apis/", "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/version", "/version/",
	"/healthz", "/healthz/", "/livez", "/livez/", "/readyz", "/readyz/",
}

// isServedPath tells whether a non-resource path is one the virtual workspace serves.
func isServedPath(path string) bool {
	for _, p := range servedPaths {
		if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// Authorize implements authorizer.Authorizer:
//   - discovery, OpenAPI, version and health (non-resource GET and HEAD on
//     isServedPath): any authenticated user; every other non-resource request: denied;
//   - workspacemounts get, list, watch in cluster X: kcp's answer for workspaces
//     in X; a path that leads nowhere or a cluster that does not exist gets the
//     very same denial, without asking kcp;
//   - the same at *: allowed, the storage filters by Visible;
//   - anything else: denied (writes never get here: they are answered 405 before).
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
		return authorizer.DecisionDeny, notVisible, nil
	}
	allowed, err := a.asker.Allowed(ctx, attrs.GetUser(), target.Cluster, verb)
	if err != nil {
		return authorizer.DecisionDeny, notVisible, fmt.Errorf("asking kcp whether %s may %s workspaces in %s: %w", attrs.GetUser().GetName(), verb, target, err)
	}
	if !allowed {
		return authorizer.DecisionDeny, notVisible, nil
	}
	return authorizer.DecisionAllow, "", nil
}

// Visible tells whether the user of the request may list the Workspaces, and
// so see the WorkspaceMounts, of a cluster (one holding WorkspaceMounts).
// maxAge is how old an answer may be (0: any the authorizer keeps); it is
// the storage's VisibilityFunc.
func (a *Authorizer) Visible(ctx context.Context, cluster logicalcluster.Name, _ time.Duration) (bool, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	allowed, err := a.asker.Allowed(ctx, u, cluster, "list")
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
