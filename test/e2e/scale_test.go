//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestManyWorkspacesConvergeAndRest mounts 50 Workspaces over 5 logical
// clusters, flips all their mounts, and then counts the writes to them while
// nothing changes: a steady state must cost no patch at all.
func TestManyWorkspacesConvergeAndRest(t *testing.T) {
	t.Parallel()
	const clusters, perCluster = 5, 10
	c := newClients(t)
	cfg := kcp.BaseConfigT(t, "base")

	paths := make([]logicalcluster.Path, 0, clusters)
	for i := range clusters {
		name := framework.UniqueName(fmt.Sprintf("many%d", i))
		framework.CreateWorkspace(t, cfg, framework.RootPath, name)
		path := framework.RootPath.Join(name)
		installKubeClusters(t, path)
		paths = append(paths, path)
	}
	for _, path := range paths {
		for j := range perCluster {
			name := fmt.Sprintf("mount-%d", j)
			c.createMountObject(t, path, kubeClusters, name, map[string]interface{}{"phase": "Connecting"})
			c.createMountedWorkspace(t, path, name, kubeClusters.ref(name))
		}
	}
	waitAll := func(want mountState) {
		t.Helper()
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			for _, path := range paths {
				list, err := c.kcp.Cluster(path).TenancyV1alpha1().Workspaces().List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, ws := range list.Items {
					status, _ := mount.StatusOf(ws.Annotations)
					if got := (mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}); got != want {
						return false, fmt.Sprintf("%s|%s: %s", path, ws.Name, got)
					}
				}
			}
			return true, ""
		}, 2*convergeTimeout, 200*time.Millisecond)
	}
	began := time.Now()
	waitAll(mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
	t.Logf("%d mounted workspaces converged %s after the last was created", clusters*perCluster, time.Since(began).Round(time.Millisecond))

	url := "https://mounts.example/ready"
	began = time.Now()
	for _, path := range paths {
		for j := range perCluster {
			c.setMountStatus(t, path, kubeClusters, fmt.Sprintf("mount-%d", j), map[string]interface{}{"phase": "Ready", "URL": url})
		}
	}
	flipped := time.Since(began)
	waitAll(mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})
	t.Logf("%d flips reflected %s after the first (writing them took %s)", clusters*perCluster, time.Since(began).Round(time.Millisecond), flipped.Round(time.Millisecond))

	// Steady state: watch every Workspace of these clusters for a while and
	// count the writes to the annotations. kcp's own in-tree mounts controller
	// may still be catching up (spec.URL, conditions); this controller, with
	// nothing changing, must write nothing.
	const quiet = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), quiet)
	t.Cleanup(cancel)
	writes := make(chan string, 1000)
	var watchers sync.WaitGroup
	for _, path := range paths {
		list, err := c.kcp.Cluster(path).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		written := map[string]string{}
		for _, ws := range list.Items {
			written[ws.Name] = ws.Annotations[mount.PhaseAnnotationKey] + ws.Annotations[mount.StatusAnnotationKey]
		}
		w, err := c.kcp.Cluster(path).TenancyV1alpha1().Workspaces().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		require.NoError(t, err)
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			defer w.Stop()
			for event := range w.ResultChan() {
				ws, ok := event.Object.(*tenancyv1alpha1.Workspace)
				if !ok {
					continue
				}
				if annotations := ws.Annotations[mount.PhaseAnnotationKey] + ws.Annotations[mount.StatusAnnotationKey]; annotations != written[ws.Name] {
					writes <- fmt.Sprintf("%s %s|%s: %s", event.Type, path, ws.Name, ws.Annotations[mount.StatusAnnotationKey])
					written[ws.Name] = annotations
				}
			}
		}()
	}
	watchers.Wait()
	close(writes)
	var seen []string
	for write := range writes {
		seen = append(seen, write)
	}
	require.Empty(t, seen, "a steady state must cost no annotation write")
	t.Logf("annotation writes to %d mounted workspaces in %s of steady state: %d", clusters*perCluster, quiet, len(seen))
}
