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

// Package apiserver serves the workspacemounts virtual workspace at /services/workspacemounts/clusters/<cluster or *>/:
// a read-only API server on k8s.io/apiserver in k8s.io/sample-apiserver's shape, [Options] -> [CompletedOptions.Config]
// -> [New] -> [Run]. Its handler chain, shares and refusals: docs/design/virtual-apiserver.md.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	clientrest "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Name names the virtual workspace in logs and metrics.
const Name = "workspacemounts-virtual-workspace"

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func init() {
	utilruntime.Must(wsmv1alpha1.AddToScheme(scheme))
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

// Dependencies are what the server reads besides its options.
type Dependencies struct {
	Store          *wsmregistry.Store
	Authorizer     *authorization.Authorizer
	GetWorkspace   clusterpath.WorkspaceGetter
	ClustersSynced func() bool
	// TokenReviewConfig reaches kcp (a /clusters/<name> URL) with the right to create TokenReviews.
	TokenReviewConfig *clientrest.Config
	// KCPLastContact is how long ago kcp last answered the process (false: never).
	KCPLastContact func() (time.Duration, bool)
	// Shards are when each shard last answered, for the stale shard warnings; nil with one shard.
	Shards wsmregistry.ShardContacts
	// PathOf names a ServiceAccount's tenant for [authorization.FairnessKey]; nil: each cluster is one.
	PathOf tenant.PathOf

	// genericListsOnly leaves every list to the generic handler, without fastTables: what tests compare with.
	genericListsOnly bool
}

// buildEffectiveVersion answers /version with this build of workspacemounts instead of the library's.
type buildEffectiveVersion struct {
	basecompatibility.EffectiveVersion
}

// Info is what /version answers.
func (buildEffectiveVersion) Info() *apimachineryversion.Info {
	info := version.Get().APIServer()
	return &info
}

// New builds the server from completed options. It does not listen until [Run].
func New(completed CompletedOptions, deps Dependencies) (*genericapiserver.GenericAPIServer, error) {
	cfg, err := completed.Config(deps)
	if err != nil {
		return nil, err
	}
	server, err := cfg.Generic.Complete(nil).New(Name, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	apiGroup := genericapiserver.NewDefaultAPIGroupInfo(wsmv1alpha1.GroupName, scheme, metav1.ParameterCodec, codecs)
	apiGroup.VersionedResourcesStorageMap[wsmv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{wsmv1alpha1.Resource: cfg.Storage}
	if err := server.InstallAPIGroup(&apiGroup); err != nil {
		return nil, err
	}
	if err := server.AddReadyzChecks(
		syncedCheck("workspace-cache-synced", "Workspace", deps.Store.HasSynced),
		syncedCheck("logical-cluster-cache-synced", "LogicalCluster", deps.ClustersSynced)); err != nil {
		return nil, err
	}
	return server, nil
}

func syncedCheck(name, kind string, synced func() bool) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error {
		if !synced() {
			return fmt.Errorf("the %s cache has not synced yet", kind)
		}
		return nil
	})
}

// Run serves until ctx is done.
func Run(ctx context.Context, server *genericapiserver.GenericAPIServer) error {
	return server.PrepareRun().RunWithContext(ctx)
}

// ListEncoder is the encoder the handlers write JSON answers with, whose output the store's JSON is
// ([wsmregistry.REST.WithEncodedJSON]).
func ListEncoder() (runtime.Encoder, error) {
	return jsonEncoder(codecs, wsmv1alpha1.SchemeGroupVersion)
}

func jsonEncoder(serializers runtime.NegotiatedSerializer, version schema.GroupVersion) (runtime.Encoder, error) {
	info, ok := runtime.SerializerInfoForMediaType(serializers.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, errors.New("the serializers have no application/json")
	}
	return serializers.EncoderForVersion(info.Serializer, version), nil
}
