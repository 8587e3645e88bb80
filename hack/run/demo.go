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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// demoTimeout bounds each wait of the demo.
	demoTimeout = 3 * time.Minute
	// demoInterval is how often the demo checks again.
	demoInterval = 500 * time.Millisecond
	// fieldManager owns what the demo applies.
	fieldManager = "make-run"
)

var (
	workspaces = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}
	crds       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	// kubeClusters is the mount kind of hack/demo/kubeclusters-crd.yaml.
	kubeClusters = schema.GroupVersionResource{Group: "contrib.kcp.io", Version: "v1alpha1", Resource: "kubeclusters"}
)

// place is a demo workspace: parent:name, on shard (any if empty).
type place struct {
	parent, name, shard string
}

// makeDemo makes the demo as kcp-admin (cfg, at kcpURL without a
// /clusters/ path) in each place: the workspace (Ready, and served at its
// path), the mount kind of hack/demo/kubeclusters-crd.yaml (served: kcp
// before v0.32, without hack/kcp/patches, crashes on a mounted Workspace
// whose kind is not), the mount objects and the Workspaces mounting them of
// hack/demo/mounts.yaml, and the mount objects' status as a mount
// controller would set it: ready (at providerURL, the demo's mount provider,
// or where there is none at the workspace's URL), connecting (its agent not
// connected), no-url (Ready without a URL); "missing" mounts nothing that
// exists. Everything is applied (server-side), so that a kcp that kept its
// state from an earlier run gets the demo again.
func makeDemo(ctx context.Context, cfg *rest.Config, kcpURL, providerURL string, places []place) error {
	client, err := kcpdynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	crd, err := readObjects(filepath.Join(root, "hack", "demo", "kubeclusters-crd.yaml"))
	if err != nil {
		return err
	}
	mounts, err := readObjects(filepath.Join(root, "hack", "demo", "mounts.yaml"))
	if err != nil {
		return err
	}
	for _, p := range places {
		path := logicalcluster.NewPath(p.parent).Join(p.name)
		if err := applyWorkspace(ctx, client, p); err != nil {
			return err
		}
		// The front-proxy of a sharded kcp routes the new path once its index has it.
		if err := waitListed(ctx, client, path, crds); err != nil {
			return err
		}
		if err := apply(ctx, client, path, crd); err != nil {
			return err
		}
		if err := waitListed(ctx, client, path, kubeClusters); err != nil {
			return err
		}
		if err := apply(ctx, client, path, mounts); err != nil {
			return err
		}
		readyURL := providerURL
		if readyURL == "" {
			readyURL = kcpURL + path.RequestPath()
		}
		for name, status := range map[string]string{
			"ready":      `{"status":{"phase":"Ready","URL":"` + readyURL + `"}}`,
			"connecting": `{"status":{"phase":"Connecting","conditions":[{"type":"AgentConnected","status":"False","reason":"NoHeartbeat","message":"the agent has not connected yet"}]}}`,
			"no-url":     `{"status":{"phase":"Ready"}}`,
		} {
			if _, err := client.Cluster(path).Resource(kubeClusters).Patch(ctx, name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
				return fmt.Errorf("setting the status of KubeCluster %s in %s: %w", name, path, err)
			}
		}
	}
	return nil
}

// applyWorkspace applies the workspace of place p, of type root:universal,
// and waits until it is Ready.
func applyWorkspace(ctx context.Context, client kcpdynamic.ClusterInterface, p place) error {
	ws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": workspaces.GroupVersion().String(),
		"kind":       "Workspace",
		"metadata":   map[string]any{"name": p.name},
		"spec":       map[string]any{"type": map[string]any{"name": "universal", "path": "root"}},
	}}
	if p.shard != "" {
		// kcp labels every Shard name=<its name>.
		ws.Object["spec"].(map[string]any)["location"] = map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"name": p.shard}}}
	}
	parent := logicalcluster.NewPath(p.parent)
	if err := apply(ctx, client, parent, []*unstructured.Unstructured{ws}); err != nil {
		return err
	}
	return poll(ctx, fmt.Sprintf("workspace %s to be Ready", parent.Join(p.name)), func(ctx context.Context) error {
		got, err := client.Cluster(parent).Resource(workspaces).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
}

// waitListed waits until resource can be listed in path.
func waitListed(ctx context.Context, client kcpdynamic.ClusterInterface, path logicalcluster.Path, resource schema.GroupVersionResource) error {
	return poll(ctx, fmt.Sprintf("%s to be served in %s", resource.GroupResource(), path), func(ctx context.Context) error {
		_, err := client.Cluster(path).Resource(resource).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// poll calls check every demoInterval until it returns nil, for at most
// demoTimeout; the error has the last answer.
func poll(ctx context.Context, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, demoInterval, demoTimeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (last: %w)", what, err, last)
	}
	return nil
}

// apply applies objects (cluster-scoped, of a kind whose resource is its
// lowercase plural) in path, server-side.
func apply(ctx context.Context, client kcpdynamic.ClusterInterface, path logicalcluster.Path, objects []*unstructured.Unstructured) error {
	for _, obj := range objects {
		resource, _ := meta.UnsafeGuessKindToResource(obj.GroupVersionKind())
		if _, err := client.Cluster(path).Resource(resource).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s in %s: %w", obj.GetKind(), obj.GetName(), path, err)
		}
	}
	return nil
}

// readObjects reads the objects of a YAML file of one or more documents.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objects, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// writeDemoKubeconfig writes out, a copy of kubeconfig whose current context is at server, as kubectl ws leaves it.
func writeDemoKubeconfig(kubeconfig, server, out string) error {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return err
	}
	current, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[current.Cluster] == nil {
		return fmt.Errorf("%s has no current context", kubeconfig)
	}
	cluster := cfg.Clusters[current.Cluster].DeepCopy()
	cluster.Server = server
	cfg.Clusters["demo"] = cluster
	cfg.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: current.AuthInfo}
	cfg.CurrentContext = "demo"
	return clientcmd.WriteToFile(*cfg, out)
}
