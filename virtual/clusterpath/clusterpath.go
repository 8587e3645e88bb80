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

// Package clusterpath tells which logical cluster a request to [Prefix]<c>/<rest> addresses: <c> is a logical cluster
// name, a workspace path such as root:team-a, or * for all. [Parse] checks its syntax; [Resolve] walks a path to its
// logical cluster through the Workspace cache.
package clusterpath

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// Prefix is where the virtual workspace is served.
const Prefix = "/services/workspacemounts/clusters/"

// Target is the cluster, or all clusters, a request is for.
type Target struct {
	// Path is as the request gave it: a cluster name or a workspace path. Empty for a wildcard.
	Path logicalcluster.Path
	// Cluster is the logical cluster Path resolves to, once resolved.
	Cluster logicalcluster.Name
	// Wildcard is true for /clusters/*.
	Wildcard bool
}

// String is the target as a person writes it.
func (t Target) String() string {
	if t.Wildcard {
		return "*"
	}
	return t.Path.String()
}

// Parse splits a request path into the target and the rest, which starts with /; ok is false outside [Prefix], err set
// for a cluster segment no logical cluster can have.
func Parse(urlPath string) (target Target, rest string, ok bool, err error) {
	if !strings.HasPrefix(urlPath, Prefix) {
		return Target{}, "", false, nil
	}
	segment, rest, _ := strings.Cut(strings.TrimPrefix(urlPath, Prefix), "/")
	rest = "/" + rest
	if segment == logicalcluster.Wildcard.String() {
		return Target{Wildcard: true}, rest, true, nil
	}
	path := logicalcluster.NewPath(segment)
	if segment == "" || !path.IsValid() {
		return Target{}, "", true, fmt.Errorf("%q is not a logical cluster name, a workspace path or *", segment)
	}
	return Target{Path: path}, rest, true, nil
}

// ErrNotFound is returned (wrapped) when a workspace path leads nowhere.
var ErrNotFound = errors.New("workspace not found")

// WorkspaceGetter gets a Workspace by its parent cluster and name, from a cache.
type WorkspaceGetter func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error)

// Resolve fills in the target's cluster, walking a path of more than one segment one Workspace at a time.
func Resolve(target Target, getWorkspace WorkspaceGetter) (Target, error) {
	if target.Wildcard {
		return target, nil
	}
	if name, ok := target.Path.Name(); ok {
		target.Cluster = name
		return target, nil
	}
	segments := strings.Split(target.Path.String(), ":")
	cluster := logicalcluster.Name(segments[0])
	walked := logicalcluster.NewPath(segments[0])
	for _, segment := range segments[1:] {
		walked = walked.Join(segment)
		ws, err := getWorkspace(cluster, segment)
		if apierrors.IsNotFound(err) {
			return Target{}, fmt.Errorf("%w: %s", ErrNotFound, walked)
		}
		if err != nil {
			return Target{}, err
		}
		if ws.Spec.Cluster == "" {
			return Target{}, fmt.Errorf("%w: %s has no logical cluster (it is mounted, or not scheduled yet)", ErrNotFound, walked)
		}
		cluster = logicalcluster.Name(ws.Spec.Cluster)
	}
	target.Cluster = cluster
	return target, nil
}

type contextKey struct{}

// WithTarget returns a context carrying the target.
func WithTarget(ctx context.Context, target Target) context.Context {
	return context.WithValue(ctx, contextKey{}, target)
}

// From returns the target of a request, and whether there is one.
func From(ctx context.Context) (Target, bool) {
	target, ok := ctx.Value(contextKey{}).(Target)
	return target, ok
}
