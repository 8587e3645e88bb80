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

// Package apiserver serves the workspacemounts virtual workspace: a read-only,
// Kubernetes-style API server built on k8s.io/apiserver (the kcp fork), in the
// layout of k8s.io/sample-apiserver, reached at
// /services/workspacemounts/clusters/<cluster or *>/.
//
// The handler chain is the generic one with these additions: outermost, the
// cluster path is parsed and cut off (so discovery, OpenAPI and the resource
// look as on any API server); after authentication, a user over their share
// of requests in flight or watches is answered 429 (withUserShares), writes
// 405, and a workspace path is resolved to its logical cluster; then the
// authorizer asks kcp (package authorization; withAuthorization answers a
// review that failed 503 with a generic message, one over the user's review
// turns 429); the stale warnings come after it, on answers the user may read.
// TokenReviews of tokens not known yet take turns of their own, and a token
// kcp refused is remembered in a bounded cache (tokenReviews). A request
// answered 401 or 429 ends its connection (withClosingRefusals), but on the
// front-proxy's connections. A request carrying kcp's X-Kcp-Mount-Hops is
// refused before all that (withMountHopsRefused): this is never a mount target.
//
// A user's shares are counted by the identity kcp knows (name and groups,
// authorization.FairnessKey), or a ServiceAccount's by its tenant, not by token. k8s.io/apiserver's priority and
// fairness (APF) was considered and not used: it is configured by
// FlowSchema and PriorityLevelConfiguration objects read through informers
// of a flowcontrol.apiserver.k8s.io client, which this server neither serves
// nor has a kube-apiserver to read from, and it shares the server's seats,
// while what one tenant's load costs another here is kcp's reviews (shares.go).
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/endpoints/filterlatency"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/apiserver/pkg/warning"
	webhooktoken "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes"
	clientrest "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/utils/clock"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
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
	utilruntimeMust(wsmv1alpha1.AddToScheme(scheme))
	// The unversioned types every API server answers with.
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

// Dependencies are what the server reads: the WorkspaceMount store, kcp's
// answers on who may see what, Workspaces to resolve paths, whether the
// cache of the shard's logical clusters has synced, and the rest config
// TokenReviews go through.
type Dependencies struct {
	Store          *wsmregistry.Store
	Authorizer     *authorization.Authorizer
	GetWorkspace   clusterpath.WorkspaceGetter
	ClustersSynced func() bool
	// TokenReviewConfig reaches kcp (a /clusters/<name> URL) with the right to create TokenReviews.
	TokenReviewConfig *clientrest.Config
	// KCPLastContact is how long ago kcp last answered the process (false:
	// never). Answers say when they may be stale.
	KCPLastContact func() (time.Duration, bool)
	// Shards, for a sharded kcp (nil with one shard): when each shard
	// served last answered. While one has not for
	// wsmregistry.StaleAfter, answers carry a warning naming it, and the
	// SHARD column marks its rows.
	Shards wsmregistry.ShardContacts
	// PathOf names the tenant a ServiceAccount's shares are counted against
	// (authorization.FairnessKey), from the shards' LogicalCluster caches;
	// nil: each logical cluster is a tenant of its own.
	PathOf tenant.PathOf

	// genericListsOnly leaves every list to the generic handler, without
	// fastTables: what tests compare its answers with.
	genericListsOnly bool
}

// buildEffectiveVersion is the Kubernetes library's effective version (what
// its API machinery and feature gates go by) that answers /version with this
// build of workspacemounts (pkg/version) instead of the library's.
type buildEffectiveVersion struct {
	basecompatibility.EffectiveVersion
}

// Info is what /version answers.
func (buildEffectiveVersion) Info() *apimachineryversion.Info {
	info := version.Get().APIServer()
	return &info
}

// New builds the server from completed options. It does not listen until Run.
func New(completed CompletedOptions, deps Dependencies) (*genericapiserver.GenericAPIServer, error) {
	o := &completed.Options
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = buildEffectiveVersion{utilcompatibility.DefaultBuildEffectiveVersion()}
	// Tenants reach this port: no profiling, /debug/flags, /metrics or index
	// here (metrics are served on --metrics-bind-address); the request
	// metrics are still recorded for that listener.
	cfg.EnableProfiling = false
	cfg.EnableMetrics = false
	cfg.EnableIndex = false
	// What a client's path puts in a label is bounded to this server's routes.
	metrics.BoundRequestPathLabels(wsmv1alpha1.GroupName, wsmv1alpha1.SchemeGroupVersion.Version, wsmv1alpha1.Resource)
	apimetrics.Register()
	// Nothing here calls itself back; the generic server only wants a config to exist.
	cfg.LoopbackClientConfig = &clientrest.Config{Host: "loopback-is-not-used"}
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
	apiGroup := genericapiserver.NewDefaultAPIGroupInfo(wsmv1alpha1.GroupName, scheme, metav1.ParameterCodec, codecs)
	listEncoder, err := ListEncoder()
	if err != nil {
		return nil, err
	}
	// A watch without timeoutSeconds lasts between half of
	// --max-watch-timeout and all of it, as kube-apiserver draws it from
	// --min-request-timeout; the storage ends any other at the bound too.
	cfg.MinRequestTimeout = int((o.MaxWatchTimeout / 2).Seconds())
	storage := wsmregistry.NewREST(deps.Store, deps.Authorizer.Visible).WithShards(deps.Shards).WithEncodedJSON(listEncoder.Identifier()).
		WithMaxWatchTimeout(o.MaxWatchTimeout)
	tables, err := newFastTables(storage, apiGroup.NegotiatedSerializer)
	if err != nil {
		return nil, err
	}
	userShares := newShares(o.Shares, deps.PathOf)
	cfg.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		if !deps.genericListsOnly {
			apiHandler = tables.ahead(apiHandler)
		}
		handler := withBufferedResponses(apiHandler)
		// Warnings after authorization: only answers the user may read
		// name shards or tell how long kcp has been silent.
		handler = withStaleWarning(handler, deps.KCPLastContact)
		handler = withStaleShardWarnings(handler, deps.Shards)
		handler = filterlatency.TrackCompleted(handler)
		handler = withAuthorization(handler, c.Authorization.Authorizer, c.Serializer)
		handler = filterlatency.TrackStarted(handler, c.TracerProvider, "authorization")
		handler = withClusterResolution(handler, deps.GetWorkspace, deps.ClustersSynced)
		handler = withReadOnly(handler)
		handler = withUserShares(handler, userShares)
		handler = genericapiserver.DefaultBuildHandlerChainFromImpersonationToAuthz(handler, c)
		handler = genericapiserver.DefaultBuildHandlerChainFromStartToBeforeImpersonation(handler, c)
		// Whatever refuses a request (401, 429), the connection ends with it
		// (refusals.go). Outermost: a request a kcp mount proxy forwarded is
		// refused before anything reads it (mounthops.go).
		return withMountHopsRefused(withClosingRefusals(withClusterPath(handler), c.Authentication.RequestHeaderConfig))
	}

	server, err := cfg.Complete(nil).New(Name, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	apiGroup.VersionedResourcesStorageMap[wsmv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		wsmv1alpha1.Resource: storage,
	}
	if err := server.InstallAPIGroup(&apiGroup); err != nil {
		return nil, err
	}
	if err := server.AddReadyzChecks(healthz.NamedCheck("workspace-cache-synced", func(*http.Request) error {
		if !deps.Store.HasSynced() {
			return fmt.Errorf("the Workspace cache has not synced yet")
		}
		return nil
	}), healthz.NamedCheck("logical-cluster-cache-synced", func(*http.Request) error {
		if !deps.ClustersSynced() {
			return fmt.Errorf("the LogicalCluster cache has not synced yet")
		}
		return nil
	})); err != nil {
		return nil, err
	}
	return server, nil
}

// ListEncoder is the encoder the handlers write lists, objects and watch
// events answered as JSON with (responsewriters.WriteObjectNegotiated:
// EncoderForVersion of the serializer for application/json, in this API's
// version): the store's JSON is its output (wsmregistry.REST.WithEncodedJSON).
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

// applyAuthentication is DelegatingAuthenticationOptions.ApplyTo without
// anonymous requests (they get 401), with kcp's TokenReview reached
// through a logical cluster, and without the groups kcp's front-proxy never
// forwards on the request-header path (frontProxyGroupFilter).
func applyAuthentication(o *Options, info *genericapiserver.AuthenticationInfo, serving *genericapiserver.SecureServingInfo, tokenReviewConfig *clientrest.Config) error {
	authnConfig := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 o.TokenCacheTTL,
		WebhookRetryBackoff:      genericapiserveroptions.DefaultAuthWebhookRetryBackoff(),
		TokenAccessReviewTimeout: 10 * time.Second,
	}
	var tokens authenticator.Token
	if tokenReviewConfig != nil {
		client, err := kubernetes.NewForConfig(tokenReviewConfig)
		if err != nil {
			return err
		}
		// What authnConfig.New builds for a TokenAccessReviewClient, with
		// tokenReviews between the cache and the webhook, and failures
		// remembered there (bounded), not in the cache (unbounded).
		webhook, err := webhooktoken.NewFromInterface(client.AuthenticationV1(), nil, *authnConfig.WebhookRetryBackoff, authnConfig.TokenAccessReviewTimeout,
			webhooktoken.AuthenticatorMetrics{RecordRequestTotal: authenticatorfactory.RecordRequestTotal, RecordRequestLatency: authenticatorfactory.RecordRequestLatency})
		if err != nil {
			return err
		}
		limited := newTokenReviews(webhook, o.TokenReviewConcurrency, o.FailedTokenCacheSize, tokenReviewWait, o.TokenCacheTTL, clock.RealClock{})
		tokens = tokencache.New(limited, false, o.TokenCacheTTL, 0)
	}
	if o.ClientCert.ClientCA != "" {
		provider, err := o.ClientCert.GetClientCAContentProvider()
		if err != nil {
			return fmt.Errorf("loading --client-ca-file: %w", err)
		}
		authnConfig.ClientCertificateCAContentProvider = provider
		if err := info.ApplyClientCert(provider, serving); err != nil {
			return err
		}
	}
	var authenticators []authenticator.Request
	if o.RequestHeader.ClientCAFile != "" {
		requestHeader, err := o.RequestHeader.ToAuthenticationRequestHeaderConfig()
		if err != nil {
			return fmt.Errorf("loading --requestheader-client-ca-file: %w", err)
		}
		info.RequestHeaderConfig = requestHeader
		if err := info.ApplyClientCert(requestHeader.CAContentProvider, serving); err != nil {
			return err
		}
		// What authnConfig.New builds for a RequestHeaderConfig (first, as
		// there), without the groups kcp's front-proxy never forwards.
		authenticators = append(authenticators, frontProxyGroupFilter{requestHeader: headerrequest.NewDynamicVerifyOptionsSecure(
			requestHeader.CAContentProvider.VerifyOptions, requestHeader.AllowedClientNames,
			requestHeader.UsernameHeaders, requestHeader.UIDHeaders, requestHeader.GroupHeaders, requestHeader.ExtraHeaderPrefixes,
		)})
	}
	if authnConfig.ClientCertificateCAContentProvider != nil {
		certificates, _, err := authnConfig.New()
		if err != nil {
			return err
		}
		authenticators = append(authenticators, certificates)
	}
	if tokens != nil {
		authenticators = append(authenticators, bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
	}
	if len(authenticators) == 0 {
		return errors.New("no authentication method configured")
	}
	info.Authenticator = group.NewAuthenticatedGroupAdder(unionauth.New(authenticators...))
	return nil
}

// tokenReviewWait is how long a request with a token not known yet waits
// for a turn of --authentication-token-review-concurrency.
const tokenReviewWait = 5 * time.Second

// withClusterPath is the outermost filter: it accepts only
// /services/workspacemounts/clusters/<cluster>/... (and the health endpoints),
// puts the target cluster in the context and cuts the prefix off, so that
// the rest of the chain sees /apis, /openapi/v3 and so on.
func withClusterPath(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target, rest, ok, err := clusterpath.Parse(req.URL.Path)
		switch {
		case !ok && isHealthPath(req.URL.Path):
			handler.ServeHTTP(w, req)
			return
		case !ok:
			responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{}, req.URL.Path), codecs, schema.GroupVersion{}, w, req)
			return
		case err != nil:
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(err.Error()), codecs, schema.GroupVersion{}, w, req)
			return
		}
		ctx := clusterpath.WithTarget(req.Context(), target)
		// Parts of kcp's fork of the generic server want a cluster in the
		// context; the real one is in clusterpath's key. The OpenAPI v2
		// document is served only without one, as in kcp's own virtual workspaces.
		if rest != "/openapi/v2" {
			ctx = genericapirequest.WithCluster(ctx, genericapirequest.Cluster{Name: "workspacemounts"})
		}
		req = req.Clone(ctx)
		req.URL.Path = rest
		req.URL.RawPath = ""
		handler.ServeHTTP(w, req)
	})
}

func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// withReadOnly answers every request but get, list and watch with 405.
func withReadOnly(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if ok && info.IsResourceRequest && info.Verb != "get" && info.Verb != "list" && info.Verb != "watch" {
			gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
			responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(gr, info.Verb), codecs, schema.GroupVersion{}, w, req)
			return
		}
		if ok && !info.IsResourceRequest && req.Method != http.MethodGet && req.Method != http.MethodHead {
			responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(req.Method)), codecs, schema.GroupVersion{}, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// withClusterResolution resolves a workspace path to its logical cluster,
// after authentication, so that only authenticated users learn anything. A
// path that leads nowhere is passed on unresolved: the authorizer then denies
// it exactly as it denies a cluster the user may not see, so that a tenant
// cannot tell the two apart.
func withClusterResolution(handler http.Handler, getWorkspace clusterpath.WorkspaceGetter, clustersSynced func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target, ok := clusterpath.From(req.Context())
		if !ok {
			handler.ServeHTTP(w, req)
			return
		}
		if !clustersSynced() {
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable("the logical cluster cache has not synced yet"), codecs, schema.GroupVersion{}, w, req)
			return
		}
		resolved, err := clusterpath.Resolve(target, getWorkspace)
		switch {
		case errors.Is(err, clusterpath.ErrNotFound):
			resolved = target // no cluster: denied by the authorizer
		case err != nil:
			responsewriters.ErrorNegotiated(apierrors.NewInternalError(err), codecs, schema.GroupVersion{}, w, req)
			return
		}
		handler.ServeHTTP(w, req.WithContext(clusterpath.WithTarget(req.Context(), resolved)))
	})
}

// withStaleWarning adds a warning (kubectl prints it) to every answer while
// kcp has not answered for staleAfter: the answer is the last known state.
func withStaleWarning(handler http.Handler, lastContact func() (time.Duration, bool)) http.Handler {
	if lastContact == nil {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if since, ok := lastContact(); ok && since >= wsmregistry.StaleAfter {
			warning.AddWarning(r.Context(), "", fmt.Sprintf("kcp has not answered for %s: this is the last known state", since.Round(time.Second)))
		}
		handler.ServeHTTP(w, r)
	})
}

// withStaleShardWarnings adds a warning per shard that has not answered for
// wsmregistry.StaleAfter: its WorkspaceMounts are the last known state.
func withStaleShardWarnings(handler http.Handler, shards wsmregistry.ShardContacts) http.Handler {
	if shards == nil {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range shards.Names() {
			if since, unreachable := wsmregistry.UnreachableShard(shards, name); unreachable {
				silence := "has not answered yet"
				if since > 0 {
					silence = "has not answered for " + since.String()
				}
				warning.AddWarning(r.Context(), "", fmt.Sprintf("shard %s %s: its WorkspaceMounts are the last known state", name, silence))
			}
		}
		handler.ServeHTTP(w, r)
	})
}

// Run serves until ctx is done.
func Run(ctx context.Context, server *genericapiserver.GenericAPIServer) error {
	return server.PrepareRun().RunWithContext(ctx)
}
