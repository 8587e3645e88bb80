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

// Package server runs workspacemounts: the informers across all logical
// clusters of a kcp shard, the controller that writes mount status
// annotations, and the virtual workspace that serves them, all in one process.
package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"
	tenancyv1alpha1listers "github.com/kcp-dev/sdk/client/listers/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/kubeconfig"
	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Run runs what the options ask for until ctx is done or a part fails. kcp
// going away is not a failure: the parts wait for it and go on from what
// they last knew.
func Run(ctx context.Context, o *Options) error {
	loader, err := kubeconfig.Load(o.Kubeconfig, o.Context)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	contact := kcpcontact.New()
	cfg := o.restConfig(loader, contact)
	var tokenReviewLoader *kubeconfig.Loader
	if o.RunVirtualWorkspace && o.VirtualWorkspace.AuthenticationKubeconfig != "" {
		if tokenReviewLoader, err = kubeconfig.Load(o.VirtualWorkspace.AuthenticationKubeconfig, ""); err != nil {
			return fmt.Errorf("--authentication-kubeconfig: %w", err)
		}
	}
	probe, err := kcpProbe(cfg)
	if err != nil {
		return err
	}
	// When kcp answers right away, --workspace-url beside kcp's in-tree
	// controller is refused before anything is served or logged: one line.
	// Otherwise the controller asks again once kcp answers.
	routing, routingKnown, err := o.routingOptions(ctx, cfg, false)
	if err != nil {
		return err
	}
	metrics.Register()
	group, ctx := errgroup.WithContext(ctx)

	// Health and metrics first: the process is alive (and says why it is not
	// ready) while it waits for kcp.
	var notReady atomic.Pointer[string]
	setNotReady := func(reason string) { notReady.Store(&reason) }
	setNotReady("waiting for kcp to answer")
	if o.MetricsBindAddress != "0" {
		group.Go(func() error {
			return serveMetrics(ctx, o.MetricsBindAddress, func() error {
				if reason := notReady.Load(); reason != nil {
					return errors.New(*reason)
				}
				return nil
			})
		})
	}
	// Rotated credentials are picked up without a restart.
	group.Go(func() error { loader.Run(ctx, kubeconfig.DefaultReloadInterval); return nil })
	if tokenReviewLoader != nil {
		group.Go(func() error { tokenReviewLoader.Run(ctx, kubeconfig.DefaultReloadInterval); return nil })
	}
	group.Go(func() error { contact.Run(ctx, contactProbeInterval, probe); return nil })

	group.Go(func() error {
		tenancyIdentity, err := waitForTenancyIdentity(ctx, cfg)
		if err != nil {
			return nil //nolint:nilerr // it fails only when ctx is done: stopping
		}
		if !routingKnown {
			if routing, _, err = o.routingOptions(ctx, cfg, true); err != nil {
				return err
			}
		}
		return run(ctx, o, cfg, tenancyIdentity, routing, tokenReviewLoader, contact, setNotReady, func() { notReady.Store(nil) })
	})
	if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// contactProbeInterval is how long kcp may go without answering before a
// probe asks it (kcpcontact).
const contactProbeInterval = 10 * time.Second

// run starts the informers, the virtual workspace and the controller once
// kcp has answered, and returns when ctx is done or a part fails.
func run(ctx context.Context, o *Options, cfg *rest.Config, tenancyIdentity string, routing workspacemounts.RoutingOptions,
	tokenReviewLoader *kubeconfig.Loader, contact *kcpcontact.Tracker,
	setNotReady func(reason string), setReady func()) error {
	logger := klog.FromContext(ctx)
	kcpClient, err := kcpclientset.NewForConfig(clients.WithWildcardIdentities(cfg, map[string]string{tenancyv1alpha1.SchemeGroupVersion.Group: tenancyIdentity}))
	if err != nil {
		return err
	}

	// Workspaces are read by both parts; CRDs, bindings and schemas only by
	// the controller, LogicalClusters only by the virtual workspace.
	kcpInformers := kcpinformers.NewSharedInformerFactoryWithOptions(kcpClient, 0, kcpinformers.WithTransform(trimForCache))
	workspaceInformer := kcpInformers.Tenancy().V1alpha1().Workspaces().Informer()
	metrics.RegisterMountCollector(workspaceInformer.GetStore())
	synced := []cache.InformerSynced{workspaceInformer.HasSynced}
	var starters []func(<-chan struct{})
	starters = append(starters, kcpInformers.Start)

	group, ctx := errgroup.WithContext(ctx)
	var runController func(context.Context) error
	if o.RunController {
		apiExtensionsClient, err := kcpapiextensionsclientset.NewForConfig(cfg)
		if err != nil {
			return err
		}
		dynamicClient, err := kcpdynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		metadataClient, err := kcpmetadata.NewForConfig(cfg)
		if err != nil {
			return err
		}
		apiExtensionsInformers := kcpapiextensionsinformers.NewSharedInformerFactoryWithOptions(apiExtensionsClient, 0, kcpapiextensionsinformers.WithTransform(trimForCache))
		informers := workspacemounts.Informers{
			Workspaces:         workspaceInformer,
			CRDs:               apiExtensionsInformers.Apiextensions().V1().CustomResourceDefinitions().Informer(),
			APIBindings:        kcpInformers.Apis().V1alpha1().APIBindings().Informer(),
			APIResourceSchemas: kcpInformers.Apis().V1alpha1().APIResourceSchemas().Informer(),
		}
		if err := workspacemounts.InstallIndexers(informers); err != nil {
			return err
		}
		controllerClients := workspacemounts.Clients{KCP: kcpClient, Dynamic: dynamicClient, Metadata: metadataClient}
		controllerOptions := workspacemounts.Options{MaxMountInformers: o.MaxMountInformers, Routing: routing}
		synced = append(synced, informers.CRDs.HasSynced, informers.APIBindings.HasSynced, informers.APIResourceSchemas.HasSynced)
		starters = append(starters, apiExtensionsInformers.Start)
		// A new controller each run (each term as leader): it starts from
		// the informer caches and reconciles every Workspace once.
		runController = func(ctx context.Context) error {
			controller, err := workspacemounts.NewController(controllerClients, informers, controllerOptions)
			if err != nil {
				return err
			}
			return controller.Start(ctx, o.WorkspaceWorkers)
		}
	}

	if o.RunVirtualWorkspace {
		logicalClusterInformer := kcpInformers.Core().V1alpha1().LogicalClusters().Informer()
		server, store, err := newVirtualWorkspace(ctx, o, cfg, tokenReviewLoader, contact, workspaceInformer, logicalClusterInformer)
		if err != nil {
			return fmt.Errorf("virtual workspace: %w", err)
		}
		synced = append(synced, store.HasSynced, logicalClusterInformer.HasSynced)
		// Serving starts before the caches sync: until then, /readyz fails and reads get 503.
		group.Go(func() error { return apiserver.Run(ctx, server) })
	}

	setNotReady("the informer caches have not synced yet")
	for _, start := range starters {
		start(ctx.Done())
	}
	group.Go(func() error {
		began := time.Now()
		if !cache.WaitForNamedCacheSync(workspacemounts.ControllerName, ctx.Done(), synced...) {
			return nil // stopping
		}
		logger.Info("informers synced", "duration", time.Since(began).Round(time.Millisecond), "workspaces", len(workspaceInformer.GetStore().ListKeys()))
		// Ready from now on, also while kcp is unreachable: the virtual
		// workspace serves what it last knew (see docs/deployment.md).
		setReady()
		switch {
		case runController == nil:
			return nil
		case o.LeaderElection.Enabled:
			// A client of its own, so that no other traffic can delay a renewal.
			leaseClient, err := kcpkubernetesclientset.NewForConfig(rest.CopyConfig(cfg))
			if err != nil {
				return err
			}
			return runAsLeader(ctx, o, leaseClient, runController)
		default:
			return runController(ctx)
		}
	})
	return group.Wait()
}

// restConfig is the config every client of kcp starts from: the shard base
// URL, the loader's credentials (which follow the files), the rate limit,
// and the contact tracker seeing every answer.
func (o *Options) restConfig(loader *kubeconfig.Loader, contact *kcpcontact.Tracker) *rest.Config {
	cfg := loader.Config()
	cfg.Host = baseURL(cfg.Host)
	cfg.QPS = o.QPS
	cfg.Burst = o.Burst
	cfg.UserAgent = "workspacemounts"
	cfg.Wrap(contact.Wrap)
	return cfg
}

// kcpProbe is one cheap request to kcp, GET /version.
func kcpProbe(cfg *rest.Config) (func(context.Context) error, error) {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	}, nil
}

// waitForTenancyIdentity reads the identity under which kcp serves
// Workspaces across clusters, retrying with backoff (1s doubling to 30s)
// while kcp does not answer or refuses, until ctx is done.
func waitForTenancyIdentity(ctx context.Context, cfg *rest.Config) (string, error) {
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	for attempt := 1; ; attempt++ {
		identity, err := clients.TenancyIdentity(ctx, cfg)
		if err == nil {
			if attempt > 1 {
				logger.Info("kcp answered, starting", "attempts", attempt)
			}
			return identity, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		delay := backoff.Step()
		logger.Error(err, "waiting for kcp: cannot list Workspaces across clusters yet, retrying", "server", cfg.Host, "attempt", attempt, "retryIn", delay.Round(100*time.Millisecond))
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(delay):
		}
	}
}

// routingAttemptTimeout bounds one reading of kcp's /metrics: the first
// comes before the health endpoints are served.
const routingAttemptTimeout = 5 * time.Second

// routingOptions are --workspace-condition and --workspace-url, and whether
// kcp's in-tree mounts controller runs on the shard, which is asked when
// either is on (known tells that it was): --workspace-url is refused beside
// it. With retry, kcp is asked again with backoff while it does not answer;
// without, once. When kcp refuses to tell (no right to read /metrics), the
// in-tree controller is taken to run, which is the safe answer for the
// condition.
func (o *Options) routingOptions(ctx context.Context, cfg *rest.Config, retry bool) (routing workspacemounts.RoutingOptions, known bool, err error) {
	routing = workspacemounts.RoutingOptions{WorkspaceCondition: o.WorkspaceCondition, WorkspaceURL: o.WorkspaceURL}
	if !routing.WorkspaceCondition && !routing.WorkspaceURL {
		return routing, true, nil
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return routing, false, err
	}
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, routingAttemptTimeout)
		runs, err := workspacemounts.InTreeMountsControllerRuns(attemptCtx, client.Discovery().RESTClient())
		cancel()
		switch {
		case err == nil:
			routing.InTreeMountsController = runs
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			if routing.WorkspaceURL {
				return routing, false, fmt.Errorf("--workspace-url needs to know that kcp's in-tree mounts controller does not run on the shard: %w", err)
			}
			logger.Error(err, "cannot tell whether kcp's in-tree mounts controller runs; taken to run: a mount that is Ready without URL gets condition "+mount.ConditionType+" Unknown, not False")
			routing.InTreeMountsController = true
		case ctx.Err() != nil:
			return routing, false, ctx.Err()
		case !retry:
			return routing, false, nil
		default:
			delay := backoff.Step()
			logger.Error(err, "waiting for kcp's /metrics, retrying", "retryIn", delay.Round(100*time.Millisecond))
			select {
			case <-ctx.Done():
				return routing, false, ctx.Err()
			case <-time.After(delay):
			}
			continue
		}
		if routing.InTreeMountsController && routing.WorkspaceURL {
			return routing, false, workspacemounts.InTreeConflict()
		}
		if routing.WorkspaceURL && !routing.WorkspaceCondition {
			logger.Info("--workspace-url without --workspace-condition: a mount that is not ready keeps its URL and takes traffic, as with kcp's in-tree mounts controller")
		}
		logger.Info("routing options", "workspaceCondition", routing.WorkspaceCondition, "workspaceURL", routing.WorkspaceURL,
			"inTreeMountsController", routing.InTreeMountsController)
		return routing, true, nil
	}
}

// newVirtualWorkspace builds the virtual workspace server over the Workspace
// and LogicalCluster informers. Its SubjectAccessReviews go through a client
// of their own, rate-limited by --authorization-qps, apart from the
// controller's writes and the Lease.
func newVirtualWorkspace(ctx context.Context, o *Options, cfg *rest.Config, tokenReviewLoader *kubeconfig.Loader, contact *kcpcontact.Tracker,
	workspaceInformer, logicalClusterInformer cache.SharedIndexInformer) (*genericapiserver.GenericAPIServer, *wsmregistry.Store, error) {
	store, err := wsmregistry.NewStore(workspaceInformer)
	if err != nil {
		return nil, nil, err
	}
	store.StopWatchesWhenDone(ctx)
	tokenReviewConfig := tokenReviewConfig(cfg, tokenReviewLoader)
	reviewConfig := rest.CopyConfig(cfg)
	reviewConfig.QPS, reviewConfig.Burst = o.VirtualWorkspace.AuthorizationQPS, o.VirtualWorkspace.AuthorizationBurst
	review, err := authorization.NewSubjectAccessReviewer(reviewConfig)
	if err != nil {
		return nil, nil, err
	}
	lister := tenancyv1alpha1listers.NewWorkspaceClusterLister(workspaceInformer.GetIndexer())
	logicalClusters := logicalClusterInformer.GetIndexer()
	server, err := apiserver.New(o.VirtualWorkspace, apiserver.Dependencies{
		Store: store,
		Authorizer: authorization.New(authorization.NewReviews(review, o.VirtualWorkspace.Authorization), func(cluster logicalcluster.Name) bool {
			_, exists, err := logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
			return exists && err == nil
		}),
		GetWorkspace: func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return lister.Cluster(cluster).Get(name)
		},
		ClustersSynced:    logicalClusterInformer.HasSynced,
		TokenReviewConfig: tokenReviewConfig,
		KCPLastContact:    contact.Since,
	})
	return server, store, err
}

// tokenReviewConfig is where bearer tokens are reviewed: with the
// --authentication-kubeconfig's credentials if given (loader), else with the
// plugin's own, in root unless the URL names a cluster.
func tokenReviewConfig(cfg *rest.Config, loader *kubeconfig.Loader) *rest.Config {
	if loader != nil {
		cfg = loader.Config()
	}
	cfg = rest.CopyConfig(cfg)
	if !strings.Contains(cfg.Host, "/clusters/") {
		cfg.Host = strings.TrimSuffix(cfg.Host, "/") + core.RootCluster.Path().RequestPath()
	}
	return cfg
}

// baseURL strips a /clusters/<name> path from a kcp server URL: the clients
// here are cluster-aware and add it per request.
func baseURL(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return host
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	return strings.TrimSuffix(u.String(), "/")
}
