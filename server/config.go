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
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/kcpcontact"
	"github.com/workspacemounts/workspacemounts/pkg/kubeconfig"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// Config is what the parts of the process are built from: the credentials
// (followed as their files change), the process-wide clients (the Lease,
// reviews of tokens and access) and, in a ShardConfig, what reads and writes
// the shard. NewConfig asks kcp nothing, so that the process starts, serves
// its health and waits while kcp is away.
type Config struct {
	Options *CompletedOptions

	// KubeconfigLoader holds the --kubeconfig credentials (for a sharded
	// kcp, --root-kubeconfig's), ShardsLoader those of --shards-kubeconfig
	// (nil without), TokenReviewLoader those of --authentication-kubeconfig
	// (nil without it). All are read again when their files change.
	KubeconfigLoader  *kubeconfig.Loader
	ShardsLoader      *kubeconfig.Loader
	TokenReviewLoader *kubeconfig.Loader
	// Contact sees every answer kcp gives to any client below; KCPProbe is
	// one cheap request (GET /version) it sends when kcp has been quiet.
	Contact  *kcpcontact.Tracker
	KCPProbe func(context.Context) error
	// ClientConfig is what every client starts from: the shard base URL (the
	// root shard's for a sharded kcp), the loader's credentials, the rate
	// limit and the contact tracker.
	ClientConfig *rest.Config
	// KCPReady asks kcp, once, what must be known before the informers
	// start: the tenancy identity. Run waits until it succeeds.
	KCPReady func(context.Context) error
	// ShardConfig reads and writes the one shard of --kubeconfig; nil for
	// a sharded kcp, where each shard gets one as it is found.
	*ShardConfig
	// Sharded (--root-kubeconfig) follows the Shards in root and serves
	// them all; nil with --kubeconfig.
	Sharded *ShardedConfig

	// LeaseClusterClient (with --run-controller and --leader-elect) is a
	// client of its own, so that no other traffic delays a renewal.
	LeaseClusterClient kcpkubernetesclientset.ClusterInterface

	// Set with --run-virtual-workspace: who may see which logical cluster
	// (SubjectAccessReviews through a client of their own, rate-limited by
	// --authorization-qps), and where bearer tokens are reviewed.
	Authorizer        *authorization.Authorizer
	TokenReviewConfig *rest.Config
}

// NewConfig builds the config from completed options.
func NewConfig(o *CompletedOptions) (*Config, error) {
	c := &Config{Options: o, Contact: kcpcontact.New()}
	var err error
	if o.Sharded() {
		if c.KubeconfigLoader, err = kubeconfig.Load(o.RootKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--root-kubeconfig: %w", err)
		}
		if c.ShardsLoader, err = kubeconfig.Load(o.ShardsKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--shards-kubeconfig: %w", err)
		}
	} else if c.KubeconfigLoader, err = kubeconfig.Load(o.Kubeconfig, o.Context); err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if o.RunVirtualWorkspace && o.VirtualWorkspace.AuthenticationKubeconfig != "" {
		if c.TokenReviewLoader, err = kubeconfig.Load(o.VirtualWorkspace.AuthenticationKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--authentication-kubeconfig: %w", err)
		}
	}
	c.ClientConfig = c.KubeconfigLoader.Config()
	c.ClientConfig.Host = baseURL(c.ClientConfig.Host)
	c.ClientConfig.QPS, c.ClientConfig.Burst = o.QPS, o.Burst
	c.ClientConfig.UserAgent = "workspacemounts"
	c.ClientConfig.Wrap(c.Contact.Wrap)
	if c.KCPProbe, err = kcpProbe(c.ClientConfig); err != nil {
		return nil, err
	}

	if o.Sharded() {
		if c.Sharded, err = newShardedConfig(c.ClientConfig, c.ShardsLoader.CredentialsConfig()); err != nil {
			return nil, err
		}
		c.KCPReady = c.Sharded.ResolveRootIdentities
	} else {
		if c.ShardConfig, err = NewShardConfig(c.ClientConfig, c.ClientConfig, o.RunController); err != nil {
			return nil, err
		}
		c.KCPReady = c.ShardConfig.ResolveIdentities
	}
	if o.RunController && o.LeaderElection.Enabled {
		if c.LeaseClusterClient, err = kcpkubernetesclientset.NewForConfig(rest.CopyConfig(c.ClientConfig)); err != nil {
			return nil, err
		}
	}

	if o.RunVirtualWorkspace {
		reviewConfig := rest.CopyConfig(c.ClientConfig)
		reviewConfig.QPS, reviewConfig.Burst = o.VirtualWorkspace.AuthorizationQPS, o.VirtualWorkspace.AuthorizationBurst
		if c.Sharded != nil {
			// Each shard answers for its own logical clusters; the reviews
			// of all shards share one rate limit.
			c.Sharded.ReviewLimiter = flowcontrol.NewTokenBucketRateLimiter(reviewConfig.QPS, reviewConfig.Burst)
			c.Authorizer = authorization.New(authorization.NewReviews(authorization.ReviewByShard(c.Sharded.Shards.ReviewerOf), o.VirtualWorkspace.Authorization),
				c.Sharded.Shards.ClusterExists)
		} else {
			review, err := authorization.NewSubjectAccessReviewer(reviewConfig)
			if err != nil {
				return nil, err
			}
			logicalClusters := c.KcpSharedInformerFactory.Core().V1alpha1().LogicalClusters().Informer().GetIndexer()
			c.Authorizer = authorization.New(authorization.NewReviews(review, o.VirtualWorkspace.Authorization), func(cluster logicalcluster.Name) bool {
				return clusterExists(logicalClusters, cluster)
			})
		}
		c.TokenReviewConfig = tokenReviewConfig(c.ClientConfig, c.TokenReviewLoader)
	}
	return c, nil
}

// clusterExists tells whether a LogicalCluster cache holds the cluster.
func clusterExists(logicalClusters cache.Indexer, cluster logicalcluster.Name) bool {
	_, exists, err := logicalClusters.GetByKey(kcpcache.ToClusterAwareKey(cluster.String(), "", corev1alpha1.LogicalClusterName))
	return exists && err == nil
}

// CompletedConfig is a Config that New can build the server from; only
// Complete makes one.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	*Config
}

// Complete makes the CompletedConfig that New takes, as kcp's
// Config.Complete; NewConfig has left nothing to fill in.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{c}}
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
