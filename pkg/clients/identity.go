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

// Package clients builds what the plugin needs to read a kcp shard across all
// logical clusters: kcp serves some resources there only under the identity of
// the APIExport that provides them (Workspaces come from the tenancy.kcp.io
// APIExport in root), so requests to /clusters/* are rewritten to name it.
package clients

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

var apiExportsResource = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexports"}

// APIExportIdentity reads the identity hash of an APIExport in root, e.g.
// tenancy.kcp.io. cfg points at the shard base URL.
func APIExportIdentity(ctx context.Context, cfg *rest.Config, exportName string) (string, error) {
	rootCfg := rest.CopyConfig(cfg)
	rootCfg.Host = strings.TrimSuffix(cfg.Host, "/") + core.RootCluster.Path().RequestPath()
	client, err := dynamic.NewForConfig(rootCfg)
	if err != nil {
		return "", err
	}
	export, err := client.Resource(apiExportsResource).Get(ctx, exportName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading APIExport %s in root: %w", exportName, err)
	}
	identity, _, _ := unstructured.NestedString(export.Object, "status", "identityHash")
	if identity == "" {
		return "", fmt.Errorf("APIExport %s in root has no status.identityHash yet", exportName)
	}
	return identity, nil
}

// TenancyIdentity reads the identity of the tenancy.kcp.io APIExport, under
// which kcp serves Workspaces across all clusters.
func TenancyIdentity(ctx context.Context, cfg *rest.Config) (string, error) {
	return APIExportIdentity(ctx, cfg, tenancyv1alpha1.SchemeGroupVersion.Group)
}

// WithWildcardIdentities returns a copy of cfg whose list and watch requests
// across all clusters (/clusters/*/apis/<group>/<version>/<resource>) name the
// identity given for their group, as kcp requires for resources provided by an
// APIExport.
func WithWildcardIdentities(cfg *rest.Config, identities map[string]string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &wildcardIdentityRoundTripper{delegate: rt, identities: identities}
	})
	return cfg
}

type wildcardIdentityRoundTripper struct {
	delegate   http.RoundTripper
	identities map[string]string
}

func (rt *wildcardIdentityRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if path, changed := withIdentity(req.URL.Path, rt.identities); changed {
		req = req.Clone(req.Context())
		req.URL.Path = path
		req.URL.RawPath = ""
	}
	return rt.delegate.RoundTrip(req)
}

// withIdentity rewrites .../clusters/*/apis/<group>/<version>/<resource>[/...]
// to name the group's identity after the resource.
func withIdentity(path string, identities map[string]string) (string, bool) {
	prefix := "/clusters/" + logicalcluster.Wildcard.String() + "/apis/"
	i := strings.Index(path, prefix)
	if i < 0 {
		return path, false
	}
	rest := strings.SplitN(path[i+len(prefix):], "/", 4)
	if len(rest) < 3 || strings.Contains(rest[2], ":") {
		return path, false
	}
	identity, found := identities[rest[0]]
	if !found {
		return path, false
	}
	rest[2] += ":" + identity
	return path[:i+len(prefix)] + strings.Join(rest, "/"), true
}
