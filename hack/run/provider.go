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

package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// startMountProvider starts the demo's mount provider (framework.MountProvider,
// kcp's newer mount contract) where kcp has a mount proxy client
// certificate (--mount-proxy-client-cert-file, as `kcp start options`
// lists it), and returns it with the flags kcp needs for it. Where kcp has
// none (v0.28.1) it starts nothing, and the demo's ready mounts point at
// their own workspaces in kcp, as they always did. It says which in one
// line, and where kcp's mount proxy is the older one (no
// --mount-proxy-server-ca-file: v0.32.3) that the caller's identity headers
// reach the provider unchecked.
func (c config) startMountProvider(ctx context.Context, binary, release string) (*framework.MountProvider, []string, error) {
	flags, err := framework.KCPMountProxyFlags(ctx, binary)
	if err != nil {
		return nil, nil, err
	}
	if !flags.ClientCert {
		fmt.Printf("kcp %s has no mount proxy flags (--mount-proxy-client-cert-file): the demo's ready mounts point at their own workspaces in kcp, as before.\n", release)
		return nil, nil, nil
	}
	p, err := framework.StartMountProvider(ctx, filepath.Join(c.state, "mount-provider"))
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("kcp %s has --mount-proxy-client-cert-file: the demo's ready mounts point at a mount provider on %s that follows kcp v0.33's contract "+
		"(https; kcp's mount proxy trusted by its client certificate; identity from X-Remote-* only, never a bearer token; 508 at %d hops).\n",
		release, p.URL, framework.MaxMountHops)
	if !flags.ServerCA {
		fmt.Printf("Only for trying it: kcp %s forwards a mounted workspace's requests before authenticating them, with the caller's own headers "+
			"(X-Remote-* and Authorization); kcp v0.33's mount proxy (--mount-proxy-server-ca-file) sets X-Remote-* itself.\n", release)
	}
	args := p.KCPArgs(flags)
	return p, args, nil
}

// mountProviderText is what to try with the demo's mount provider, one
// shard and a provider given (kcp's in-tree mounts controller routes the
// ready mounts there), else nothing.
func mountProviderText(given bool, kubeconfig, kcpURL string) string {
	if !given {
		return ""
	}
	return "  # a ready mount, through kcp's mount proxy, answered by the demo's mount provider: who kcp says you are\n" +
		"  kubectl --kubeconfig " + kubeconfig + " --server " + kcpURL + "/clusters/root:demo-a:ready auth whoami\n\n"
}
