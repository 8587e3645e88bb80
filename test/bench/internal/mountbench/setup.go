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
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
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

// adminClients are kcp-admin's clients, with the mount helpers of this package.
type adminClients struct{ benchsetup.Admin }

func newAdminClients(cfg *rest.Config) (adminClients, error) {
	admin, err := benchsetup.NewAdmin(cfg)
	return adminClients{admin}, err
}

// installMountCRD installs this package's mount CRD in cluster
// ([benchsetup.Admin.InstallMountCRD]).
func (c adminClients) installMountCRD(ctx context.Context, cluster logicalcluster.Name) error {
	return c.InstallMountCRD(ctx, cluster, mountGVR, mountKind)
}

// createMount creates mount object i, marked as kcp requires, with the
// status phase at url and the Workspace that mounts it, next to it.
func (c adminClients) createMount(ctx context.Context, l layout, i int, phase mount.Phase, url string) error {
	cluster, name := l.cluster(i), mountName(i)
	objects := c.Dynamic.Cluster(cluster.Path()).Resource(mountGVR)
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
	if _, err := c.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces().Create(ctx, ws, metav1.CreateOptions{}); err != nil {
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
	_, err = c.Dynamic.Cluster(cluster.Path()).Resource(mountGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("setting the status of %s %s in %s to %s: %w", mountKind, name, cluster, phase, err)
	}
	return nil
}

// forEach is [benchsetup.ForEach], logging its progress as label.
func forEach(ctx context.Context, label string, n, workers int, do func(context.Context, int) error) error {
	var done atomic.Int64
	began := time.Now()
	defer every(progressInterval, func() {
		count := done.Load()
		logf("%s: %d/%d (%.1f/s)", label, count, n, float64(count)/time.Since(began).Seconds())
	})()
	return benchsetup.ForEach(ctx, n, workers, func(ctx context.Context, i int) error {
		if err := do(ctx, i); err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
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
