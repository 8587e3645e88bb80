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

// clustersSegment is what kcp's server URLs have before a workspace path.
const clustersSegment = "/clusters/"

// KCPURL is a kcp server URL split as kcp's cli ParseClusterURL splits it: the base, everything before
// /clusters/, and the workspace path after it.
type KCPURL struct {
	Base string
	Path logicalcluster.Path
}

// String is the URL again: <base>/clusters/<path>.
func (u KCPURL) String() string {
	return u.Base + clustersSegment + u.Path.String()
}

// parseClusterURL is the one parser of server URLs: it splits https://<host>[/<prefix>][/clusters/<cluster>][/]
// into its base, without a trailing slash, and the cluster segment, a workspace path or *, empty without /clusters/.
func parseClusterURL(server string) (base string, cluster logicalcluster.Path, err error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", cluster, fmt.Errorf("%q is not a URL: %w", server, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", cluster, fmt.Errorf("%q is not an http(s) URL with a host and no query, fragment or user information", server)
	}
	i := strings.LastIndex(u.Path, clustersSegment)
	if i < 0 {
		return strings.TrimSuffix(u.String(), "/"), cluster, nil
	}
	segment := strings.TrimSuffix(u.Path[i+len(clustersSegment):], "/")
	if cluster = logicalcluster.NewPath(segment); segment == "" || strings.Contains(segment, "/") || !cluster.IsValid() {
		return "", logicalcluster.Path{}, fmt.Errorf("%q does not end in a workspace path (root:org:ws) after /clusters/", server)
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path[:i], "/"), "" // a prefix of slashes alone is none
	return strings.TrimSuffix(u.String(), "/"), cluster, nil
}

// ParseKCPURL splits a kcp workspace URL, https://<host>[/<prefix>]/clusters/<path>[/], with [parseClusterURL]; a
// URL without /clusters/ or with * is not one.
func ParseKCPURL(server string) (KCPURL, error) {
	base, path, err := parseClusterURL(server)
	switch {
	case err != nil:
		return KCPURL{}, err
	case path.Empty():
		return KCPURL{}, fmt.Errorf("%q is not a kcp workspace URL (https://<host>/clusters/<workspace path>)", server)
	case path == logicalcluster.Wildcard:
		return KCPURL{}, fmt.Errorf("%q does not end in a workspace path (root:org:ws) after /clusters/", server)
	}
	return KCPURL{Base: base, Path: path}, nil
}

// Target is where the commands send their requests: the virtual workspace's base, the cluster segment of a list
// or get, and the context's kcp URL for the commands that ask kcp (an empty Base when it is not kcp's).
type Target struct {
	VirtualWorkspace string
	Cluster          string
	KCP              KCPURL
}

// URL is the virtual workspace at a cluster segment.
func (t Target) URL(cluster string) string {
	return t.VirtualWorkspace + clustersSegment + cluster
}

// ResolveTarget derives the virtual workspace from the current context's kcp URL (--all puts * for the path), or
// takes it from --server, with or without /clusters/<cluster> (without, the context's path or * completes it).
func ResolveTarget(contextServer, serverFlag string, all bool) (Target, error) {
	var t Target
	kcpURL, kcpErr := ParseKCPURL(contextServer)
	if kcpErr == nil {
		t.KCP = kcpURL
	}
	switch {
	case serverFlag == "" && kcpErr != nil:
		return Target{}, fmt.Errorf("the current context's server %w; use --server https://<front-proxy>%s<workspace path> to name the virtual workspace", kcpErr, clusterpath.Prefix)
	case serverFlag == "":
		t.VirtualWorkspace = kcpURL.Base + strings.TrimSuffix(clusterpath.Prefix, clustersSegment)
		t.Cluster = kcpURL.Path.String()
	default:
		vw, cluster, err := parseClusterURL(serverFlag)
		if err != nil {
			return Target{}, fmt.Errorf("--server: %w", err)
		}
		t.VirtualWorkspace, t.Cluster = vw, cluster.String()
		if cluster.Empty() && kcpErr == nil {
			t.Cluster = kcpURL.Path.String()
		} else if cluster.Empty() && !all {
			return Target{}, fmt.Errorf("--server %s names no cluster (…/clusters/<path>) and the current context's server %w; add /clusters/<path> to --server, or use --all", serverFlag, kcpErr)
		}
	}
	if all {
		t.Cluster = logicalcluster.Wildcard.String()
	}
	return t, nil
}
