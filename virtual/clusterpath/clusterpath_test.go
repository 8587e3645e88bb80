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
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

func TestParse(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name       string
		path       string
		wantOK     bool
		wantErr    bool
		wantTarget Target
		wantRest   string
	}{
		{name: "outside the prefix", path: "/apis/workspacemounts.io/v1alpha1", wantOK: false},
		{name: "root", path: "/", wantOK: false},
		{name: "prefix without trailing slash", path: "/services/workspacemounts/clusters", wantOK: false},
		{name: "other virtual workspace", path: "/services/apiexport/clusters/root/apis", wantOK: false},
		{name: "health", path: "/healthz", wantOK: false},
		{
			name: "wildcard", path: "/services/workspacemounts/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts",
			wantOK: true, wantTarget: Target{Wildcard: true}, wantRest: "/apis/workspacemounts.io/v1alpha1/workspacemounts",
		},
		{
			name: "cluster name", path: "/services/workspacemounts/clusters/2x8f3kq9/apis",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("2x8f3kq9")}, wantRest: "/apis",
		},
		{
			name: "workspace path", path: "/services/workspacemounts/clusters/root:org:team/apis/workspacemounts.io/v1alpha1/workspacemounts/x",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("root:org:team")}, wantRest: "/apis/workspacemounts.io/v1alpha1/workspacemounts/x",
		},
		{
			name: "no rest path", path: "/services/workspacemounts/clusters/root",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("root")}, wantRest: "/",
		},
		{
			name: "trailing slash only", path: "/services/workspacemounts/clusters/root/",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("root")}, wantRest: "/",
		},
		{
			name: "wildcard without rest", path: "/services/workspacemounts/clusters/*",
			wantOK: true, wantTarget: Target{Wildcard: true}, wantRest: "/",
		},
		{
			name: "openapi", path: "/services/workspacemounts/clusters/root/openapi/v3",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("root")}, wantRest: "/openapi/v3",
		},
		{
			name: "double slash in the rest kept as is", path: "/services/workspacemounts/clusters/root/apis//x",
			wantOK: true, wantTarget: Target{Path: logicalcluster.NewPath("root")}, wantRest: "/apis//x",
		},
		{name: "empty segment", path: "/services/workspacemounts/clusters/", wantOK: true, wantErr: true},
		{name: "empty segment with rest", path: "/services/workspacemounts/clusters//apis", wantOK: true, wantErr: true},
		{name: "parent directory", path: "/services/workspacemounts/clusters/../apis", wantOK: true, wantErr: true},
		{name: "percent-encoded parent directory", path: decoded(t, "/services/workspacemounts/clusters/%2e%2e/apis"), wantOK: true, wantErr: true},
		{name: "current directory", path: "/services/workspacemounts/clusters/./apis", wantOK: true, wantErr: true},
		{name: "upper case", path: "/services/workspacemounts/clusters/Root/apis", wantOK: true, wantErr: true},
		{name: "empty path segment", path: "/services/workspacemounts/clusters/a::b/apis", wantOK: true, wantErr: true},
		{name: "trailing colon", path: "/services/workspacemounts/clusters/root:/apis", wantOK: true, wantErr: true},
		{name: "leading colon", path: "/services/workspacemounts/clusters/:root/apis", wantOK: true, wantErr: true},
		{name: "wildcard inside a path", path: "/services/workspacemounts/clusters/root:*/apis", wantOK: true, wantErr: true},
		{name: "underscore", path: "/services/workspacemounts/clusters/my_ws/apis", wantOK: true, wantErr: true},
		{name: "leading hyphen", path: "/services/workspacemounts/clusters/-root/apis", wantOK: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target, rest, ok, err := Parse(tc.path)
			require.Equal(t, tc.wantOK, ok)
			if tc.wantErr {
				require.Error(t, err)
				require.Equal(t, Target{}, target)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantTarget, target)
			require.Equal(t, tc.wantRest, rest)
		})
	}
}

// decoded is the path as net/http hands it to a handler: percent-decoded.
func decoded(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse("https://example.io" + raw)
	require.NoError(t, err)
	require.Equal(t, "/services/workspacemounts/clusters/../apis", u.Path)
	return u.Path
}

func TestTargetString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "*", Target{Wildcard: true}.String())
	require.Equal(t, "root:org", Target{Path: logicalcluster.NewPath("root:org"), Cluster: "abc"}.String())
}

// fakeWorkspaces answers from a map keyed by parent cluster and name, and
// records what it is asked.
type fakeWorkspaces struct {
	workspaces map[string]*tenancyv1alpha1.Workspace // by cluster|name
	err        error
	asked      []string
}

func (f *fakeWorkspaces) get(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
	f.asked = append(f.asked, cluster.String()+"|"+name)
	if f.err != nil {
		return nil, f.err
	}
	ws, found := f.workspaces[cluster.String()+"|"+name]
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	return ws, nil
}

func workspace(name, cluster string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Cluster: cluster},
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()

	tree := map[string]*tenancyv1alpha1.Workspace{
		"root|org":        workspace("org", "c-org"),
		"c-org|team":      workspace("team", "c-team"),
		"c-team|sub":      workspace("sub", "c-sub"),
		"c-org|mounted":   workspace("mounted", ""), // mounted: no logical cluster of its own
		"c-org|unsched":   workspace("unsched", ""),
		"root|other-root": workspace("other-root", "c-other"),
	}

	for _, tc := range []struct {
		name        string
		target      Target
		getErr      error
		wantCluster logicalcluster.Name
		wantAsked   []string
		wantErr     string
		notFound    bool
	}{
		{
			name:   "wildcard",
			target: Target{Wildcard: true},
		},
		{
			name: "one segment is a cluster name", target: Target{Path: logicalcluster.NewPath("2x8f3kq9")},
			wantCluster: "2x8f3kq9",
		},
		{
			name: "root", target: Target{Path: logicalcluster.NewPath("root")},
			wantCluster: "root",
		},
		{
			name: "system cluster", target: Target{Path: logicalcluster.NewPath("system:admin")},
			wantCluster: "system:admin",
		},
		{
			name: "two segments", target: Target{Path: logicalcluster.NewPath("root:org")},
			wantCluster: "c-org", wantAsked: []string{"root|org"},
		},
		{
			name: "four segments", target: Target{Path: logicalcluster.NewPath("root:org:team:sub")},
			wantCluster: "c-sub", wantAsked: []string{"root|org", "c-org|team", "c-team|sub"},
		},
		{
			name: "missing leaf", target: Target{Path: logicalcluster.NewPath("root:org:nope")},
			wantAsked: []string{"root|org", "c-org|nope"}, wantErr: "workspace not found: root:org:nope", notFound: true,
		},
		{
			name: "missing in the middle", target: Target{Path: logicalcluster.NewPath("root:nope:team")},
			wantAsked: []string{"root|nope"}, wantErr: "workspace not found: root:nope", notFound: true,
		},
		{
			name: "mounted workspace", target: Target{Path: logicalcluster.NewPath("root:org:mounted")},
			wantAsked: []string{"root|org", "c-org|mounted"}, wantErr: "root:org:mounted has no logical cluster", notFound: true,
		},
		{
			name: "below a mounted workspace", target: Target{Path: logicalcluster.NewPath("root:org:mounted:x")},
			wantAsked: []string{"root|org", "c-org|mounted"}, wantErr: "root:org:mounted has no logical cluster", notFound: true,
		},
		{
			name: "getter error", target: Target{Path: logicalcluster.NewPath("root:org:team")}, getErr: errors.New("cache exploded"),
			wantAsked: []string{"root|org"}, wantErr: "cache exploded",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getter := &fakeWorkspaces{workspaces: tree, err: tc.getErr}
			resolved, err := Resolve(tc.target, getter.get)
			require.Equal(t, tc.wantAsked, getter.asked)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Equal(t, tc.notFound, errors.Is(err, ErrNotFound), "errors.Is(err, ErrNotFound)")
				if tc.getErr != nil {
					require.ErrorIs(t, err, tc.getErr)
				}
				require.Equal(t, Target{}, resolved)
				return
			}
			require.NoError(t, err)
			want := tc.target
			want.Cluster = tc.wantCluster
			require.Equal(t, want, resolved)
		})
	}
}

func TestResolveDoesNotLookUpOneSegment(t *testing.T) {
	t.Parallel()
	resolved, err := Resolve(Target{Path: logicalcluster.NewPath("abc")}, func(logicalcluster.Name, string) (*tenancyv1alpha1.Workspace, error) {
		t.Fatal("no lookup expected for a cluster name")
		return nil, nil
	})
	require.NoError(t, err)
	require.Equal(t, logicalcluster.Name("abc"), resolved.Cluster)
}

func TestContext(t *testing.T) {
	t.Parallel()

	_, found := From(context.Background())
	require.False(t, found)

	want := Target{Path: logicalcluster.NewPath("root:org"), Cluster: "c-org"}
	ctx := WithTarget(context.Background(), want)
	got, found := From(ctx)
	require.True(t, found)
	require.Equal(t, want, got)

	// A later WithTarget overrides, and the parent context is unchanged.
	wildcard := WithTarget(ctx, Target{Wildcard: true})
	got, found = From(wildcard)
	require.True(t, found)
	require.Equal(t, Target{Wildcard: true}, got)
	got, _ = From(ctx)
	require.Equal(t, want, got)

	// Another package's value under a look-alike key does not leak in.
	type otherKey struct{}
	_, found = From(context.WithValue(context.Background(), otherKey{}, want))
	require.False(t, found)
}
