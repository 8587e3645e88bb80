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
//
// What a request in one cluster is answered, so that no tenant can tell a
// cluster that exists from one that does not, whatever kcp does:
//
//   - allowed (kcp said so, or an answer kept says so): the resource;
//   - review failed (ErrUnavailable: kcp's error, or no answer within the
//     review timeout): an error, which the server answers 503 with a
//     generic message, the detail only in its log;
//   - not allowed (denied, no such cluster, a path that leads nowhere, a
//     cluster deleted since it was found: ErrNoSuchCluster, no failure): a
//     denial (403), except while reviews are failing (Reviews.Failing: one
//     failed in the last minute, for any user and cluster): then the same
//     error as a failed review, 503. So a tenant sees, for every name they
//     may not see, 403 while kcp answers and 503 while it does not, and the
//     made-up names with them;
//   - the user's own review turns (their tenant's: FairnessKey) stayed taken
//     for the whole review timeout, or the tenant brought new subjects over
//     its rate (ErrUserShare, ErrSubjectRate): 429, the share's answer,
//     whatever the cluster.
//
// At *, a cluster whose review fails is not visible, as one the user may
// not see: a list or watch at * tells nothing about what exists either way.
// Left: the time of a first review (a few milliseconds, once per answer's
// TTL) still tells a cluster that exists from one that does not (no review).
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

// Asker answers whether a user may verb workspaces in an existing cluster
// (Reviews): with maxAge > 0 by an answer at most that old, else by any it
// keeps; Failing tells whether its reviews are failing.
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
//     very same denial, without asking kcp; a review that fails is an error
//     (ErrUnavailable, ErrUserShare), and so is every denial while reviews
//     are failing (see the package documentation);
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

// denied is the answer to a request in one cluster that is not allowed:
// a denial, or while reviews are failing the error of a failed review, so
// that a name that does not exist is answered as one whose review failed.
func (a *Authorizer) denied(reason string) (authorizer.Decision, string, error) {
	if a.asker.Failing() {
		return authorizer.DecisionDeny, reason, fmt.Errorf("%w: a review failed in the last %s", ErrUnavailable, failingFor)
	}
	return authorizer.DecisionDeny, reason, nil
}

// Visible tells whether the user of the request may list the Workspaces, and
// so see the WorkspaceMounts, of a cluster (one holding WorkspaceMounts). With
// maxAge 0 any answer the authorizer keeps serves (what lists use: within
// its TTL, and the stale grace while kcp is slow); with maxAge > 0 only one
// asked of kcp at most maxAge ago, else kcp is asked now, without stale
// grace: an error when kcp does not answer within the review timeout.
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
