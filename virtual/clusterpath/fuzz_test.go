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

package clusterpath

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// FuzzParseAndResolve: whatever a tenant puts in the URL, Parse either
// refuses it or yields a valid path (or *) and a rest that is the URL's own
// remainder; Resolve never panics and resolves only to a cluster the
// Workspace cache named.
func FuzzParseAndResolve(f *testing.F) {
	for _, seed := range []string{
		Prefix + "*/apis", Prefix + "root/apis/workspacemounts.io/v1alpha1/workspacemounts",
		Prefix + "root:org:team/api", Prefix + "189ieyi2rakj9h4y/openapi/v3", Prefix + "system:admin/version",
		Prefix + "", Prefix + "/", Prefix + "..", Prefix + "Root/apis", Prefix + "a::b/x", Prefix + "root:" + strings.Repeat("a:", 200) + "a",
		"/clusters/root/apis", "/services/workspacemounts/clusters", Prefix + "%2e%2e/apis", Prefix + "x00001z",
	} {
		f.Add(seed)
	}
	// One Workspace per parent: root:org -> c-org, c-org:team -> c-team.
	workspaces := map[string]string{"root|org": "c-org", "c-org|team": "c-team"}
	getWorkspace := func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
		if c, found := workspaces[cluster.String()+"|"+name]; found {
			return &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: c}}, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	f.Fuzz(func(t *testing.T, urlPath string) {
		target, rest, ok, err := Parse(urlPath)
		if !ok {
			if strings.HasPrefix(urlPath, Prefix) {
				t.Fatalf("%q is under the prefix but was not taken", urlPath)
			}
			return
		}
		if err != nil {
			return
		}
		if !strings.HasPrefix(rest, "/") || !strings.HasSuffix(urlPath, strings.TrimPrefix(rest, "/")) {
			t.Fatalf("rest %q is not the remainder of %q", rest, urlPath)
		}
		if !target.Wildcard && !target.Path.IsValid() {
			t.Fatalf("Parse(%q) gave the invalid path %q", urlPath, target.Path)
		}
		resolved, err := Resolve(target, getWorkspace)
		if err != nil {
			return
		}
		if target.Wildcard != resolved.Wildcard {
			t.Fatalf("Resolve changed the wildcard of %q", urlPath)
		}
		if _, single := target.Path.Name(); !target.Wildcard && !single {
			switch resolved.Cluster {
			case "c-org", "c-team":
			default:
				t.Fatalf("%q resolved to %q, which no Workspace names", target.Path, resolved.Cluster)
			}
		}
	})
}
