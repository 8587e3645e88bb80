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

package apiserver

import (
	"net/http"

	"k8s.io/apiserver/pkg/endpoints/filterlatency"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	clientrest "k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Config is what [New] builds the server from: the generic server's configuration, handler chain included, and the
// storage of WorkspaceMounts.
type Config struct {
	Generic *genericapiserver.Config
	Storage *wsmregistry.REST
}

// Config configures the server over deps. Tenants reach its port: no profiling, /debug/flags, /metrics or index
// (metrics are served on --metrics-bind-address, and their request path labels are bounded to this server's routes).
func (completed CompletedOptions) Config(deps Dependencies) (*Config, error) {
	o := &completed.Options
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = buildEffectiveVersion{utilcompatibility.DefaultBuildEffectiveVersion()}
	cfg.EnableProfiling, cfg.EnableMetrics, cfg.EnableIndex = false, false, false
	metrics.BoundRequestPathLabels(wsmv1alpha1.GroupName, wsmv1alpha1.SchemeGroupVersion.Version, wsmv1alpha1.Resource)
	apimetrics.Register()
	cfg.LoopbackClientConfig = &clientrest.Config{Host: "loopback-is-not-used"} // nothing calls itself back
	if err := o.SecureServing.ApplyTo(&cfg.SecureServing); err != nil {
		return nil, err
	}
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(wsmv1alpha1.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(scheme))
	cfg.OpenAPIConfig.Info.Title = "workspacemounts"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(wsmv1alpha1.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(scheme))
	cfg.OpenAPIV3Config.Info.Title = "workspacemounts"
	if err := applyAuthentication(o, &cfg.Authentication, cfg.SecureServing, deps.TokenReviewConfig); err != nil {
		return nil, err
	}
	cfg.Authorization.Authorizer = deps.Authorizer
	// A watch without timeoutSeconds lasts between half of --max-watch-timeout and all of it.
	cfg.MinRequestTimeout = int((o.MaxWatchTimeout / 2).Seconds())

	listEncoder, err := ListEncoder()
	if err != nil {
		return nil, err
	}
	storage := wsmregistry.NewREST(deps.Store, deps.Authorizer.Visible).WithShards(deps.Shards).WithEncodedJSON(listEncoder.Identifier()).
		WithMaxWatchTimeout(o.MaxWatchTimeout)
	tables, err := newFastTables(storage, codecs)
	if err != nil {
		return nil, err
	}
	userShares := newShares(o.Shares, deps.PathOf)
	cfg.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		if !deps.genericListsOnly {
			apiHandler = tables.ahead(apiHandler)
		}
		handler := withBufferedResponses(apiHandler)
		handler = withStaleWarnings(handler, deps.KCPLastContact, deps.Shards) // after authorization: on answers the user may read
		handler = filterlatency.TrackCompleted(handler)
		handler = withAuthorization(handler, c.Authorization.Authorizer, c.Serializer)
		handler = filterlatency.TrackStarted(handler, c.TracerProvider, "authorization")
		handler = withClusterResolution(handler, deps.GetWorkspace, deps.ClustersSynced)
		handler = withReadOnly(handler)
		handler = withUserShares(handler, userShares)
		handler = genericapiserver.DefaultBuildHandlerChainFromImpersonationToAuthz(handler, c)
		handler = genericapiserver.DefaultBuildHandlerChainFromStartToBeforeImpersonation(handler, c)
		return withMountHopsRefused(withClosingRefusals(withClusterPath(handler), c.Authentication.RequestHeaderConfig))
	}
	return &Config{Generic: cfg, Storage: storage}, nil
}
