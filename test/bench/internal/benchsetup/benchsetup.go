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

// Package benchsetup is the set-up the benchmark commands share: kcp-admin
// clients, cluster workspaces, the mount CRD, and bounded fan-out.
package benchsetup

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// ReadyTimeout bounds each wait of the set-up.
	ReadyTimeout = 5 * time.Minute
	// PollInterval is how often readiness is checked again.
	PollInterval = 500 * time.Millisecond
)

// Admin holds kcp-admin's cluster-aware clients.
type Admin struct {
	KCP     kcpclientset.ClusterInterface
	Dynamic kcpdynamic.ClusterInterface
	CRDs    kcpapiextensionsclientset.ClusterInterface
	Kube    kcpkubernetesclientset.ClusterInterface
}

// NewAdmin builds the clients for a base config (no /clusters/ path).
func NewAdmin(cfg *rest.Config) (Admin, error) {
	var a Admin
	var err error
	if a.KCP, err = kcpclientset.NewForConfig(cfg); err != nil {
		return Admin{}, err
	}
	if a.Dynamic, err = kcpdynamic.NewForConfig(cfg); err != nil {
		return Admin{}, err
	}
	if a.CRDs, err = kcpapiextensionsclientset.NewForConfig(cfg); err != nil {
		return Admin{}, err
	}
	if a.Kube, err = kcpkubernetesclientset.NewForConfig(cfg); err != nil {
		return Admin{}, err
	}
	return a, nil
}

// CreateCluster creates the workspace root:name, on shard unless that is
// empty ([framework.OnShard]), waits until it is Ready and returns its
// logical cluster. a must reach root (the root shard, or a front-proxy).
func (a Admin) CreateCluster(ctx context.Context, name, shard string) (logicalcluster.Name, error) {
	workspaces := a.KCP.Cluster(framework.RootPath).TenancyV1alpha1().Workspaces()
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type: &tenancyv1alpha1.WorkspaceTypeReference{Path: framework.RootPath.String(), Name: "universal"},
		},
	}
	if shard != "" {
		framework.OnShard(shard)(ws)
	}
	if _, err := workspaces.Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating workspace root:%s: %w", name, err)
	}
	var cluster, state string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := workspaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			state = err.Error()
			return false, nil //nolint:nilerr // perhaps passing: try again
		}
		cluster, state = got.Spec.Cluster, fmt.Sprintf("phase %q", got.Status.Phase)
		return got.Status.Phase == corev1alpha1.LogicalClusterPhaseReady && cluster != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for workspace root:%s to be Ready (%s): %w", name, state, err)
	}
	return logicalcluster.Name(cluster), nil
}

// InstallMountCRD installs a cluster-scoped mount CRD for gvr and kind in
// cluster and waits until it is Established and served: kcp v0.28.1 crashes
// on a Workspace whose spec.mount references a kind not served there.
func (a Admin) InstallMountCRD(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, kind string) error {
	crd := framework.MountCRD(gvr.Group, kind, gvr.Resource, apiextensionsv1.ClusterScoped)
	crds := a.CRDs.Cluster(cluster.Path()).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s in %s: %w", crd.Name, cluster, err)
	}
	err := wait.PollUntilContextTimeout(ctx, PollInterval, ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, condition := range crd.Status.Conditions {
			if condition.Type == apiextensionsv1.Established {
				return condition.Status == apiextensionsv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s in %s to be Established: %w", crd.Name, cluster, err)
	}
	disco := a.CRDs.Cluster(cluster.Path()).Discovery()
	err = wait.PollUntilContextTimeout(ctx, PollInterval, ReadyTimeout, true, func(context.Context) (bool, error) {
		resources, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		for _, r := range resources.APIResources {
			if r.Name == gvr.Resource {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be served in %s: %w", gvr.GroupResource(), cluster, err)
	}
	return nil
}

// ForEach calls do(ctx, i) for every i in [0, n) with at most workers calls
// at once. It stops at the first error, which it returns, or when ctx is done.
func ForEach(ctx context.Context, n, workers int, do func(context.Context, int) error) error {
	group, groupCtx := errgroup.WithContext(ctx)
	group.SetLimit(max(workers, 1))
	for i := range n {
		if groupCtx.Err() != nil {
			break
		}
		group.Go(func() error { return do(groupCtx, i) })
	}
	if err := group.Wait(); err != nil {
		return err
	}
	return context.Cause(ctx)
}
