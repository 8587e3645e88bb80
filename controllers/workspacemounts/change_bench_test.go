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

package workspacemounts

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	kjson "sigs.k8s.io/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// BenchmarkWorkspaceChange is the controller's CPU for one change of a
// mount object, without kcp: the mount object's event, workspacemounts-workspaces,
// processWorkspace (the read of the mount object, the contract, the merge
// patch), then the echo, the patched Workspace coming back through the
// Workspace informer's handler and reconciled once more (nothing to write).
// kcp's side is the function fields: the read decodes the JSON of a mount
// object and the patch the JSON of a whole Workspace, as client-go does with
// kcp's answers, so their decoding is counted and kcp's work is not. It
// reports the requests to kcp per change (gets/op, patches/op), for the two
// ways the controller reads a mount object: read=get, a metadata event and a
// GET (a pair beyond --max-cluster-mount-informers), and read=cache, the
// event of a synced full-object informer (its decoding and trimming
// counted) and a read from its cache. test/bench/scale runs it for its table.
func BenchmarkWorkspaceChange(b *testing.B) {
	b.Run("read=get", func(b *testing.B) { benchmarkWorkspaceChange(b, false) })
	b.Run("read=cache", func(b *testing.B) { benchmarkWorkspaceChange(b, true) })
}

func benchmarkWorkspaceChange(b *testing.B, fromCache bool) {
	cluster := logicalcluster.Name("2x8kq7z0c1m3abcd")
	resource := kubeClusterResource
	ws := benchWorkspace(cluster, "mount-00042")

	// What kcp answers: a mount object in each phase, and the Workspace.
	objects := map[bool][]byte{}
	for _, ready := range []bool{true, false} {
		status := map[string]interface{}{"phase": "Connecting", "conditions": []interface{}{
			map[string]interface{}{"type": "AgentConnected", "status": "False", "reason": "NoHeartbeat", "message": "the agent has not connected yet",
				"lastTransitionTime": "2026-12-01T10:00:00Z"},
		}}
		if ready {
			status = map[string]interface{}{"phase": "Ready", "URL": "https://kc.example/clusters/" + ws.Name, "conditions": []interface{}{
				map[string]interface{}{"type": "AgentConnected", "status": "True", "reason": "Heartbeat", "lastTransitionTime": "2026-12-01T10:00:00Z"},
			}}
		}
		data, err := json.Marshal(map[string]interface{}{
			"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeCluster",
			"metadata": map[string]interface{}{
				"name": ws.Name, "uid": "0b7e5c1e-6f3e-4a51-9d55-3c1d4f0e2a10", "resourceVersion": "1234", "generation": 1,
				"creationTimestamp": "2026-12-01T10:00:00Z", "annotations": map[string]interface{}{logicalcluster.AnnotationKey: cluster.String()},
				"managedFields": []interface{}{map[string]interface{}{"manager": "kubectl", "operation": "Update", "apiVersion": "contrib.kcp.io/v1alpha1",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]interface{}{"f:status": map[string]interface{}{"f:phase": map[string]interface{}{}}}}},
			},
			"spec":   map[string]interface{}{"kubeconfigSecretRef": map[string]interface{}{"name": "kc", "namespace": "default"}},
			"status": status,
		})
		if err != nil {
			b.Fatal(err)
		}
		objects[ready] = data
	}
	full, err := json.Marshal(ws)
	if err != nil {
		b.Fatal(err)
	}
	ready := true
	var gets, patches int
	var patched []byte // what kcp's watch sends after a patch
	// kcp encodes it, not the plugin: once per distinct state.
	encoded := map[string][]byte{}

	indexer := cache.NewIndexer(kcpcache.MetaClusterNamespaceKeyFunc, mountIndexers(mount.Rule{}))
	cached := ws.DeepCopy()
	TrimWorkspace(cached, mount.Rule{})
	if err := indexer.Add(cached); err != nil {
		b.Fatal(err)
	}
	// The full-object informer's cache of the cluster, for read=cache.
	mountStore := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
	caches := &mountCaches{}
	caches.byKey.put(mountCacheKey(cluster, resource), mountCache{store: mountStore, synced: func() bool { return true }})
	mountVersion := 2000
	c := &Controller{
		mountsQueue:      newQueue(""),
		workspacesQueue:  newQueue(""),
		workspaceIndexer: indexer,
		mountObjects:     indexedMountObjects(indexer, mount.Rule{}),
		workspaceLister:  tenancyv1alpha1listers.NewWorkspaceClusterLister(indexer),
		workspaces: &workspacesReconciler{
			resolve: func(logicalcluster.Name, schema.GroupVersionKind) (restmapping.Resource, error) { return resource, nil },
			getMountObject: func(context.Context, logicalcluster.Name, restmapping.Resource, string, string) (*unstructured.Unstructured, error) {
				gets++
				obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, objects[ready])
				if err != nil {
					return nil, err
				}
				return obj.(*unstructured.Unstructured), nil
			},
			informerDenied: neverDenied,
			now:            time.Now,
		},
		patchWorkspace: func(_ context.Context, _ logicalcluster.Name, _ string, patch []byte, _ ...string) (*tenancyv1alpha1.Workspace, error) {
			patches++
			var written tenancyv1alpha1.Workspace
			if err := kjson.UnmarshalCaseSensitivePreserveInts(full, &written); err != nil {
				return nil, err
			}
			var p struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(patch, &p); err != nil {
				return nil, err
			}
			for k, v := range p.Metadata.Annotations {
				written.Annotations[k] = v
			}
			if patched = encoded[written.Annotations[mount.StatusAnnotationKey]]; patched == nil {
				var err error
				if patched, err = json.Marshal(&written); err != nil {
					return nil, err
				}
				encoded[written.Annotations[mount.StatusAnnotationKey]] = patched
			}
			written.ResourceVersion = fmt.Sprint(patches + 1000)
			return &written, nil
		},
	}
	ctx := context.Background()
	process := func() {
		key, _ := c.workspacesQueue.Get()
		if err := c.processWorkspace(ctx, key); err != nil {
			b.Fatal(err)
		}
		c.workspacesQueue.Done(key)
		c.workspacesQueue.Forget(key)
	}
	event := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: ws.Name, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster.String()},
	}}

	if fromCache {
		c.workspaces.cachedMountObject = caches.get
	}

	b.ReportAllocs()
	for b.Loop() {
		ready = !ready
		if fromCache {
			// The full-object informer's event: decoded from the watch,
			// trimmed, in its cache, to the handler.
			obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, objects[ready])
			if err != nil {
				b.Fatal(err)
			}
			mountVersion++
			obj.(*unstructured.Unstructured).SetResourceVersion(fmt.Sprint(mountVersion))
			trimmed, err := trimFullMountObject(obj)
			if err != nil {
				b.Fatal(err)
			}
			if err := mountStore.Update(trimmed); err != nil {
				b.Fatal(err)
			}
			c.enqueueMountObject(resource, trimmed)
		} else {
			c.enqueueMountObject(resource, event)
		}
		process()
		// The echo: the patched Workspace, as the informer delivers it
		// (decoded from the watch, trimmed, in the cache, to the handler).
		old, _, _ := indexer.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", ws.Name))
		written := &tenancyv1alpha1.Workspace{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, written); err != nil {
			b.Fatal(err)
		}
		written.ResourceVersion = fmt.Sprint(patches + 1000)
		TrimWorkspace(written, mount.Rule{})
		if err := indexer.Update(written); err != nil {
			b.Fatal(err)
		}
		c.handleWorkspace(old, written)
		for c.workspacesQueue.Len() > 0 {
			process()
		}
		for c.mountsQueue.Len() > 0 {
			key, _ := c.mountsQueue.Get()
			c.mountsQueue.Done(key)
		}
	}
	b.ReportMetric(float64(gets)/float64(b.N), "gets/op")
	b.ReportMetric(float64(patches)/float64(b.N), "patches/op")
}

// benchWorkspace is a mounted Workspace as kcp serves it, annotated.
func benchWorkspace(cluster logicalcluster.Name, name string) *tenancyv1alpha1.Workspace {
	created := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta: metav1.TypeMeta{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: "6d1f4e0a-8c2b-4b7e-a1f3-2e9d5c7b8a01", ResourceVersion: "1000", Generation: 1, CreationTimestamp: created,
			Annotations: map[string]string{
				logicalcluster.AnnotationKey:             cluster.String(),
				"experimental.tenancy.kcp.io/owner":      `{"username":"kcp-admin","groups":["system:kcp:admin","system:authenticated"]}`,
				"kcp.io/path":                            "root:org:" + name,
				"tenancy.kcp.io/workspace-type-internal": "root:universal",
			},
			Labels:     map[string]string{"tenancy.kcp.io/phase": "Ready"},
			Finalizers: []string{"core.kcp.io/logicalcluster"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tenancy.kcp.io/v1alpha1", Time: &created,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:mount":{".":{},"f:ref":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{}}}}}`)},
				{Manager: "workspacemounts", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tenancy.kcp.io/v1alpha1", Time: &created,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:workspacemounts.io/phase":{},"f:workspacemounts.io/status":{}}}}`)},
			},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:  &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"},
			Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}},
		},
		Status: tenancyv1alpha1.WorkspaceStatus{Phase: "Ready", Conditions: conditionsv1alpha1.Conditions{
			{Type: "WorkspaceScheduled", Status: "True", LastTransitionTime: created},
			{Type: "WorkspaceInitialized", Status: "True", LastTransitionTime: created},
		}},
	}
	status := mount.Status{Phase: mount.PhaseReady, Ready: true, URL: "https://kc.example/clusters/" + name, Reason: mount.ReasonMountReady,
		Message: "KubeCluster " + name + " (contrib.kcp.io/v1alpha1) is Ready.", MountRef: mount.Reference(ws.Spec.Mount.Reference), LastTransitionTime: created}
	ws.Annotations[mount.PhaseAnnotationKey] = string(status.Phase)
	ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
	return ws
}
