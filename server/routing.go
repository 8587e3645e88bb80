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
	"errors"
	"fmt"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// routingAttemptTimeout bounds one reading of a shard's /metrics: the first
// comes before the health endpoints are served.
const routingAttemptTimeout = 5 * time.Second

// errNotAnswered is a shard not answering whether kcp's in-tree mounts
// controller runs there: it is asked again.
var errNotAnswered = errors.New("the shard did not answer")

// routingOf is what the controller of a shard keeps beside the
// annotations: --workspace-condition and --workspace-url, and whether
// kcp's in-tree mounts controller runs on the shard (one reading of its
// /metrics), at every level: --workspace-url is refused beside it, and
// kcp's condition WorkspaceMountReady is the controller's to keep or remove
// only where it does not run (beside it, removing kcp's condition makes the
// two controllers rewrite the Workspace without end). A shard that refuses
// to tell (no right to read /metrics) is taken to run it, the safe answer
// for both conditions. An error wrapping errNotAnswered: the shard did not
// answer.
func routingOf(ctx context.Context, o *CompletedOptions, cfg *rest.Config) (workspacemounts.RoutingOptions, error) {
	routing := workspacemounts.RoutingOptions{WorkspaceCondition: o.WorkspaceCondition, WorkspaceURL: o.WorkspaceURL,
		URLs:           mount.URLRule{AllowInternalHosts: o.WorkspaceURLAllowInternalHosts, Allowed: o.AllowedHosts},
		ConditionDelay: o.WorkspaceConditionDelay, MaxUnavailable: o.maxUnavailable}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return routing, err
	}
	attemptCtx, cancel := context.WithTimeout(ctx, routingAttemptTimeout)
	runs, err := InTreeMountsControllerRuns(attemptCtx, client.Discovery().RESTClient())
	cancel()
	switch {
	case err == nil:
		routing.InTreeMountsController = runs
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		if routing.WorkspaceURL {
			return routing, fmt.Errorf("--workspace-url needs to know that kcp's in-tree mounts controller does not run on the shard: %w", err)
		}
		klog.FromContext(ctx).Error(err, "cannot tell whether kcp's in-tree mounts controller runs; taken to run: kcp's condition "+string(tenancyv1alpha1.MountConditionReady)+
			" is left as it is, and a mount that is Ready without URL gets condition "+mount.ConditionType+" Unknown, not False")
		routing.InTreeMountsController = true
	default:
		return routing, fmt.Errorf("%w: %w", errNotAnswered, err)
	}
	if routing.InTreeMountsController && routing.WorkspaceURL {
		return routing, errInTreeConflict
	}
	return routing, nil
}

// shardRouting is routingOf, asked again with backoff while the shard does
// not answer, until ctx is done; logged once known.
func shardRouting(ctx context.Context, o *CompletedOptions, cfg *rest.Config) (workspacemounts.RoutingOptions, error) {
	var routing workspacemounts.RoutingOptions
	var answer error
	if _, err := retryUntil(ctx, func(ctx context.Context) error {
		routing, answer = routingOf(ctx, o, cfg)
		if errors.Is(answer, errNotAnswered) {
			return answer
		}
		return nil
	}, "waiting for kcp's /metrics", "server", cfg.Host); err != nil {
		return routing, err
	}
	if answer == nil {
		versionCfg := rest.CopyConfig(cfg)
		versionCfg.Timeout = routingAttemptTimeout
		shard, err := discovery.NewDiscoveryClientForConfig(versionCfg)
		if err != nil {
			return routing, err
		}
		routing.URLs.Form = mountURLForm(ctx, o.MountURLContract, shard)
		logRouting(klog.FromContext(ctx), routing)
	}
	return routing, answer
}

// logRouting logs the routing options of a shard once they are known.
func logRouting(logger klog.Logger, routing workspacemounts.RoutingOptions) {
	if routing.WorkspaceURL && !routing.WorkspaceCondition {
		logger.Info("--workspace-url without --workspace-condition: kcp's condition WorkspaceMountReady takes a mount that is not ready out of traffic, " +
			"as kcp's in-tree mounts controller does, but a mount whose kind is not served, or whose URL only the host rules refuse, keeps its last URL and takes traffic")
	}
	if routing.InTreeMountsController && routing.WorkspaceCondition && (routing.ConditionDelay > 0 || routing.MaxUnavailable != nil) {
		logger.Info("kcp's in-tree mounts controller runs on the shard: its own condition " + string(tenancyv1alpha1.MountConditionReady) +
			" takes a Workspace whose mount object is not Ready out of traffic at once, whatever --workspace-condition-delay and --max-unavailable " +
			"keep of " + mount.ConditionType + "; turn kcp's feature gate WorkspaceMounts off for the gate to hold traffic")
	}
	maxUnavailable := "none"
	if routing.MaxUnavailable != nil {
		maxUnavailable = routing.MaxUnavailable.String()
	}
	logger.Info("routing options", "workspaceCondition", routing.WorkspaceCondition, "workspaceURL", routing.WorkspaceURL,
		"inTreeMountsController", routing.InTreeMountsController, "mountURLForm", routing.URLs.Form, "workspaceURLAllowInternalHosts", routing.URLs.AllowInternalHosts,
		"workspaceURLAllowedHosts", routing.URLs.Allowed.String(), "workspaceConditionDelay", routing.ConditionDelay, "maxUnavailable", maxUnavailable)
}

// allowInternalHostsWarning is logged at start with --workspace-url-allow-internal-hosts.
const allowInternalHostsWarning = "WARNING: --workspace-url-allow-internal-hosts: a mount may route kcp's traffic to loopback, link-local and " +
	"unspecified addresses and to the shards' own hosts; meant for development, and for mounts that lead to workspaces of the same kcp"

// shardHostsOf are the hosts of the shards for the rule of mount URLs
// (mount.URLRule.ShardHosts): of the Shard objects in root, if any.
func (s *Server) shardHostsOf() func() []string {
	var shardObjects cache.Store
	if s.RootKcpSharedInformerFactory != nil {
		shardObjects = s.RootKcpSharedInformerFactory.Core().V1alpha1().Shards().Informer().GetStore()
	}
	return shardHosts(s.ClientConfig.Host, shardObjects)
}

// shardHosts are the hosts of kcp's shards, asked at every check: root's
// (rootURL, the server of --kubeconfig or --root-kubeconfig) and, for a
// sharded kcp (shardObjects, the Shard objects in root, else nil), every
// Shard's baseURL, externalURL and virtualWorkspaceURL, as they are now.
// The front-proxy's host is among them only as a Shard's externalURL:
// with --kubeconfig, --workspace-url-allowed-hosts is what keeps mounts
// from it.
func shardHosts(rootURL string, shardObjects cache.Store) func() []string {
	return func() []string {
		hosts := appendHost(nil, rootURL)
		if shardObjects == nil {
			return hosts
		}
		for _, obj := range shardObjects.List() {
			if shard, ok := obj.(*corev1alpha1.Shard); ok {
				hosts = appendHost(appendHost(appendHost(hosts, shard.Spec.BaseURL), shard.Spec.ExternalURL), shard.Spec.VirtualWorkspaceURL)
			}
		}
		return hosts
	}
}

// appendHost appends the host of rawURL, if it has one.
func appendHost(hosts []string, rawURL string) []string {
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	return hosts
}
