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
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// routingAttemptTimeout bounds one reading of a shard's /metrics.
const routingAttemptTimeout = 5 * time.Second

// errNotAnswered is a shard not answering, to be asked again.
var errNotAnswered = errors.New("the shard did not answer")

// routingOf is what the controller of a shard keeps beside the
// annotations, with whether kcp's in-tree mounts controller runs there, read
// once from its /metrics (docs/design/server-parts.md); an error wraps
// [errNotAnswered] when the shard did not answer.
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

// shardRouting is [routingOf], asked again while the shard does not answer.
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

const allowInternalHostsWarning = "WARNING: --workspace-url-allow-internal-hosts: a mount may route kcp's traffic to loopback, link-local and " +
	"unspecified addresses and to the shards' own hosts; meant for development, and for mounts that lead to workspaces of the same kcp"

// shardHostsOf are the hosts of the shards for [mount.URLRule].
func (s *Server) shardHostsOf() func() []string {
	var shardObjects cache.Store
	if s.RootKcpSharedInformerFactory != nil {
		shardObjects = s.RootKcpSharedInformerFactory.Core().V1alpha1().Shards().Informer().GetStore()
	}
	return shardHosts(s.ClientConfig.Host, shardObjects)
}

// shardHosts are, at every call, root's host and every Shard's base,
// external and virtual workspace hosts; with --kubeconfig, the front-proxy's
// host is not among them.
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

func appendHost(hosts []string, rawURL string) []string {
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	return hosts
}

// inTreeMountsQueue is the work queue of kcp's in-tree mounts controller,
// which kcp creates only with the feature gate WorkspaceMounts on.
const inTreeMountsQueue = "kcp-workspace-mounts"

const inTreeConflict = "--workspace-url cannot be used on this shard: kcp's in-tree mounts controller runs there " +
	"(feature gate WorkspaceMounts; its work queue " + inTreeMountsQueue + " is in kcp's /metrics) and writes spec.URL too; " +
	"turn the gate off, or drop --workspace-url (--workspace-condition works beside it)"

// InTreeMountsControllerRuns tells whether kcp's in-tree mounts controller
// runs on the shard client reaches, from the shard's /metrics, which client
// needs the right to read.
func InTreeMountsControllerRuns(ctx context.Context, client rest.Interface) (bool, error) {
	body, err := client.Get().AbsPath("/metrics").
		SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))).
		Stream(ctx)
	if err != nil {
		return false, fmt.Errorf("reading kcp's /metrics to tell whether its in-tree mounts controller runs: %w", err)
	}
	defer body.Close()
	return inTreeMountsQueueIn(body)
}

// inTreeMountsQueueIn tells whether metrics in the Prometheus text format
// have a series of [inTreeMountsQueue].
func inTreeMountsQueueIn(metrics io.Reader) (bool, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(metrics)
	if err != nil {
		return false, fmt.Errorf("parsing kcp's /metrics: %w", err)
	}
	for name, family := range families {
		if !strings.HasPrefix(name, "workqueue_") {
			continue
		}
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "name" && label.GetValue() == inTreeMountsQueue {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

var errInTreeConflict = errors.New(inTreeConflict)

// The values of --mount-url-contract: the [mount.URLForm] that levels 1 and
// 2 call routable; auto is the form of each shard's kcp release.
const (
	MountURLContractAuto   = "auto"
	MountURLContractHTTPS  = "https"
	MountURLContractLegacy = "legacy"
)

func validateMountURLContract(contract string) error {
	switch contract {
	case MountURLContractAuto, MountURLContractHTTPS, MountURLContractLegacy:
		return nil
	}
	return fmt.Errorf("--mount-url-contract must be auto, https or legacy, not %q", contract)
}

// mountURLForm is the form --mount-url-contract chooses for a shard; auto
// asks the shard's release once, https when it names none.
func mountURLForm(ctx context.Context, contract string, shard discovery.ServerVersionInterface) mount.URLForm {
	logger := klog.FromContext(ctx)
	if contract != MountURLContractAuto {
		form, _ := mount.ParseURLForm(contract) // validated
		logger.Info("mount URL contract", "form", form, "by", "--mount-url-contract")
		return form
	}
	info, err := shard.ServerVersion()
	if err != nil {
		logger.Error(err, "cannot read kcp's release for --mount-url-contract=auto; levels 1 and 2 take the https form, kcp v0.33's", "form", mount.URLFormHTTPS)
		return mount.URLFormHTTPS
	}
	release, err := kcprelease.Parse(info.GitVersion)
	if err != nil {
		logger.Error(err, "kcp names no release for --mount-url-contract=auto; levels 1 and 2 take the https form, kcp v0.33's", "form", mount.URLFormHTTPS)
		return mount.URLFormHTTPS
	}
	form := release.MountURLForm()
	logger.Info("mount URL contract", "form", form, "by", "kcp v"+release.String(), "gitVersion", info.GitVersion)
	return form
}
