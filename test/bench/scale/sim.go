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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	kjson "sigs.k8s.io/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/server"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// fakeSource is a ListerWatcher serving a list from its JSON (decoded at
// every list, as client-go decodes kcp's answer), then a watch the
// simulation feeds.
type fakeSource struct {
	newList func() runtime.Object
	lock    sync.Mutex
	list    []byte
	watcher *watch.FakeWatcher
}

func newFakeSource(list runtime.Object, newList func() runtime.Object) (*fakeSource, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return &fakeSource{newList: newList, list: data, watcher: watch.NewFakeWithChanSize(1000, false)}, nil
}

func (s *fakeSource) List(metav1.ListOptions) (runtime.Object, error) {
	s.lock.Lock()
	data := s.list
	s.lock.Unlock()
	if data == nil {
		return nil, fmt.Errorf("listed twice: the simulation lists once")
	}
	obj := s.newList()
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (s *fakeSource) Watch(metav1.ListOptions) (watch.Interface, error) { return s.watcher, nil }

// IsWatchListSemanticsUnSupported makes the reflector list, then watch:
// kcp v0.28 does not stream lists.
func (*fakeSource) IsWatchListSemanticsUnSupported() bool { return true }

// forget drops the list's bytes once listed: the process does not keep them.
func (s *fakeSource) forget() {
	s.lock.Lock()
	defer s.lock.Unlock()
	s.list = nil
}

// sim is the plugin's process without kcp: the informers of one shard as
// server builds them (the same indexers, the same transform), the
// controller's indexers, the mount objects' metadata informer, the virtual
// workspace's store and REST, and the metrics collector.
type sim struct {
	n, clusters int

	workspaces, logicalClusters, crds, bindings, schemas, mounts cache.SharedIndexInformer
	sources                                                      []*fakeSource
	workspaceSource, mountSource                                 *fakeSource

	store *wsmregistry.Store
	rest  *wsmregistry.REST
	// listEncoder is the server's JSON encoder of lists (apiserver.ListEncoder).
	listEncoder runtime.Encoder

	// generation is the resourceVersion of the latest event sent.
	generation int
}

func clusterIndexers() cache.Indexers {
	return cache.Indexers{
		kcpcache.ClusterIndexName:             kcpcache.ClusterIndexFunc,
		kcpcache.ClusterAndNamespaceIndexName: kcpcache.ClusterAndNamespaceIndexFunc,
	}
}

// newSim builds the informers over n synthetic mounted Workspaces in
// clusters logical clusters. Nothing runs until start.
func newSim(n, clusters int) (*sim, error) {
	s := &sim{n: n, clusters: clusters, generation: n + clusters + 1}
	var err error
	informer := func(list, obj runtime.Object, newList func() runtime.Object) (cache.SharedIndexInformer, *fakeSource) {
		if err != nil {
			return nil, nil
		}
		var src *fakeSource
		if src, err = newFakeSource(list, newList); err != nil {
			return nil, nil
		}
		s.sources = append(s.sources, src)
		i := kcpinformers.NewSharedIndexInformer(src, obj, 0, clusterIndexers())
		err = i.SetTransform(server.TrimForCache(mount.Rule{}))
		return i, src
	}

	s.workspaces, s.workspaceSource = informer(workspaceList(n, clusters), &tenancyv1alpha1.Workspace{},
		func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} })
	s.logicalClusters, _ = informer(logicalClusterList(clusters), &corev1alpha1.LogicalCluster{},
		func() runtime.Object { return &corev1alpha1.LogicalClusterList{} })
	s.crds, _ = informer(crdList(clusters),
		&apiextensionsv1.CustomResourceDefinition{}, func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} })
	s.bindings, _ = informer(&apisv1alpha1.APIBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}},
		&apisv1alpha1.APIBinding{}, func() runtime.Object { return &apisv1alpha1.APIBindingList{} })
	s.schemas, _ = informer(&apisv1alpha1.APIResourceSchemaList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}},
		&apisv1alpha1.APIResourceSchema{}, func() runtime.Object { return &apisv1alpha1.APIResourceSchemaList{} })
	if err != nil {
		return nil, err
	}
	// The controller's metadata informer of the mount objects
	// (controllers/workspacemounts/workspacemounts_mount_informers.go), with its transform.
	s.mountSource, err = newFakeSource(mountObjectList(n, clusters), func() runtime.Object { return &metav1.PartialObjectMetadataList{} })
	if err != nil {
		return nil, err
	}
	s.sources = append(s.sources, s.mountSource)
	s.mounts = kcpinformers.NewSharedIndexInformer(s.mountSource, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	if err := s.mounts.SetTransform(workspacemounts.TrimMountObject); err != nil {
		return nil, err
	}
	if _, err := s.mounts.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return nil, err
	}

	if err := workspacemounts.InstallIndexers(workspacemounts.Informers{
		Workspaces: s.workspaces, CRDs: s.crds, APIBindings: s.bindings, APIResourceSchemas: s.schemas,
	}, mount.Rule{}); err != nil {
		return nil, err
	}
	// The store of a single shard, as server builds it for --kubeconfig
	// (with its default rule: spec.mount alone, as the Workspaces here).
	s.store = wsmregistry.NewStore(mount.Rule{})
	if err := s.store.AddShard("", s.workspaces, s.logicalClusters); err != nil {
		return nil, err
	}
	if s.listEncoder, err = apiserver.ListEncoder(); err != nil {
		return nil, err
	}
	s.rest = wsmregistry.NewREST(s.store, func(context.Context, logicalcluster.Name, time.Duration) (bool, error) { return true, nil }).
		WithEncodedJSON(s.listEncoder.Identifier())
	metrics.Register()
	metrics.RegisterMountCollector(s.workspaces.GetStore(), mount.Rule{})
	return s, nil
}

// start runs the informers and waits until the store has synced: the
// initial list of everything.
func (s *sim) start(ctx context.Context) error {
	for _, i := range []cache.SharedIndexInformer{s.workspaces, s.logicalClusters, s.crds, s.bindings, s.schemas, s.mounts} {
		go i.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.store.HasSynced, s.logicalClusters.HasSynced, s.crds.HasSynced, s.mounts.HasSynced) {
		return ctx.Err()
	}
	for _, src := range s.sources {
		src.forget()
	}
	return nil
}

// encodedChange is one mount change as kcp's watches send it: the mount
// object's new metadata, then the Workspace with the controller's new
// annotations.
type encodedChange struct {
	mountObject, workspace []byte
}

// encodeChanges makes the events of m changes, Workspace i flipping phase:
// kcp's work, done before anything is measured.
func (s *sim) encodeChanges(m int) ([]encodedChange, error) {
	changes := make([]encodedChange, m)
	for i := range m {
		phase := string(mount.PhaseConnecting)
		if phaseOf(i) == phase {
			phase = string(mount.PhaseReady)
		}
		s.generation++
		obj := mountObject(i, s.clusters)
		obj.ResourceVersion = strconv.Itoa(s.generation)
		var err error
		if changes[i].mountObject, err = json.Marshal(obj); err != nil {
			return nil, err
		}
		s.generation++
		ws := workspace(i, s.clusters, phase)
		ws.ResourceVersion = strconv.Itoa(s.generation)
		if changes[i].workspace, err = json.Marshal(ws); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// send decodes a change's events, as client-go's watch does, and hands
// them to the informers.
func (s *sim) send(c encodedChange) error {
	obj := &metav1.PartialObjectMetadata{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(c.mountObject, obj); err != nil {
		return err
	}
	s.mountSource.watcher.Modify(obj)
	ws := &tenancyv1alpha1.Workspace{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(c.workspace, ws); err != nil {
		return err
	}
	s.workspaceSource.watcher.Modify(ws)
	return nil
}

// waitForLatest waits until the store serves Workspace i at the latest
// resourceVersion sent: every change before it has gone through.
func (s *sim) waitForLatest(ctx context.Context, i int) error {
	cluster := clusterName(i % s.clusters)
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

// listTimes is one list at *, step by step.
type listTimes struct {
	storage, table, json, tableJSON time.Duration
	items, bytes, tableBytes        int
}

// list lists every WorkspaceMount at *, as JSON and as a meta.k8s.io/v1
// Table, in-process, as the virtual workspace does for a client asking for
// JSON and for kubectl get: REST.List (storage) and the server's encoder
// writing it (JSON), REST.List again (table) and REST.WriteTableJSON, what
// the server's encoder of the Table writes (table JSON).
// With verify, it also decodes what was written: every item, in both.
func (s *sim) list(ctx context.Context, verify bool) (listTimes, error) {
	ctx = clusterpath.WithTarget(ctx, clusterpath.Target{Wildcard: true})
	ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "bench"})
	var t listTimes
	began := time.Now()
	list, err := s.rest.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return t, err
	}
	t.storage = time.Since(began)
	began = time.Now()
	// Written as the server streams an answer: kept only to be verified.
	var listJSON, tableJSON bytes.Buffer
	listOut, tableOut := &countingWriter{}, &countingWriter{}
	if verify {
		listOut.keep, tableOut.keep = &listJSON, &tableJSON
	}
	if err := s.listEncoder.Encode(list, listOut); err != nil {
		return t, err
	}
	t.json, t.bytes = time.Since(began), listOut.n
	began = time.Now()
	tableList, err := s.rest.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return t, err
	}
	t.table = time.Since(began)
	began = time.Now()
	if err := s.rest.WriteTableJSON(tableOut, tableList, &metav1.TableOptions{}); err != nil {
		return t, err
	}
	t.tableJSON, t.tableBytes = time.Since(began), tableOut.n
	if !verify {
		return t, nil
	}
	var decoded struct {
		Items []json.RawMessage `json:"items"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(listJSON.Bytes(), &decoded); err != nil {
		return t, err
	}
	if err := json.Unmarshal(tableJSON.Bytes(), &decoded); err != nil {
		return t, err
	}
	if len(decoded.Items) != len(decoded.Rows) {
		return t, fmt.Errorf("a list at * had %d items, its Table %d rows", len(decoded.Items), len(decoded.Rows))
	}
	t.items = len(decoded.Rows)
	return t, nil
}

// countingWriter counts what is written to it, and keeps it if told where.
type countingWriter struct {
	n    int
	keep *bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.keep != nil {
		return w.keep.Write(p)
	}
	return len(p), nil
}

// scrape serves /metrics once, as Prometheus scrapes it.
func scrape(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	recorder := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(recorder, httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", http.NoBody))
	if recorder.Code != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %d", recorder.Code)
	}
	return time.Since(began), nil
}
