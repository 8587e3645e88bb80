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

package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// WorkspaceOption changes a Workspace before CreateWorkspace creates it.
type WorkspaceOption func(*tenancyv1alpha1.Workspace)

// OnShard places the workspace on the shard of that name: its
// spec.location.selector selects the Shard labelled name=<shard>, as kcp
// labels every Shard. Without it kcp picks one of the shards at random.
func OnShard(shard string) WorkspaceOption {
	return func(ws *tenancyv1alpha1.Workspace) {
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": shard}},
		}
	}
}

// CreateWorkspace creates the workspace parent:name, waits until it is Ready
// and returns its logical cluster name (spec.cluster) and the Workspace. cfg
// must be a base config (Server.BaseConfig), e.g. of context "base".
//
// It is not for mounted workspaces (spec.mount), which get no logical cluster:
// create those directly, and only once the mount object's kind is served in
// parent, as kcp v0.28.1 crashes otherwise.
func CreateWorkspace(t testing.TB, cfg *rest.Config, parent logicalcluster.Path, name string, opts ...WorkspaceOption) (logicalcluster.Name, *tenancyv1alpha1.Workspace) {
	t.Helper()

	client := kcpClientT(t, cfg)
	workspaces := client.Cluster(parent).TenancyV1alpha1().Workspaces()

	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type: &tenancyv1alpha1.WorkspaceTypeReference{Path: RootPath.String(), Name: "universal"},
		},
	}
	for _, opt := range opts {
		opt(ws)
	}

	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	// A kcp that just became ready may not have made root's WorkspaceTypes
	// yet ("workspacetypes.tenancy.kcp.io "root:universal" not found"): the
	// creation is tried again until WaitTimeout, unless kcp finds the
	// Workspace invalid or already there.
	var refused error
	attempts := 0
	err := poll(ctx, WaitTimeout, pollInterval, func(ctx context.Context) (bool, string) {
		attempts++
		_, err := workspaces.Create(ctx, ws, metav1.CreateOptions{})
		switch {
		case err == nil, attempts > 1 && apierrors.IsAlreadyExists(err): // an earlier attempt made it
			return true, ""
		case apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err):
			refused = err
			return true, ""
		default:
			return false, err.Error()
		}
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		t.Fatalf("creating workspace %s: %v", parent.Join(name), err)
	}

	pollT(t, ctx, fmt.Sprintf("workspace %s to be Ready", parent.Join(name)), func(ctx context.Context) (bool, string) {
		ws, err = workspaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || ws.Spec.Cluster == "" {
			return false, workspaceState(ws)
		}
		return true, ""
	})
	return logicalcluster.Name(ws.Spec.Cluster), ws
}

// WaitForWorkspacePath waits until requests to the workspace path reach its
// logical cluster through cfg's server, and returns the cluster's name.
// Only a front-proxy resolves paths across shards, from an index it fills
// by watching every shard, a moment after the Workspace is Ready; before,
// and while the shard is away, it refuses the path. cfg must be a base
// config.
func WaitForWorkspacePath(t testing.TB, cfg *rest.Config, path logicalcluster.Path) logicalcluster.Name {
	t.Helper()

	client := kcpClientT(t, cfg)
	var cluster *corev1alpha1.LogicalCluster
	pollT(t, context.Background(), fmt.Sprintf("%s to be served at %s", path, cfg.Host), func(ctx context.Context) (bool, string) {
		var err error
		cluster, err = client.Cluster(path).CoreV1alpha1().LogicalClusters().Get(ctx, corev1alpha1.LogicalClusterName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := cluster.Annotations[core.LogicalClusterPathAnnotationKey]
		return got == path.String(), fmt.Sprintf("reached the logical cluster of %q", got)
	})
	return logicalcluster.From(cluster)
}

// workspaceState summarizes why a workspace is not ready.
func workspaceState(ws *tenancyv1alpha1.Workspace) string {
	state := fmt.Sprintf("phase %q, cluster %q", ws.Status.Phase, ws.Spec.Cluster)
	if len(ws.Status.Initializers) > 0 {
		state += fmt.Sprintf(", initializers %v", ws.Status.Initializers)
	}
	return state + falseConditions(ws.Status.Conditions)
}

// clusterAwareConfig returns a copy of cfg whose host has no /clusters/...
// path, as cluster-aware clients add it themselves.
func clusterAwareConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if i := strings.Index(cfg.Host, "/clusters/"); i >= 0 {
		cfg.Host = cfg.Host[:i]
	}
	return cfg
}

// CreateWorkspaceOnShard creates the workspace parent:name on shard through
// the front-proxy (CreateWorkspace with OnShard), waits until it is Ready
// and its path is served through the front-proxy (WaitForWorkspacePath),
// checks that its logical cluster is on shard, and returns the cluster's
// name and the Workspace. The parent may be on any shard.
func (s *ShardedServer) CreateWorkspaceOnShard(t testing.TB, parent logicalcluster.Path, name, shard string, opts ...WorkspaceOption) (logicalcluster.Name, *tenancyv1alpha1.Workspace) {
	t.Helper()

	cfg := s.FrontProxyConfig()
	cluster, ws := CreateWorkspace(t, cfg, parent, name, append(opts, OnShard(shard))...)
	WaitForWorkspacePath(t, cfg, parent.Join(name))

	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	got, err := s.ShardOf(ctx, cluster)
	if err != nil {
		t.Fatalf("finding the shard of workspace %s (%s): %v", parent.Join(name), cluster, err)
	}
	if got != shard {
		t.Fatalf("workspace %s (%s) is on shard %s, not %s", parent.Join(name), cluster, got, shard)
	}
	return cluster, ws
}
