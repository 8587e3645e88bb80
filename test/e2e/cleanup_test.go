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
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// runCleanup runs `workspacemounts cleanup` (the binary, as an operator
// does) against kcp's shard with args, and returns its output.
func runCleanup(t *testing.T, e *condEnv, args ...string) (string, error) {
	t.Helper()
	return runCleanupCommand(t, append([]string{"--kubeconfig", e.kcp.KubeconfigPath, "--context", "shard-base"}, args...)...)
}

// runCleanupCommand runs `workspacemounts cleanup` with args and returns
// its output.
func runCleanupCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append([]string{"cleanup"}, args...)
	binary, err := framework.PluginBinary()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, binary, full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("workspacemounts %s:\n%s", strings.Join(full, " "), out.String())
	return out.String(), err
}

// TestCleanup: a plugin at level 2 makes a Workspace Unavailable; cleanup is
// refused while it holds the Lease; once it stopped, a dry run changes
// nothing, cleanup --yes makes the Workspace Ready again and leaves no
// Workspace with an annotation or the condition of the plugin, and a second
// run has nothing to do.
func TestCleanup(t *testing.T) {
	t.Parallel()
	e := newCondEnv(t, "")
	cfg := e.kcp.BaseConfigT(t, "base")
	org := framework.UniqueName("cleanup")
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	orgPath := framework.RootPath.Join(org)
	framework.CreateWorkspace(t, cfg, orgPath, "unserved")
	unserved, err := e.c.kcp.Cluster(orgPath).TenancyV1alpha1().Workspaces().Get(context.Background(), "unserved", metav1.GetOptions{})
	require.NoError(t, err)
	unservedURL := unserved.Spec.URL
	// The legacy annotation: kcp v0.28.1 does not parse it, so a kind nobody
	// serves does not crash it (see TestWorkspaceConditionAndURL).
	e.annotate(t, orgPath, "unserved", mount.LegacyAnnotationKey, legacyMount(t, "absent.example.io/v1alpha1", "Absent", "nothing"))

	p := e.startPlugin(t, "leader", "--leader-elect=true", "--workspace-condition", "--legacy-mount-annotation")
	e.waitWorkspace(t, orgPath, "unserved", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
		reason: mount.ReasonMountKindUnknown, severity: conditionsv1alpha1.ConditionSeverityError, url: &unservedURL})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		out, err := runCleanup(t, e)
		return err != nil && strings.Contains(out, "a plugin is running"), out
	}, time.Minute, time.Second, "cleanup refused while the plugin holds the Lease")

	require.NoError(t, p.Stop())
	// cleanup takes the Lease for its run and releases it: one transition
	// of the Lease per run, and no holder after.
	kube, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	transitions := func() int32 {
		lease, err := kube.Cluster(framework.RootPath).CoordinationV1().Leases("default").Get(context.Background(), "workspacemounts", metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, lease.Spec.HolderIdentity, "the Lease is released")
		return *lease.Spec.LeaseTransitions
	}
	before := transitions()
	out, err := runCleanup(t, e)
	require.NoError(t, err, out)
	require.Equal(t, before+1, transitions(), "the dry run held the Lease")
	require.Contains(t, out, "would remove", "the dry run lists the Workspace")
	require.Contains(t, out, "dry run: nothing written")
	e.waitWorkspace(t, orgPath, "unserved", condWant{phase: corev1alpha1.LogicalClusterPhaseUnavailable, status: corev1.ConditionFalse,
		reason: mount.ReasonMountKindUnknown, severity: conditionsv1alpha1.ConditionSeverityError, url: &unservedURL})

	out, err = runCleanup(t, e, "--yes")
	require.NoError(t, err, out)
	require.Contains(t, out, "removed annotations")
	require.Equal(t, before+2, transitions(), "cleanup --yes held the Lease")
	ws := e.waitWorkspace(t, orgPath, "unserved", condWant{phase: corev1alpha1.LogicalClusterPhaseReady, url: &unservedURL})
	require.NotContains(t, ws.Annotations, mount.PhaseAnnotationKey)
	require.NotContains(t, ws.Annotations, mount.StatusAnnotationKey)

	// No Workspace of this kcp's clusters with Workspaces (root and the
	// org) keeps anything of the plugin.
	for _, cluster := range []logicalcluster.Path{framework.RootPath, orgPath} {
		all, err := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, all.Items, cluster.String())
		for i := range all.Items {
			w := &all.Items[i]
			require.NotContains(t, w.Annotations, mount.PhaseAnnotationKey, w.Name)
			require.NotContains(t, w.Annotations, mount.StatusAnnotationKey, w.Name)
			require.Nil(t, condition(w, condType), w.Name)
		}
	}

	out, err = runCleanup(t, e, "--yes")
	require.NoError(t, err, out)
	require.Contains(t, out, "0 Workspaces changed", "nothing left to do")
	e.waitGet(t, orgPath.Join("unserved"), condWorkspacesPath, http.StatusOK, "WorkspaceList")
}
