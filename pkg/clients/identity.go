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
	"sync"

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
		return &wildcardIdentityRoundTripper{delegate: rt, identities: func() map[string]string { return identities }}
	})
	return cfg
}

// NewConfigWithWildcardIdentities is WithWildcardIdentities with the
// identities read later, as kcp's bootstrap.NewConfigWithWildcardIdentities:
// exports names, for each group, its APIExport in root, which root reaches
// (the root shard's base URL: another shard does not hold root). Clients can
// be built on the returned config at once; resolve reads the identities (one
// attempt), and until it has succeeded, a request across all clusters to one
// of the groups fails without reaching kcp.
func NewConfigWithWildcardIdentities(cfg, root *rest.Config, exports map[string]string) (identityConfig *rest.Config, resolve func(ctx context.Context) error) {
	ids := &lazyIdentities{}
	identityConfig = rest.CopyConfig(cfg)
	identityConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &wildcardIdentityRoundTripper{delegate: rt, identities: ids.get, groups: exports}
	})
	return identityConfig, func(ctx context.Context) error {
		if ids.get() != nil {
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
		ids.set(identities)
		return nil
	}
}

// lazyIdentities are the identities once read, nil before.
type lazyIdentities struct {
	lock       sync.RWMutex
	identities map[string]string
}

func (ids *lazyIdentities) get() map[string]string {
	ids.lock.RLock()
	defer ids.lock.RUnlock()
	return ids.identities
}

func (ids *lazyIdentities) set(identities map[string]string) {
	ids.lock.Lock()
	defer ids.lock.Unlock()
	ids.identities = identities
}

type wildcardIdentityRoundTripper struct {
	delegate   http.RoundTripper
	identities func() map[string]string
	// groups need an identity; nil: only those identities names.
	groups map[string]string
}

func (rt *wildcardIdentityRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	identities := rt.identities()
	if identities == nil {
		if group, ok := wildcardGroup(req.URL.Path); ok && rt.groups[group] != "" {
			return nil, fmt.Errorf("%s across all clusters: the identity of APIExport %s in root is not known yet", req.URL.Path, rt.groups[group])
		}
	}
	if path, changed := withIdentity(req.URL.Path, identities); changed {
		req = req.Clone(req.Context())
		req.URL.Path = path
		req.URL.RawPath = ""
	}
	return rt.delegate.RoundTrip(req)
}

// wildcardGroup is the group of a request across all clusters to a group's
// resource, .../clusters/*/apis/<group>/<version>/<resource>[/...].
func wildcardGroup(path string) (string, bool) {
	prefix := "/clusters/" + logicalcluster.Wildcard.String() + "/apis/"
	i := strings.Index(path, prefix)
	if i < 0 {
		return "", false
	}
	rest := strings.SplitN(path[i+len(prefix):], "/", 4)
	if len(rest) < 3 {
		return "", false
	}
	return rest[0], true
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
