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

// Package clients builds what the plugin needs to read a kcp shard across all logical clusters,
// where kcp serves an APIExport's resources only under its identity.
package clients

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

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

// APIExportIdentity reads the identity hash of an APIExport in root.
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

func TenancyIdentity(ctx context.Context, cfg *rest.Config) (string, error) {
	return APIExportIdentity(ctx, cfg, tenancyv1alpha1.SchemeGroupVersion.Group)
}

// WithWildcardIdentities returns a copy of cfg that names each group's identity in requests across
// all clusters.
func WithWildcardIdentities(cfg *rest.Config, identities map[string]string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &wildcardIdentityRoundTripper{delegate: rt, identities: func() map[string]string { return identities }}
	})
	return cfg
}

// NewConfigWithWildcardIdentities is [WithWildcardIdentities] with the identities of the exports in
// root read by resolve, as kcp's bootstrap does; until then such requests fail without reaching
// kcp.
func NewConfigWithWildcardIdentities(cfg, root *rest.Config, exports map[string]string) (identityConfig *rest.Config, resolve func(ctx context.Context) error) {
	var ids atomic.Pointer[map[string]string]
	get := func() map[string]string {
		if m := ids.Load(); m != nil {
			return *m
		}
		return nil
	}
	identityConfig = rest.CopyConfig(cfg)
	identityConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &wildcardIdentityRoundTripper{delegate: rt, identities: get, groups: exports}
	})
	return identityConfig, func(ctx context.Context) error {
		if ids.Load() != nil {
			return nil
		}
		identities := make(map[string]string, len(exports))
		for group, export := range exports {
			identity, err := APIExportIdentity(ctx, root, export)
			if err != nil {
				return err
			}
			identities[group] = identity
		}
		ids.Store(&identities)
		return nil
	}
}

type wildcardIdentityRoundTripper struct {
	delegate   http.RoundTripper
	identities func() map[string]string
	groups     map[string]string // groups that need an identity
}

func (rt *wildcardIdentityRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	identities := rt.identities()
	if identities == nil {
		if _, parts, ok := splitWildcard(req.URL.Path); ok && rt.groups[parts[0]] != "" {
			return nil, fmt.Errorf("%s across all clusters: the identity of APIExport %s in root is not known yet", req.URL.Path, rt.groups[parts[0]])
		}
	}
	if path, changed := withIdentity(req.URL.Path, identities); changed {
		req = req.Clone(req.Context())
		req.URL.Path = path
		req.URL.RawPath = ""
	}
	return rt.delegate.RoundTrip(req)
}

// splitWildcard splits .../clusters/*/apis/<group>/<version>/<resource>[/...] after the prefix.
func splitWildcard(path string) (prefix string, parts []string, ok bool) {
	marker := "/clusters/" + logicalcluster.Wildcard.String() + "/apis/"
	i := strings.Index(path, marker)
	if i < 0 {
		return "", nil, false
	}
	parts = strings.SplitN(path[i+len(marker):], "/", 4)
	return path[:i+len(marker)], parts, len(parts) >= 3
}

func withIdentity(path string, identities map[string]string) (string, bool) {
	prefix, parts, ok := splitWildcard(path)
	if !ok || strings.Contains(parts[2], ":") {
		return path, false
	}
	identity, found := identities[parts[0]]
	if !found {
		return path, false
	}
	parts[2] += ":" + identity
	return prefix + strings.Join(parts, "/"), true
}
