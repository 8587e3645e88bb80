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
	"fmt"
	"net/url"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// clustersSegment is what kcp's server URLs have before a workspace path:
// https://<host>[/<prefix>]/clusters/<path>.
const clustersSegment = "/clusters/"

// KCPURL is a kcp server URL split as kcp's own kubectl plugins split it
// (kcp's cli ParseClusterURL): the base, everything before /clusters/, and
// the workspace path after it.
type KCPURL struct {
	// Base is scheme, host and any prefix, with neither /clusters/ nor a
	// trailing slash: https://kcp.example.com or https://host/kcp.
	Base string
	// Path is the workspace path, e.g. root:org:team-a.
	Path logicalcluster.Path
}

// String is the URL again: <base>/clusters/<path>.
func (u KCPURL) String() string {
	return u.Base + clustersSegment + u.Path.String()
}

// ParseKCPURL splits a kcp server URL, https://<host>[/<prefix>]/clusters/<path>[/],
// into its base and workspace path. Anything else (no /clusters/, an invalid
// or wildcard path, more after the path, a query or fragment, a scheme other
// than http(s)) is an error saying what it is not.
func ParseKCPURL(server string) (KCPURL, error) {
	u, err := url.Parse(server)
	if err != nil {
		return KCPURL{}, fmt.Errorf("%q is not a URL: %w", server, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return KCPURL{}, fmt.Errorf("%q is not an http(s) URL with a host", server)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return KCPURL{}, fmt.Errorf("%q has a query, a fragment or user information: not a kcp workspace URL", server)
	}
	i := strings.LastIndex(u.Path, clustersSegment)
	if i < 0 {
		return KCPURL{}, fmt.Errorf("%q is not a kcp workspace URL (https://<host>/clusters/<workspace path>)", server)
	}
	segment := strings.TrimSuffix(u.Path[i+len(clustersSegment):], "/")
	path := logicalcluster.NewPath(segment)
	if segment == "" || strings.Contains(segment, "/") || path == logicalcluster.Wildcard || !path.IsValid() {
		return KCPURL{}, fmt.Errorf("%q does not end in a workspace path (root:org:ws) after /clusters/", server)
	}
	base := *u
	base.Path = u.Path[:i]
	base.RawPath = ""
	return KCPURL{Base: strings.TrimSuffix(base.String(), "/"), Path: path}, nil
}

// Target is where the commands send their requests: the virtual workspace's
// base (…/services/workspacemounts) and the cluster segment of a list or get.
type Target struct {
	// VirtualWorkspace is the virtual workspace up to /clusters/:
	// https://<host>/services/workspacemounts.
	VirtualWorkspace string
	// Cluster is the segment after /clusters/: a workspace path, or * (--all).
	Cluster string
	// KCP is the kcp URL of the current context, for the commands that ask kcp
	// (tree, why); its Base is empty when the context's server is not kcp's.
	KCP KCPURL
}

// URL is the virtual workspace at a cluster segment.
func (t Target) URL(cluster string) string {
	return t.VirtualWorkspace + clustersSegment + cluster
}

// ResolveTarget derives the virtual workspace from the current context's
// server (kcp's https://<host>/clusters/<path> becomes
// https://<host>/services/workspacemounts/clusters/<path>, --all puts * for
// the path), or takes it from --server: the virtual workspace's URL with or
// without /clusters/<c> (without, the context's path or * completes it).
func ResolveTarget(contextServer, serverFlag string, all bool) (Target, error) {
	var t Target
	kcpURL, kcpErr := ParseKCPURL(contextServer)
	if kcpErr == nil {
		t.KCP = kcpURL
	}
	if serverFlag == "" {
		if kcpErr != nil {
			return Target{}, fmt.Errorf("the current context's server %w; use --server https://<front-proxy>%s<workspace path> to name the virtual workspace", kcpErr, clusterpath.Prefix)
		}
		t.VirtualWorkspace = kcpURL.Base + strings.TrimSuffix(clusterpath.Prefix, clustersSegment)
		t.Cluster = kcpURL.Path.String()
	} else {
		vw, cluster, err := splitServerFlag(serverFlag)
		if err != nil {
			return Target{}, err
		}
		t.VirtualWorkspace = vw
		switch {
		case cluster != "":
			t.Cluster = cluster
		case kcpErr == nil:
			t.Cluster = kcpURL.Path.String()
		case !all:
			return Target{}, fmt.Errorf("--server %s names no cluster (…/clusters/<path>) and the current context's server %w; add /clusters/<path> to --server, or use --all", serverFlag, kcpErr)
		}
	}
	if all {
		t.Cluster = logicalcluster.Wildcard.String()
	}
	return t, nil
}

// splitServerFlag splits --server into the virtual workspace's base and the
// cluster segment after /clusters/ ("" when there is none).
func splitServerFlag(server string) (base, cluster string, err error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", "", fmt.Errorf("--server %q is not a URL: %w", server, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("--server %q is not an http(s) URL with a host (and no query)", server)
	}
	i := strings.LastIndex(u.Path, clustersSegment)
	if i < 0 {
		return strings.TrimSuffix(server, "/"), "", nil
	}
	segment := strings.TrimSuffix(u.Path[i+len(clustersSegment):], "/")
	if segment == "" || strings.Contains(segment, "/") || !logicalcluster.NewPath(segment).IsValid() {
		return "", "", fmt.Errorf("--server %q: %q after /clusters/ is not a workspace path or *", server, segment)
	}
	b := *u
	b.Path = u.Path[:i]
	b.RawPath = ""
	return strings.TrimSuffix(b.String(), "/"), segment, nil
}
