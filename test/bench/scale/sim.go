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
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	kjson "sigs.k8s.io/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/pagedlist"
	"github.com/workspacemounts/workspacemounts/server"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// sim is the plugin's process without kcp: the informers of each shard as
// server builds them (the same indexers, the same transform), the
// controller's indexers and mount objects' metadata informer of each, one
// virtual workspace store over every shard with its REST, and the metrics
// collector.
type sim struct {
	n, clusters int // per shard
	shards      []*simShard
	sources     []*fakeSource

	store *wsmregistry.Store
	rest  *wsmregistry.REST
	// listEncoder is the server's JSON encoder of lists (apiserver.ListEncoder).
	listEncoder runtime.Encoder

	// generation is the resourceVersion of the latest event sent.
	generation int
}

// simShard is what server runs for one shard (server/shards.go runShard).
type simShard struct {
	name string
	layout
	workspaces, logicalClusters, crds, bindings, schemas, mounts cache.SharedIndexInformer
	workspaceSource, mountSource                                 *fakeSource
	// handlers are the mount objects' and the index's registrations.
	handlers [2]cache.ResourceEventHandlerRegistration
}

func clusterIndexers() cache.Indexers { return server.CacheIndexers() }

// informer is a shard's informer of src's objects as server builds it:
// kcp's cluster-aware SharedIndexInformer listing through pagedlist.Trimmed,
// no resync, the transform.
func informer(src cache.ListerWatcher, obj runtime.Object, indexers cache.Indexers, transform cache.TransformFunc) (cache.SharedIndexInformer, error) {
	i := kcpinformers.NewSharedIndexInformer(pagedlist.Trimmed(src, transform), obj, 0, indexers)
	return i, i.SetTransform(transform)
}

// newSim builds the given number of shards, each of n synthetic mounted
// Workspaces in clusters logical clusters, their lists' JSON written in
// dir. Nothing runs until start.
func newSim(dir string, shards, n, clusters int, history bool) (*sim, error) {
	s := &sim{n: n, clusters: clusters, generation: n + clusters + 1}
	// The store of every shard, as server builds it (with its default rule:
	// spec.mount alone, as the Workspaces here).
	s.store = wsmregistry.NewStore(mount.Rule{})
	for k := range shards {
		name := "" // the one shard of --kubeconfig
		if shards > 1 {
			name = fmt.Sprintf("shard-%d", k)
		}
		shard, err := s.newShard(dir, name, layout{shard: k, n: n, clusters: clusters, history: history})
		if err != nil {
			return nil, err
		}
		if err := s.store.AddShard(name, shard.workspaces, shard.logicalClusters); err != nil {
			return nil, err
		}
		s.shards = append(s.shards, shard)
	}
	var err error
	if s.listEncoder, err = apiserver.ListEncoder(); err != nil {
		return nil, err
	}
	s.rest = wsmregistry.NewREST(s.store, func(context.Context, logicalcluster.Name, time.Duration) (bool, error) { return true, nil }).
		WithEncodedJSON(s.listEncoder.Identifier())
	metrics.Register()
	metrics.RegisterMountCollector(s, mount.Rule{})
	return s, nil
}

// newShard builds the informers of one shard over the objects of l.
func (s *sim) newShard(dir, name string, l layout) (*simShard, error) {
	shard := &simShard{name: name, layout: l}
	var err error
	add := func(c collection, obj runtime.Object, indexers cache.Indexers, transform cache.TransformFunc) (cache.SharedIndexInformer, *fakeSource) {
		if err != nil {
			return nil, nil
		}
		var src *fakeSource
		if src, err = newFakeSource(dir, c); err != nil {
			return nil, nil
		}
		s.sources = append(s.sources, src)
		var i cache.SharedIndexInformer
		i, err = informer(src, obj, indexers, transform)
		return i, src
	}
	trim := server.TrimForCache(mount.Rule{})
	shard.workspaces, shard.workspaceSource = add(collection{apiVersion: "tenancy.kcp.io/v1alpha1", kind: "WorkspaceList",
		resourceVersion: strconv.Itoa(l.n + l.clusters + 1), n: l.n, item: func(i int) any { return l.workspace(i, phaseOf(i)) },
		newList: func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} }}, &tenancyv1alpha1.Workspace{}, clusterIndexers(), trim)
	shard.logicalClusters, _ = add(collection{apiVersion: "core.kcp.io/v1alpha1", kind: "LogicalClusterList",
		resourceVersion: strconv.Itoa(l.clusters + 1), n: l.clusters, item: func(c int) any { return l.logicalCluster(c) },
		newList: func() runtime.Object { return &corev1alpha1.LogicalClusterList{} }}, &corev1alpha1.LogicalCluster{}, clusterIndexers(), trim)
	shard.crds, _ = add(collection{apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinitionList",
		resourceVersion: strconv.Itoa(l.clusters + 1), n: l.clusters, item: func(c int) any { return l.crd(c) },
		newList: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} }},
		&apiextensionsv1.CustomResourceDefinition{}, clusterIndexers(), trim)
	shard.bindings, _ = add(collection{apiVersion: "apis.kcp.io/v1alpha1", kind: "APIBindingList", resourceVersion: "1",
		newList: func() runtime.Object { return &apisv1alpha1.APIBindingList{} }}, &apisv1alpha1.APIBinding{}, clusterIndexers(), trim)
	shard.schemas, _ = add(collection{apiVersion: "apis.kcp.io/v1alpha1", kind: "APIResourceSchemaList", resourceVersion: "1",
		newList: func() runtime.Object { return &apisv1alpha1.APIResourceSchemaList{} }}, &apisv1alpha1.APIResourceSchema{}, clusterIndexers(), trim)
	// The controller's metadata informer of the mount objects
	// (controllers/workspacemounts/workspacemounts_mount_informers.go), with its transform.
	shard.mounts, shard.mountSource = add(collection{apiVersion: "meta.k8s.io/v1", kind: "PartialObjectMetadataList",
		resourceVersion: strconv.Itoa(l.n + 1), n: l.n, item: func(i int) any { return l.mountObject(i) },
		newList: func() runtime.Object { return &metav1.PartialObjectMetadataList{} }},
		&metav1.PartialObjectMetadata{}, cache.Indexers{}, workspacemounts.TrimMountObject)
	if err != nil {
		return nil, err
	}
	if shard.handlers[0], err = shard.mounts.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return nil, err
	}
	// The controller's index of the Workspaces by mount object, fed as its Workspace handler feeds it.
	mountObjects := workspacemounts.NewMountObjectIndex(mount.Rule{})
	if shard.handlers[1], err = shard.workspaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { mountObjects.Update(nil, obj.(*tenancyv1alpha1.Workspace)) },
		UpdateFunc: func(old, obj interface{}) {
			mountObjects.Update(old.(*tenancyv1alpha1.Workspace), obj.(*tenancyv1alpha1.Workspace))
		},
	}); err != nil {
		return nil, err
	}
	if err := workspacemounts.InstallIndexers(workspacemounts.Informers{
		Workspaces: shard.workspaces, CRDs: shard.crds, APIBindings: shard.bindings, APIResourceSchemas: shard.schemas,
	}, mount.Rule{}); err != nil {
		return nil, err
	}
	return shard, nil
}

// List lists the Workspaces of every shard, for the metrics collector (as
// server's Shards.List).
func (s *sim) List() []interface{} {
	var all []interface{}
	for _, shard := range s.shards {
		all = append(all, shard.workspaces.GetStore().List()...)
	}
	return all
}

// start runs the informers and waits until the store has synced: the
// initial list of everything.
func (s *sim) start(ctx context.Context) error {
	synced := []cache.InformerSynced{s.store.HasSynced}
	for _, shard := range s.shards {
		for _, i := range []cache.SharedIndexInformer{shard.workspaces, shard.logicalClusters, shard.crds, shard.bindings, shard.schemas, shard.mounts} {
			go i.RunWithContext(ctx)
			synced = append(synced, i.HasSynced)
		}
		for _, h := range shard.handlers {
			synced = append(synced, h.HasSynced)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	var errs []error
	for _, src := range s.sources {
		errs = append(errs, src.forget())
	}
	return errors.Join(errs...)
}

// encodedChange is one mount change as kcp's watches send it: the mount
// object's new metadata, then the Workspace with the controller's new
// annotations.
type encodedChange struct {
	mountObject, workspace []byte
}

// encodeChanges makes the events of m changes on the first shard,
// Workspace i flipping phase: kcp's work, done before anything is measured.
func (s *sim) encodeChanges(m int) ([]encodedChange, error) {
	l := s.shards[0].layout
	changes := make([]encodedChange, m)
	for i := range m {
		phase := string(mount.PhaseConnecting)
		if phaseOf(i) == phase {
			phase = string(mount.PhaseReady)
		}
		s.generation++
		obj := l.mountObject(i)
		obj.ResourceVersion = strconv.Itoa(s.generation)
		var err error
		if changes[i].mountObject, err = json.Marshal(obj); err != nil {
			return nil, err
		}
		s.generation++
		ws := l.workspace(i, phase)
		ws.ResourceVersion = strconv.Itoa(s.generation)
		if changes[i].workspace, err = json.Marshal(ws); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// send decodes a change's events, as client-go's watch does, and hands
// them to the first shard's informers.
func (s *sim) send(c encodedChange) error {
	obj := &metav1.PartialObjectMetadata{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(c.mountObject, obj); err != nil {
		return err
	}
	s.shards[0].mountSource.watcher.Modify(obj)
	ws := &tenancyv1alpha1.Workspace{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(c.workspace, ws); err != nil {
		return err
	}
	s.shards[0].workspaceSource.watcher.Modify(ws)
	return nil
}

// waitForLatest waits until the store serves the first shard's Workspace i
// at the latest resourceVersion sent: every change before it has gone
// through.
func (s *sim) waitForLatest(ctx context.Context, i int) error {
	cluster := s.shards[0].clusterOf(i)
	getCtx := clusterpath.WithTarget(ctx, clusterpath.Target{Path: cluster.Path(), Cluster: cluster})
	getCtx = genericapirequest.WithUser(getCtx, &user.DefaultInfo{Name: "bench"})
	for {
		obj, err := s.rest.Get(getCtx, workspaceName(i), &metav1.GetOptions{})
		if err != nil {
			return err
		}
		if obj.(interface{ GetResourceVersion() string }).GetResourceVersion() == strconv.Itoa(s.generation) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workspace %d never reached resourceVersion %d: %w", i, s.generation, ctx.Err())
		case <-time.After(200 * time.Microsecond):
		}
	}
}
