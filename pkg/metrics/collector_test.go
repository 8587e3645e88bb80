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

package metrics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func workspace(cluster, name, kind string, status *mount.Status) *tenancyv1alpha1.Workspace {
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name: name, ResourceVersion: "1",
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
	}}
	if kind != "" {
		ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "example.io/v1", Kind: kind, Name: name}}
	}
	if status != nil {
		ws.Annotations[mount.PhaseAnnotationKey] = string(status.Phase)
		ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
	}
	return ws
}

func TestMountCollector(t *testing.T) {
	t.Parallel()
	store := cache.NewStore(kcpcache.MetaClusterNamespaceKeyFunc)
	for _, ws := range []*tenancyv1alpha1.Workspace{
		workspace("c1", "ready", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true}),
		workspace("c2", "ready", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true}),
		workspace("c1", "no-url", "KubeCluster", &mount.Status{Phase: mount.PhaseReady}),
		workspace("c1", "gone", "KubeCluster", &mount.Status{Phase: mount.PhaseNotFound}),
		workspace("c1", "pending", "Tunnel", nil), // not reached by the controller yet: Unknown
		workspace("c1", "plain", "", nil),         // not mounted: not counted
	} {
		require.NoError(t, store.Add(ws))
	}
	collector := &mountCollector{store: store, parsed: map[string]parsedMount{}}

	expected := `
# HELP workspacemounts_mounted_workspaces [ALPHA] ` + mountedHelp + `
# TYPE workspacemounts_mounted_workspaces gauge
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Connecting"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Initializing"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Invalid"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="NotFound"} 1
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Ready"} 3
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Unknown"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="Connecting"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="Initializing"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="Invalid"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="NotFound"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="Ready"} 0
workspacemounts_mounted_workspaces{kind="Tunnel",phase="Unknown"} 1
# HELP workspacemounts_ready_workspaces [ALPHA] ` + readyHelp + `
# TYPE workspacemounts_ready_workspaces gauge
workspacemounts_ready_workspaces{kind="KubeCluster"} 2
workspacemounts_ready_workspaces{kind="Tunnel"} 0
`
	require.NoError(t, testutil.CustomCollectAndCompare(collector, strings.NewReader(expected),
		"workspacemounts_mounted_workspaces", "workspacemounts_ready_workspaces"))

	// A Workspace that changes is parsed again; one that goes is forgotten.
	changed := workspace("c1", "gone", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true})
	changed.ResourceVersion = "2"
	require.NoError(t, store.Update(changed))
	require.NoError(t, store.Delete(workspace("c1", "pending", "Tunnel", nil)))
	expected = `
# HELP workspacemounts_ready_workspaces [ALPHA] ` + readyHelp + `
# TYPE workspacemounts_ready_workspaces gauge
workspacemounts_ready_workspaces{kind="KubeCluster"} 3
`
	// (A collector registers once: a fresh one, with the same parse cache.)
	collector = &mountCollector{store: store, parsed: collector.parsed}
	require.NoError(t, testutil.CustomCollectAndCompare(collector, strings.NewReader(expected), "workspacemounts_ready_workspaces"))
	require.Len(t, collector.parsed, 5)
}
