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

package apiserver

import (
	"net/http"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/klog/v2"
)

// The groups kcp's front-proxy never forwards: kcp v0.32.3,
// pkg/proxy/options/authentication.go, NewAuthentication:
//
//	// SystemLogicalClusterAdmin is privileged and only for internal traffic,
//	// SystemExternalLogicalClusterAdmin must be used for all logical-cluster-admin
//	// requests via the proxy, so we drop SystemLogicalClusterAdmin here.
//	//
//	// system:kcp:initializer:* and system:kcp:terminator:* are synthetic groups
//	// that lifecycle VW content proxies inject after they have evaluated the
//	// request against the WorkspaceType's initializer/terminator permissions.
//	// Stripping them on ingress prevents clients from self-asserting them and
//	// bypassing the in-process RBAC evaluation.
//	DropGroups: []string{
//		user.SystemPrivilegedGroup,
//		bootstrap.SystemLogicalClusterAdmin,
//		bootstrap.SystemKcpInitializerGroupPrefix + "*",
//		bootstrap.SystemKcpTerminatorGroupPrefix + "*",
//	},
//
// applied by kcp's GroupFilter (pkg/authentication/groups.go) to every user
// the front-proxy authenticates, before it names them in X-Remote-Group; the
// constants are in pkg/authorization/bootstrap/policy.go. So a user of the
// request-header path carrying one of them was not forwarded by an honest
// front-proxy (one before v0.32.1 passes a client's own X-Remote-Group on),
// and droppedGroup leaves them out, as the front-proxy does.
var (
	// droppedGroups: user.SystemPrivilegedGroup, bootstrap.SystemLogicalClusterAdmin.
	droppedGroups = []string{user.SystemPrivilegedGroup, "system:kcp:logical-cluster-admin"}
	// droppedGroupPrefixes: bootstrap.SystemKcpInitializerGroupPrefix, bootstrap.SystemKcpTerminatorGroupPrefix.
	droppedGroupPrefixes = []string{"system:kcp:initializer:", "system:kcp:terminator:"}
)

// droppedGroup tells whether kcp's front-proxy never forwards the group.
func droppedGroup(group string) bool {
	if slices.Contains(droppedGroups, group) {
		return true
	}
	for _, prefix := range droppedGroupPrefixes {
		if strings.HasPrefix(group, prefix) {
			return true
		}
	}
	return false
}

// withoutDroppedGroups is groups without those kcp's front-proxy never
// forwards, in their order; groups itself when it has none of them.
func withoutDroppedGroups(groups []string) []string {
	if !slices.ContainsFunc(groups, droppedGroup) {
		return groups
	}
	return slices.DeleteFunc(slices.Clone(groups), droppedGroup)
}

// frontProxyGroupFilter is the request-header authenticator (the user in
// X-Remote-User, X-Remote-Group and X-Remote-Extra-* of a request with the
// front-proxy's client certificate) without the groups kcp's front-proxy
// never forwards, as kcp's own GroupFilter wraps the front-proxy's
// authenticators: a wrapper of the one authenticator it is about, so that
// no review, share or cache key sees those groups, and a user of a bearer
// token or client certificate keeps what kcp or the CA says they are.
type frontProxyGroupFilter struct {
	requestHeader authenticator.Request
}

var _ authenticator.Request = frontProxyGroupFilter{}

// AuthenticateRequest implements authenticator.Request.
func (f frontProxyGroupFilter) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := f.requestHeader.AuthenticateRequest(req)
	if !ok || resp == nil || resp.User == nil {
		return resp, ok, err
	}
	groups := resp.User.GetGroups()
	kept := withoutDroppedGroups(groups)
	if len(kept) == len(groups) {
		return resp, ok, err
	}
	klog.FromContext(req.Context()).V(2).Info("Dropped groups kcp's front-proxy never forwards from a user of the request headers",
		"user", resp.User.GetName(), "dropped", len(groups)-len(kept))
	return &authenticator.Response{
		Audiences: resp.Audiences,
		User: &user.DefaultInfo{
			Name:   resp.User.GetName(),
			UID:    resp.User.GetUID(),
			Groups: kept,
			Extra:  resp.User.GetExtra(),
		},
	}, ok, err
}
