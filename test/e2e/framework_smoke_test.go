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
	"testing"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestFrameworkSmoke checks the test harness end to end against a real kcp:
// workspaces, a CRD, an exported and bound kind, and the wildcard reads with
// identity hashes that the plugin depends on.
func TestFrameworkSmoke(t *testing.T) {
	t.Parallel()

	server := kcp // the shared server of TestMain
	cfg := server.BaseConfigT(t, "base")
	_ = server.ConfigT(t, "user") // the "user" battery adds a non-admin context

	providerName, consumerName := framework.UniqueName("provider"), framework.UniqueName("consumer")
	provider, _ := framework.CreateWorkspace(t, cfg, framework.RootPath, providerName)
	consumer, _ := framework.CreateWorkspace(t, cfg, framework.RootPath, consumerName)
	t.Logf("provider workspace %s is cluster %s, consumer workspace %s is cluster %s", providerName, provider, consumerName, consumer)

	// A mount CRD in the provider, with a working status subresource.
	framework.InstallCRD(t, cfg, provider.Path(),
		framework.MountCRD("contrib.kcp.io", "KubeCluster", "kubeclusters", apiextensionsv1.ClusterScoped))
	dynamicClient, err := kcpdynamic.NewForConfig(cfg)
	require.NoError(t, err)
	kubeClusters := dynamicClient.Cluster(provider.Path()).Resource(schema.GroupVersionResource{
		Group: "contrib.kcp.io", Version: framework.MountVersion, Resource: "kubeclusters",
	})
	ctx := t.Context()
	kubeCluster, err := kubeClusters.Create(ctx, mountObject("contrib.kcp.io", "KubeCluster", "proxy-cluster"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(kubeCluster.Object, "Ready", "status", "phase"))
	require.NoError(t, unstructured.SetNestedField(kubeCluster.Object, "https://example.com/clusters/x", "status", "URL"))
	kubeCluster, err = kubeClusters.UpdateStatus(ctx, kubeCluster, metav1.UpdateOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(kubeCluster.Object, "status", "phase")
	require.Equal(t, "Ready", phase, "status.phase after UpdateStatus")

	// A kind exported by the provider and bound in the consumer, with one object.
	const group, kind, plural = "mounts.example.io", "Edge", "edges"
	identityHash := framework.ExportAndBind(t, cfg, provider.Path(), consumer.Path(), group, kind, plural)
	require.NotEmpty(t, identityHash)
	_, err = dynamicClient.Cluster(consumer.Path()).
		Resource(schema.GroupVersionResource{Group: group, Version: framework.MountVersion, Resource: plural}).
		Create(ctx, mountObject(group, kind, "edge-1"), metav1.CreateOptions{})
	require.NoError(t, err)

	// Wildcard reads need the shard admin (system:masters) and, for APIs from an
	// APIExport, the resource's identity hash.
	shardDynamic, err := kcpdynamic.NewForConfig(server.BaseConfigT(t, "shard-base"))
	require.NoError(t, err)

	t.Run("workspaces across clusters", func(t *testing.T) {
		t.Parallel()

		tenancyHash := framework.APIExportIdentityHash(t, cfg, framework.RootPath, "tenancy.kcp.io")
		gvr := schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces:" + tenancyHash}
		list, err := shardDynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "listing /clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:<identity>")
		require.Subset(t, clusterNames(list), []string{"root|" + providerName, "root|" + consumerName})
	})

	t.Run("bound kind across clusters", func(t *testing.T) {
		t.Parallel()

		gvr := schema.GroupVersionResource{Group: group, Version: framework.MountVersion, Resource: plural + ":" + identityHash}
		list, err := shardDynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "listing /clusters/*/apis/%s/%s/%s:<identity>", group, framework.MountVersion, plural)
		require.Equal(t, []string{consumer.String() + "|edge-1"}, clusterNames(list))
	})
}

// mountObject returns a mount object with an empty spec.
func mountObject(group, kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + framework.MountVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{},
	}}
}

// clusterNames returns "<logical cluster>|<name>" for each item of list.
func clusterNames(list *unstructured.UnstructuredList) []string {
	names := make([]string, 0, len(list.Items))
	for _, item := range list.Items {
		names = append(names, logicalcluster.From(&item).String()+"|"+item.GetName())
	}
	return names
}
