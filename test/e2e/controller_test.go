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
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// convergeTimeout bounds how long a mount change may take to reach the annotations.
const convergeTimeout = time.Minute

// clients talks to the shared kcp as kcp-admin, cluster-aware.
type clients struct {
	kcp     kcpclientset.ClusterInterface
	dynamic kcpdynamic.ClusterInterface
}

func newClients(t *testing.T) clients {
	t.Helper()
	return newClientsFor(t, kcp.BaseConfigT(t, "base"))
}

// ownKCPWithProxy starts a kcp of the test's own (for a test that counts
// what a plugin of its own watches, which the shared kcp's other tests
// would add to) with an org named after prefix, serving the KubeCluster
// CRD, and in it the KubeCluster proxy, Ready at the org's own URL.
func ownKCPWithProxy(t *testing.T, prefix string) (server *framework.Server, c clients, cluster logicalcluster.Path, ready map[string]interface{}) {
	t.Helper()
	server = framework.StartT(t, framework.Options{})
	cfg := server.BaseConfigT(t, "base")
	c = newClientsFor(t, cfg)
	org := framework.UniqueName(prefix)
	framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	cluster = framework.RootPath.Join(org)
	// Served before any Workspace mounts it: kcp v0.28.1 panics otherwise.
	framework.InstallCRD(t, cfg, cluster, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	ready = map[string]interface{}{"phase": "Ready", "URL": server.BaseURL + "/clusters/" + org}
	c.createMountObject(t, cluster, kubeClusters, "proxy", ready)
	return server, c, cluster, ready
}

// mountKind is a mount object kind served in one workspace.
type mountKind struct {
	gvr  schema.GroupVersionResource
	kind string
}

func (k mountKind) ref(name string) tenancyv1alpha1.ObjectReference {
	return tenancyv1alpha1.ObjectReference{APIVersion: k.gvr.GroupVersion().String(), Kind: k.kind, Name: name}
}

var kubeClusters = mountKind{gvr: schema.GroupVersionResource{Group: "contrib.kcp.io", Version: framework.MountVersion, Resource: "kubeclusters"}, kind: "KubeCluster"}

// installKubeClusters installs the KubeCluster CRD in cluster and waits until it is served.
func installKubeClusters(t *testing.T, cluster logicalcluster.Path) mountKind {
	t.Helper()
	framework.InstallCRD(t, kcp.BaseConfigT(t, "base"), cluster,
		framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	return kubeClusters
}

// createMountObject creates a mount object, marked as kcp requires
// (mount.IsMountAnnotationKey: its conditions are published), then sets its
// status (nil: none).
func (c clients) createMountObject(t *testing.T, cluster logicalcluster.Path, kind mountKind, name string, status map[string]interface{}) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kind.gvr.GroupVersion().String(),
		"kind":       kind.kind,
		"metadata": map[string]interface{}{
			"name":        name,
			"annotations": map[string]interface{}{mount.IsMountAnnotationKey: mount.IsMountAnnotationValue},
		},
		"spec": map[string]interface{}{},
	}}
	_, err := c.dynamic.Cluster(cluster).Resource(kind.gvr).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err, "creating %s %s in %s", kind.kind, name, cluster)
	if status != nil {
		c.setMountStatus(t, cluster, kind, name, status)
	}
}

// setMountStatus replaces the status of a mount object.
func (c clients) setMountStatus(t *testing.T, cluster logicalcluster.Path, kind mountKind, name string, status map[string]interface{}) {
	t.Helper()
	resource := c.dynamic.Cluster(cluster).Resource(kind.gvr)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := resource.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.Object["status"] = status
		_, err = resource.UpdateStatus(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "setting the status of %s %s in %s", kind.kind, name, cluster)
}

// setMountMark marks a mount object as one (mount.IsMountAnnotationKey), or
// removes the mark.
func (c clients) setMountMark(t *testing.T, cluster logicalcluster.Path, kind mountKind, name string, marked bool) {
	t.Helper()
	value := "null"
	if marked {
		value = strconv.Quote(mount.IsMountAnnotationValue)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, mount.IsMountAnnotationKey, value)
	_, err := c.dynamic.Cluster(cluster).Resource(kind.gvr).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err, "marking %s %s in %s: %t", kind.kind, name, cluster, marked)
}

func (c clients) deleteMountObject(t *testing.T, cluster logicalcluster.Path, kind mountKind, name string) {
	t.Helper()
	err := c.dynamic.Cluster(cluster).Resource(kind.gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
	require.NoError(t, err, "deleting %s %s in %s", kind.kind, name, cluster)
}

// createMountedWorkspace creates a Workspace mounting ref. The kind must be
// served in cluster already: kcp v0.28.1 crashes otherwise.
func (c clients) createMountedWorkspace(t *testing.T, cluster logicalcluster.Path, name string, ref tenancyv1alpha1.ObjectReference) {
	t.Helper()
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: ref}},
	}
	_, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Create(context.Background(), ws, metav1.CreateOptions{})
	require.NoError(t, err, "creating mounted workspace %s in %s", name, cluster)
}

// mountState is what a test expects of a Workspace's annotations.
type mountState struct {
	phase  mount.Phase
	ready  bool
	reason string
	url    string
}

func (s mountState) String() string {
	return fmt.Sprintf("phase=%s ready=%t reason=%s url=%q", s.phase, s.ready, s.reason, s.url)
}

// waitForMount waits until the Workspace's annotations show want, and returns the status.
func (c clients) waitForMount(t *testing.T, cluster logicalcluster.Path, name string, want mountState) mount.Status {
	t.Helper()
	var status mount.Status
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var found bool
		status, found = mount.StatusOf(ws.Annotations)
		if !found {
			return false, "no readable " + mount.StatusAnnotationKey + " annotation yet"
		}
		got := mountState{phase: status.Phase, ready: status.Ready, reason: status.Reason, url: status.URL}
		if ws.Annotations[mount.PhaseAnnotationKey] != string(status.Phase) {
			return false, fmt.Sprintf("%s is %q, but the status says %s", mount.PhaseAnnotationKey, ws.Annotations[mount.PhaseAnnotationKey], got)
		}
		return got == want, fmt.Sprintf("got %s (%s), want %s", got, status.Message, want)
	}, convergeTimeout, 100*time.Millisecond, "workspace %s|%s", cluster, name)
	return status
}

// TestCRDMountThroughEveryPhase flips a CRD-provided mount object through
// every row of the contract, deletes it and brings it back.
func TestCRDMountThroughEveryPhase(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := framework.UniqueName("crd")
	framework.CreateWorkspace(t, kcp.BaseConfigT(t, "base"), framework.RootPath, org)
	cluster := framework.RootPath.Join(org)
	kind := installKubeClusters(t, cluster)

	c.createMountObject(t, cluster, kind, "proxy", nil)
	c.createMountedWorkspace(t, cluster, "mounted", kind.ref("proxy"))
	status := c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountPhaseUnrecognized})
	require.Equal(t, mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy"}, status.MountRef)

	url := kcp.BaseURL + "/clusters/" + org
	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Initializing"})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
		map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "AgentDisconnected", "message": "no agent heartbeat", "lastTransitionTime": "2026-11-29T00:00:00Z"},
	}})
	status = c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
	require.Contains(t, status.Message, "condition ClusterReady is False (AgentDisconnected: no agent heartbeat)")
	require.Equal(t, []mount.Condition{{Type: "ClusterReady", Status: "False", Reason: "AgentDisconnected", Message: "no agent heartbeat"}}, status.Conditions)
	connectingSince := status.LastTransitionTime

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
		map[string]interface{}{"type": "ClusterReady", "status": "False", "reason": "Dialing"},
	}})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		ws, err := c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), "mounted", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, _ := mount.StatusOf(ws.Annotations)
		return len(s.Conditions) == 1 && s.Conditions[0].Reason == "Dialing", s.Message
	}, convergeTimeout, 100*time.Millisecond)
	status = c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
	require.Equal(t, connectingSince.UTC(), status.LastTransitionTime.UTC(), "lastTransitionTime moves only with phase or ready")

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Ready"})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseReady, reason: mount.ReasonMountURLMissing})

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Ready", "URL": url})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Unknown", "URL": url})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountNotReady, url: url})

	c.setMountStatus(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Rebooting", "URL": url})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseUnknown, reason: mount.ReasonMountPhaseUnrecognized, url: url})

	c.deleteMountObject(t, cluster, kind, "proxy")
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})

	c.createMountObject(t, cluster, kind, "proxy", map[string]interface{}{"phase": "Ready", "URL": url})
	c.waitForMount(t, cluster, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})
}

// TestAPIBindingMount does the same with a kind bound from an APIExport in
// another workspace, which kcp serves across clusters only under its identity.
func TestAPIBindingMount(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	cfg := kcp.BaseConfigT(t, "base")
	provider, consumer := framework.UniqueName("provider"), framework.UniqueName("consumer")
	framework.CreateWorkspace(t, cfg, framework.RootPath, provider)
	framework.CreateWorkspace(t, cfg, framework.RootPath, consumer)
	consumerPath := framework.RootPath.Join(consumer)
	kind := mountKind{gvr: schema.GroupVersionResource{Group: "tunnels.example.io", Version: framework.MountVersion, Resource: "tunnels"}, kind: "Tunnel"}
	framework.ExportAndBind(t, cfg, framework.RootPath.Join(provider), consumerPath, kind.gvr.Group, kind.kind, kind.gvr.Resource)

	url := kcp.BaseURL + "/clusters/" + consumer
	c.createMountObject(t, consumerPath, kind, "tunnel", map[string]interface{}{"phase": "Connecting"})
	c.createMountedWorkspace(t, consumerPath, "mounted", kind.ref("tunnel"))
	c.waitForMount(t, consumerPath, "mounted", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})

	c.setMountStatus(t, consumerPath, kind, "tunnel", map[string]interface{}{"phase": "Ready", "URL": url})
	c.waitForMount(t, consumerPath, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	c.deleteMountObject(t, consumerPath, kind, "tunnel")
	c.waitForMount(t, consumerPath, "mounted", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})

	c.createMountObject(t, consumerPath, kind, "tunnel", map[string]interface{}{"phase": "Initializing"})
	c.waitForMount(t, consumerPath, "mounted", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
}
