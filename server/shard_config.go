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

	"k8s.io/client-go/rest"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
)

// ShardConfig is what reads and writes one kcp shard: its clients and
// shared informer factories, built without asking kcp anything. The
// identity under which the shard serves Workspaces across all clusters is
// read once it answers (ResolveIdentities), before any informer starts.
type ShardConfig struct {
	// ClientConfig reaches the shard's base URL.
	ClientConfig *rest.Config
	// ResolveIdentities reads the identity of the tenancy.kcp.io APIExport,
	// once; until it has succeeded, KcpClusterClient cannot list Workspaces
	// across all clusters.
	ResolveIdentities func(context.Context) error

	// KcpClusterClient and KcpSharedInformerFactory: Workspaces (read by
	// every part), APIBindings and APIResourceSchemas (the controller) and
	// LogicalClusters (the virtual workspace), each informer trimmed by
	// TrimForCache.
	KcpClusterClient         kcpclientset.ClusterInterface
	KcpSharedInformerFactory kcpinformers.SharedInformerFactory

	// Set for the controller: the CRD informers, and the clients reaching
	// mount objects of any kind.
	ApiExtensionsSharedInformerFactory kcpapiextensionsinformers.SharedInformerFactory
	DynamicClusterClient               kcpdynamic.ClusterInterface
	MetadataClusterClient              kcpmetadata.ClusterInterface
}

// NewShardConfig builds the clients of the shard cfg reaches; with
// controller, also those the controller needs. root reaches the root shard,
// where the identities are read.
func NewShardConfig(cfg, root *rest.Config, controller bool) (*ShardConfig, error) {
	c := &ShardConfig{ClientConfig: cfg}
	tenancy := tenancyv1alpha1.SchemeGroupVersion.Group
	identityConfig, resolve := clients.NewConfigWithWildcardIdentities(cfg, root, map[string]string{tenancy: tenancy})
	c.ResolveIdentities = resolve
	var err error
	if c.KcpClusterClient, err = kcpclientset.NewForConfig(identityConfig); err != nil {
		return nil, err
	}
	c.KcpSharedInformerFactory = kcpinformers.NewSharedInformerFactoryWithOptions(c.KcpClusterClient, 0, kcpinformers.WithTransform(TrimForCache))
	if !controller {
		return c, nil
	}
	apiExtensionsClient, err := kcpapiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.ApiExtensionsSharedInformerFactory = kcpapiextensionsinformers.NewSharedInformerFactoryWithOptions(apiExtensionsClient, 0,
		kcpapiextensionsinformers.WithTransform(TrimForCache))
	if c.DynamicClusterClient, err = kcpdynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.MetadataClusterClient, err = kcpmetadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}
