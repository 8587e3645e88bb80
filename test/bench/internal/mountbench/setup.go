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

package mountbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// readyTimeout bounds how long a cluster workspace may take to become
	// Ready, and its CRD to become Established and served.
	readyTimeout = 5 * time.Minute
	// pollInterval is how often readiness is checked again.
	pollInterval = 500 * time.Millisecond
	// maxClusterConcurrency bounds how many cluster workspaces are created at
	// once: each is a new logical cluster, much more work for kcp than an
	// object, and a hundred at once on a small machine take minutes to be Ready.
	maxClusterConcurrency = 8
	// progressInterval is how often long-running steps log their progress.
	progressInterval = 10 * time.Second
)

// The mount objects are cluster-scoped KubeClusters, as in kcp's own tests.
var (
	mountGVR  = schema.GroupVersionResource{Group: "contrib.kcp.io", Version: framework.MountVersion, Resource: "kubeclusters"}
	mountKind = "KubeCluster"
)

// mountName names mount object i and the Workspace that mounts it.
func mountName(i int) string {
	return "mount-" + strconv.Itoa(i)
}

// mountIndex reverses mountName.
func mountIndex(name string) (int, bool) {
	number, ok := strings.CutPrefix(name, "mount-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(number)
	return i, err == nil && i >= 0
}

// beforeURL and afterURL are the URLs of mount object i before and after the flip.
func beforeURL(i int) string { return "https://before.example/" + strconv.Itoa(i) }
func afterURL(i int) string  { return "https://after.example/" + strconv.Itoa(i) }

// layout spreads the mounts evenly over the clusters: mount i lives in
// clusters[i % len(clusters)]. With shards (the sharded benchmark), cluster j
// is on shards[j % len(shards)], and so mount i on shards[i % len(shards)].
type layout struct {
	clusters []logicalcluster.Name
	mounts   int
	shards   []string
}

// shard returns the shard of mount i, "" without shards.
func (l layout) shard(i int) string {
	if len(l.shards) == 0 {
		return ""
	}
	return l.shards[i%len(l.shards)]
}

func (l layout) cluster(i int) logicalcluster.Name {
	return l.clusters[i%len(l.clusters)]
}

// index returns the mount index of a mounted Workspace of this benchmark.
func (l layout) index(ws *tenancyv1alpha1.Workspace) (int, bool) {
	i, ok := mountIndex(ws.Name)
	if !ok || i >= l.mounts || logicalcluster.From(ws) != l.cluster(i) {
		return 0, false
	}
	return i, true
}

// adminClients talk to kcp as kcp-admin, cluster-aware.
type adminClients struct {
	kcp     kcpclientset.ClusterInterface
	dynamic kcpdynamic.ClusterInterface
	crds    kcpapiextensionsclientset.ClusterInterface
}

// newAdminClients builds the clients for a base config (no /clusters/ path).
func newAdminClients(cfg *rest.Config) (adminClients, error) {
	var c adminClients
	var err error
	if c.kcp, err = kcpclientset.NewForConfig(cfg); err != nil {
		return adminClients{}, err
	}
	if c.dynamic, err = kcpdynamic.NewForConfig(cfg); err != nil {
		return adminClients{}, err
	}
	if c.crds, err = kcpapiextensionsclientset.NewForConfig(cfg); err != nil {
		return adminClients{}, err
	}
	return c, nil
}

// createCluster creates the workspace root:name, on shard unless that is
// empty (framework.OnShard: the Shard labelled name=<shard>), waits until it
// is Ready and returns its logical cluster. c must reach root (the root
// shard, or a front-proxy).
func (c adminClients) createCluster(ctx context.Context, name, shard string) (logicalcluster.Name, error) {
	workspaces := c.kcp.Cluster(framework.RootPath).TenancyV1alpha1().Workspaces()
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
	err := wait.PollUntilContextTimeout(ctx, pollInterval, readyTimeout, true, func(ctx context.Context) (bool, error) {
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

// installMountCRD installs the mount object CRD in cluster and waits until it
// is Established and served: kcp v0.28.1 crashes on a Workspace whose
// spec.mount references a kind not served in its cluster.
func (c adminClients) installMountCRD(ctx context.Context, cluster logicalcluster.Name) error {
	crd := framework.MountCRD(mountGVR.Group, mountKind, mountGVR.Resource, apiextensionsv1.ClusterScoped)
	crds := c.crds.Cluster(cluster.Path()).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s in %s: %w", crd.Name, cluster, err)
	}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, readyTimeout, true, func(ctx context.Context) (bool, error) {
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
	disco := c.crds.Cluster(cluster.Path()).Discovery()
	err = wait.PollUntilContextTimeout(ctx, pollInterval, readyTimeout, true, func(context.Context) (bool, error) {
		resources, err := disco.ServerResourcesForGroupVersion(mountGVR.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		for _, r := range resources.APIResources {
			if r.Name == mountGVR.Resource {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be served in %s: %w", mountGVR.GroupResource(), cluster, err)
	}
	return nil
}

// createMount creates mount object i, marked as kcp requires, with the
// status phase at url and the Workspace that mounts it, next to it.
func (c adminClients) createMount(ctx context.Context, l layout, i int, phase mount.Phase, url string) error {
	cluster, name := l.cluster(i), mountName(i)
	objects := c.dynamic.Cluster(cluster.Path()).Resource(mountGVR)
	obj, err := objects.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": mountGVR.GroupVersion().String(),
		"kind":       mountKind,
		"metadata": map[string]interface{}{
			"name":        name,
			"annotations": map[string]interface{}{mount.IsMountAnnotationKey: mount.IsMountAnnotationValue},
		},
		"spec": map[string]interface{}{},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating %s %s in %s: %w", mountKind, name, cluster, err)
	}
	obj.Object["status"] = map[string]interface{}{"phase": string(phase), "URL": url}
	if _, err := objects.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the status of %s %s in %s: %w", mountKind, name, cluster, err)
	}
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
			APIVersion: mountGVR.GroupVersion().String(), Kind: mountKind, Name: name,
		}}},
	}
	if _, err := c.kcp.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating mounted workspace %s in %s: %w", name, cluster, err)
	}
	return nil
}

// flipMount sets the status of mount object i to Ready with its after URL,
// in one write (a merge patch of the status subresource).
func (c adminClients) flipMount(ctx context.Context, l layout, i int) error {
	return c.setMountStatus(ctx, l, i, "Ready", afterURL(i))
}

// setMountStatus sets status.phase and status.URL of mount object i, in one
// write (a merge patch of the status subresource).
func (c adminClients) setMountStatus(ctx context.Context, l layout, i int, phase, url string) error {
	patch, err := json.Marshal(map[string]interface{}{
		"status": map[string]interface{}{"phase": phase, "URL": url},
	})
	if err != nil {
		return err
	}
	cluster, name := l.cluster(i), mountName(i)
	_, err = c.dynamic.Cluster(cluster.Path()).Resource(mountGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("setting the status of %s %s in %s to %s: %w", mountKind, name, cluster, phase, err)
	}
	return nil
}

// forEach calls do(ctx, i) for every i in [0, n) from at most workers
// goroutines, logging its progress as label. It stops at the first error,
// which it returns, or when ctx is done.
func forEach(ctx context.Context, label string, n, workers int, do func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var done atomic.Int64
	began := time.Now()
	defer every(progressInterval, func() {
		count := done.Load()
		logf("%s: %d/%d (%.1f/s)", label, count, n, float64(count)/time.Since(began).Seconds())
	})()

	indexes := make(chan int)
	var workerGroup sync.WaitGroup
	for range min(workers, n) {
		workerGroup.Go(func() {
			for i := range indexes {
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	feed(ctx, indexes, n)
	workerGroup.Wait()
	return context.Cause(ctx)
}

// feed sends 0 to n-1 to indexes unless ctx is done first, then closes it.
func feed(ctx context.Context, indexes chan<- int, n int) {
	defer close(indexes)
	for i := range n {
		select {
		case indexes <- i:
		case <-ctx.Done():
			return
		}
	}
}

// every calls f every interval until the returned stop function is called.
func every(interval time.Duration, f func()) (stop func()) {
	ticker := time.NewTicker(interval)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				f()
			}
		}
	}()
	return func() {
		ticker.Stop()
		close(done)
	}
}
