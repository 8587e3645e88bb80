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
// kcp's newer mount contract) where kcp's mount proxy is v0.33's: it has
// --mount-proxy-server-ca-file, as `kcp start options` lists it, and
// authenticates a request before it forwards it. It returns the provider
// with the flags kcp needs for it. Elsewhere (v0.28.1, v0.32.3, whose proxy
// forwards the caller's own identity headers unchecked) it starts nothing,
// and the demo's ready mounts point at their own workspaces in kcp, as they
// always did. It says which in one line.
func (c config) startMountProvider(ctx context.Context, binary, release string) (*framework.MountProvider, []string, error) {
	flags, err := framework.KCPMountProxyFlags(ctx, binary)
	if err != nil {
		return nil, nil, err
	}
	if !flags.ServerCA {
		fmt.Printf("kcp %s has no v0.33 mount proxy (--mount-proxy-server-ca-file): the demo's ready mounts point at their own workspaces in kcp, as before.\n", release)
		return nil, nil, nil
	}
	p, err := framework.StartMountProvider(ctx, filepath.Join(c.state, "mount-provider"))
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("kcp %s has a v0.33 mount proxy: the demo's ready mounts point at a mount provider on %s that follows its contract "+
		"(https; kcp's mount proxy trusted by its client certificate; identity from X-Remote-* only, never a bearer token; 508 at %d hops).\n",
		release, p.URL, framework.MaxMountHops)
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
