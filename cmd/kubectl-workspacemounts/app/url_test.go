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

package app

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kcp-dev/logicalcluster/v3"
)

func TestResolveTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		context       string
		server        string
		all           bool
		wantURL       string
		wantKCP       string
		wantErr       string
		wantKCPAbsent bool
	}{
		{name: "kcp workspace", context: "https://kcp.example.com/clusters/root:org:team-a",
			wantURL: "https://kcp.example.com/services/workspacemounts/clusters/root:org:team-a", wantKCP: "https://kcp.example.com/clusters/root:org:team-a"},
		{name: "trailing slash and port", context: "https://kcp.example.com:6443/clusters/root/",
			wantURL: "https://kcp.example.com:6443/services/workspacemounts/clusters/root", wantKCP: "https://kcp.example.com:6443/clusters/root"},
		{name: "a prefix before /clusters/", context: "https://proxy.example.com/kcp/clusters/root:org",
			wantURL: "https://proxy.example.com/kcp/services/workspacemounts/clusters/root:org", wantKCP: "https://proxy.example.com/kcp/clusters/root:org"},
		{name: "a logical cluster name", context: "https://kcp.example.com/clusters/2x9lqmq6hkbsw0ks",
			wantURL: "https://kcp.example.com/services/workspacemounts/clusters/2x9lqmq6hkbsw0ks", wantKCP: "https://kcp.example.com/clusters/2x9lqmq6hkbsw0ks"},
		{name: "--all", context: "https://kcp.example.com/clusters/root:org", all: true,
			wantURL: "https://kcp.example.com/services/workspacemounts/clusters/*", wantKCP: "https://kcp.example.com/clusters/root:org"},
		{name: "not kcp", context: "https://kube.example.com", wantErr: "use --server"},
		{name: "not kcp, a path", context: "https://kube.example.com/api", wantErr: "not a kcp workspace URL"},
		{name: "wildcard context", context: "https://kcp.example.com/clusters/*", wantErr: "does not end in a workspace path"},
		{name: "more after the path", context: "https://kcp.example.com/clusters/root/api", wantErr: "does not end in a workspace path"},
		{name: "upper case path", context: "https://kcp.example.com/clusters/Root", wantErr: "does not end in a workspace path"},
		{name: "query", context: "https://kcp.example.com/clusters/root?x=1", wantErr: "query"},
		{name: "--server with a cluster", context: "https://kube.example.com", server: "https://proxy.example.com/services/workspacemounts/clusters/root:org",
			wantURL: "https://proxy.example.com/services/workspacemounts/clusters/root:org", wantKCPAbsent: true},
		{name: "--server without a cluster takes the context's path", context: "https://kcp.example.com/clusters/root:org", server: "https://vw.example.com:6444/services/workspacemounts/",
			wantURL: "https://vw.example.com:6444/services/workspacemounts/clusters/root:org", wantKCP: "https://kcp.example.com/clusters/root:org"},
		{name: "--server without a cluster, --all", context: "https://kube.example.com", server: "https://vw.example.com/services/workspacemounts", all: true,
			wantURL: "https://vw.example.com/services/workspacemounts/clusters/*", wantKCPAbsent: true},
		{name: "--server without a cluster, no kcp context", context: "https://kube.example.com", server: "https://vw.example.com/services/workspacemounts", wantErr: "names no cluster"},
		{name: "--server with a bad cluster", context: "https://kcp.example.com/clusters/root", server: "https://vw.example.com/services/workspacemounts/clusters/A", wantErr: "does not end in a workspace path"},
		{name: "--server not a URL", context: "https://kcp.example.com/clusters/root", server: "vw.example.com", wantErr: "not an http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveTarget(tc.context, tc.server, tc.all)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			cluster := got.Cluster
			require.Equal(t, tc.wantURL, got.URL(cluster))
			if tc.wantKCPAbsent {
				require.Empty(t, got.KCP.Base)
			} else {
				require.Equal(t, tc.wantKCP, got.KCP.String())
			}
		})
	}
}

// FuzzParseKCPURL: whatever the server URL, ParseKCPURL does not panic, and
// what it accepts is a base without /clusters/ and a valid workspace path
// that make the URL again, whose virtual workspace URL is below the base.
func FuzzParseKCPURL(f *testing.F) {
	for _, seed := range []string{
		"https://kcp.example.com/clusters/root:org",
		"https://kcp.example.com/clusters/root/",
		"http://127.0.0.1:6443/prefix/clusters/abc",
		"https://kcp.example.com/clusters/*",
		"https://kcp.example.com/clusters/root/clusters/other",
		"https://kcp.example.com/clusters//root",
		"https://kcp.example.com/%2Fclusters/root",
		"https://u:p@kcp.example.com/clusters/root",
		"https://kcp.example.com",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, server string) {
		got, err := ParseKCPURL(server)
		if err != nil {
			return
		}
		if !got.Path.IsValid() || got.Path == logicalcluster.Wildcard || got.Path.Empty() {
			t.Fatalf("ParseKCPURL(%q): path %q is not a workspace path", server, got.Path)
		}
		if strings.HasSuffix(got.Base, "/") {
			t.Fatalf("ParseKCPURL(%q): base %q ends in /", server, got.Base)
		}
		base, err := url.Parse(got.Base)
		if err != nil || base.Host == "" || base.RawQuery != "" || base.Fragment != "" {
			t.Fatalf("ParseKCPURL(%q): base %q is not a URL with a host and no query (%v)", server, got.Base, err)
		}
		if strings.TrimSuffix(server, "/") != got.String() {
			// Only an equivalent spelling of the same URL may differ.
			again, err := ParseKCPURL(got.String())
			if err != nil || again != got {
				t.Fatalf("ParseKCPURL(%q) = %+v, which does not parse back: %+v, %v", server, got, again, err)
			}
		}
		target, err := ResolveTarget(server, "", false)
		if err != nil {
			t.Fatalf("ResolveTarget(%q): %v", server, err)
		}
		if want := got.Base + "/services/workspacemounts/clusters/" + got.Path.String(); target.URL(target.Cluster) != want {
			t.Fatalf("ResolveTarget(%q) = %q, want %q", server, target.URL(target.Cluster), want)
		}
	})
}
