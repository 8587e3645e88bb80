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

package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/kubeconfig"
	"github.com/workspacemounts/workspacemounts/pkg/shards"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// Config is what the parts of the process are built from: the credentials,
// followed as their files change, the clients of root and the set of
// shards served. [NewConfig] asks kcp nothing, so that the process starts
// and serves its health while kcp is away; with --kubeconfig the set holds
// one unnamed shard, else one per Shard object in root.
type Config struct {
	Options *CompletedOptions

	// KubeconfigLoader reaches root; ShardsLoader, nil with --kubeconfig,
	// every shard; TokenReviewLoader is --authentication-kubeconfig's.
	KubeconfigLoader  *kubeconfig.Loader
	ShardsLoader      *kubeconfig.Loader
	TokenReviewLoader *kubeconfig.Loader
	// Contact sees every answer of root; KCPProbe asks root when it has
	// been quiet.
	Contact  *kcpcontact.Tracker
	KCPProbe func(context.Context) error
	// ClientConfig reaches root's base URL, rate limited and tracked.
	ClientConfig *rest.Config
	// KCPReady reads the tenancy identity in root; Run waits until it succeeds.
	KCPReady func(context.Context) error

	// Shards are reached with ShardCredentials at their base URLs.
	Shards           *Shards
	ShardCredentials *rest.Config
	// RootKcpSharedInformerFactory informs of the Shard objects in root;
	// nil with --kubeconfig.
	RootKcpSharedInformerFactory kcpinformers.SharedScopedInformerFactory

	// LeaseClusterClient is a client of its own, so that no other traffic
	// delays a renewal.
	LeaseClusterClient kcpkubernetesclientset.ClusterInterface

	// Set with --run-virtual-workspace: the SubjectAccessReviews, sent to
	// the shard holding the cluster under one rate limit, and where bearer
	// tokens are reviewed.
	Authorizer        *authorization.Authorizer
	ReviewLimiter     flowcontrol.RateLimiter
	TokenReviewConfig *rest.Config
}

// NewConfig builds the config from completed options.
func NewConfig(o *CompletedOptions) (*Config, error) {
	c := &Config{Options: o, Contact: kcpcontact.New(), Shards: newShards()}
	var err error
	switch {
	case o.AllShards:
		if c.KubeconfigLoader, err = kubeconfig.Load(o.Kubeconfig, o.Context); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		c.ShardsLoader = c.KubeconfigLoader
	case o.Sharded():
		if c.KubeconfigLoader, err = kubeconfig.Load(o.RootKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--root-kubeconfig: %w", err)
		}
		if c.ShardsLoader, err = kubeconfig.Load(o.ShardsKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--shards-kubeconfig: %w", err)
		}
	default:
		if c.KubeconfigLoader, err = kubeconfig.Load(o.Kubeconfig, o.Context); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	if o.RunVirtualWorkspace && o.VirtualWorkspace.AuthenticationKubeconfig != "" {
		if c.TokenReviewLoader, err = kubeconfig.Load(o.VirtualWorkspace.AuthenticationKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--authentication-kubeconfig: %w", err)
		}
	}
	c.ClientConfig = c.KubeconfigLoader.Config()
	c.ClientConfig.Host = baseURL(c.ClientConfig.Host)
	c.ClientConfig.QPS, c.ClientConfig.Burst = o.QPS, o.Burst
	c.ClientConfig.UserAgent = userAgent
	c.ClientConfig.Wrap(c.Contact.Wrap)
	if c.KCPProbe, err = kcpProbe(c.ClientConfig); err != nil {
		return nil, err
	}
	tenancy := tenancyv1alpha1.SchemeGroupVersion.Group
	_, c.KCPReady = clients.NewConfigWithWildcardIdentities(c.ClientConfig, c.ClientConfig, map[string]string{tenancy: tenancy})

	if o.Sharded() {
		c.ShardCredentials = c.ShardsLoader.CredentialsConfig()
		client, err := kcpclientset.NewForConfig(c.ClientConfig)
		if err != nil {
			return nil, err
		}
		c.RootKcpSharedInformerFactory = kcpinformers.NewSharedScopedInformerFactory(client.Cluster(core.RootCluster.Path()), 0, "")
	} else {
		c.ShardCredentials = c.KubeconfigLoader.Config()
	}
	if o.RunController && o.LeaderElection.Enabled {
		if c.LeaseClusterClient, err = kcpkubernetesclientset.NewForConfig(rest.CopyConfig(c.ClientConfig)); err != nil {
			return nil, err
		}
	}
	if o.RunVirtualWorkspace {
		c.ReviewLimiter = flowcontrol.NewTokenBucketRateLimiter(o.VirtualWorkspace.AuthorizationQPS, o.VirtualWorkspace.AuthorizationBurst)
		reviews := authorization.NewReviews(authorization.ReviewByShard(c.Shards.ReviewerOf), o.VirtualWorkspace.Authorization, c.Shards.PathOf)
		c.Authorizer = authorization.New(reviews, c.Shards.ClusterExists)
		c.TokenReviewConfig = tokenReviewConfig(c.ClientConfig, c.TokenReviewLoader)
	}
	return c, nil
}

// userAgent is what every client of the process sends.
const userAgent = "workspacemounts"

// CompletedConfig is a Config that [New] can build the server from.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	*Config
}

// Complete makes the CompletedConfig that [New] takes.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{c}}
}

// tokenReviewConfig is where bearer tokens are reviewed: in root unless the
// URL names a cluster, with loader's credentials if any, else cfg's.
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

// ListShards lists, once, the shards the config serves, sorted by name, for
// cleanup and doctor.
func (c *Config) ListShards(ctx context.Context) ([]shards.Shard, error) {
	if c.RootKcpSharedInformerFactory == nil {
		return []shards.Shard{c.shard("", c.ClientConfig.Host)}, nil
	}
	informer := c.RootKcpSharedInformerFactory.Core().V1alpha1().Shards().Informer()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c.RootKcpSharedInformerFactory.Start(syncCtx.Done())
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("cannot list the Shards in root: %w", syncCtx.Err())
	}
	var found []shards.Shard
	for _, obj := range informer.GetStore().List() {
		if object, ok := obj.(*corev1alpha1.Shard); ok {
			if baseURL, err := shards.BaseURL(object); err == nil {
				found = append(found, c.shard(object.Name, baseURL))
			} else {
				klog.FromContext(ctx).Error(err, "Shard skipped", "shard", object.Name)
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	return found, nil
}

// shard is a shard at baseURL with the rate limit of root's clients.
func (c *Config) shard(name, baseURL string) shards.Shard {
	cfg := rest.CopyConfig(c.ShardCredentials)
	cfg.Host = baseURL
	cfg.QPS, cfg.Burst, cfg.UserAgent = c.ClientConfig.QPS, c.ClientConfig.Burst, userAgent
	return shards.Shard{Name: name, BaseURL: baseURL, Config: cfg}
}
