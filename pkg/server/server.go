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
// clusters of a kcp shard and the controller that reads them.
package server

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	kcpapiextensionsinformers "github.com/kcp-dev/client-go/apiextensions/informers"
	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	kcpmetadata "github.com/kcp-dev/client-go/metadata"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcpinformers "github.com/kcp-dev/sdk/client/informers/externalversions"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// Run runs the controller until ctx is done.
func Run(ctx context.Context, o *Options) error {
	logger := klog.FromContext(ctx)
	cfg, err := o.RestConfig()
	if err != nil {
		return err
	}

	tenancyIdentity, err := clients.TenancyIdentity(ctx, cfg)
	if err != nil {
		return fmt.Errorf("cannot list Workspaces across clusters: %w", err)
	}
	wildcardCfg := clients.WithWildcardIdentities(cfg, map[string]string{tenancyv1alpha1.SchemeGroupVersion.Group: tenancyIdentity})

	kcpClient, err := kcpclientset.NewForConfig(wildcardCfg)
	if err != nil {
		return err
	}
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

	transform := func(obj interface{}) (interface{}, error) {
		obj, _ = workspacemounts.StripManagedFields(obj)
		return restmapping.StripSchemas(obj)
	}
	kcpInformers := kcpinformers.NewSharedInformerFactoryWithOptions(kcpClient, 0, kcpinformers.WithTransform(transform))
	apiExtensionsInformers := kcpapiextensionsinformers.NewSharedInformerFactoryWithOptions(apiExtensionsClient, 0, kcpapiextensionsinformers.WithTransform(transform))
	informers := workspacemounts.Informers{
		Workspaces:         kcpInformers.Tenancy().V1alpha1().Workspaces().Informer(),
		CRDs:               apiExtensionsInformers.Apiextensions().V1().CustomResourceDefinitions().Informer(),
		APIBindings:        kcpInformers.Apis().V1alpha1().APIBindings().Informer(),
		APIResourceSchemas: kcpInformers.Apis().V1alpha1().APIResourceSchemas().Informer(),
	}
	if err := workspacemounts.InstallIndexers(informers); err != nil {
		return err
	}
	controller, err := workspacemounts.NewController(workspacemounts.Clients{KCP: kcpClient, Dynamic: dynamicClient, Metadata: metadataClient}, informers)
	if err != nil {
		return err
	}

	kcpInformers.Start(ctx.Done())
	apiExtensionsInformers.Start(ctx.Done())
	start := time.Now()
	if !cache.WaitForNamedCacheSync(workspacemounts.ControllerName, ctx.Done(),
		informers.Workspaces.HasSynced, informers.CRDs.HasSynced, informers.APIBindings.HasSynced, informers.APIResourceSchemas.HasSynced) {
		return ctx.Err()
	}
	logger.Info("informers synced", "duration", time.Since(start).Round(time.Millisecond), "workspaces", len(informers.Workspaces.GetStore().ListKeys()))

	controller.Start(ctx, o.WorkspaceWorkers)
	return nil
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
