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

package doctor

import (
	"fmt"

	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// contractOf says in words what kcp routes with a form.
func contractOf(form mount.URLForm) string {
	if form == mount.URLFormLegacy {
		return "routes http and https mount URLs with a host and no user information (the legacy form)"
	}
	return "routes only https mount URLs with a host and no user information, query or fragment (the https form)"
}

// judgeMountURLContract tells which mount URL contract the shard's kcp
// release applies (kcprelease.Release.MountURLForm) and what the plugin's
// --mount-url-contract makes of it: levels 1 and 2 follow the flag, level 3
// writes spec.URL in the https form on every kcp. WARN when levels 1 and 2
// call routable what kcp refuses (legacy on kcp v0.33 or later); a plugin
// stricter than kcp is OK.
func judgeMountURLContract(shard ShardFacts, leader leaderfacts.Facts, leaderKnown bool) Result {
	r := Result{Check: shardCheck(CheckMountURLContract, shard)}
	release, err := kcprelease.Parse(shard.GitVersion)
	if shard.VersionErr != nil || err != nil {
		r.Status, r.Detail = Skip, "kcp's release is unknown ("+CheckKCPVersion+"); with --mount-url-contract=auto the plugin takes the https form"
		return r
	}
	kcpForm := release.MountURLForm()
	kcp := fmt.Sprintf("kcp v%s %s", release, contractOf(kcpForm))
	if !leaderKnown || leader.MountURLContract == "" {
		r.Status, r.Detail = OK, kcp+"; the plugin's --mount-url-contract is unknown ("+CheckLease+")"
		return r
	}
	form := kcpForm
	if leader.MountURLContract != "auto" {
		form = mount.URLForm(leader.MountURLContract)
	}
	plugin := fmt.Sprintf("--mount-url-contract=%s: levels 1 and 2 take the %s form", leader.MountURLContract, form)
	if leader.WorkspaceURL {
		plugin += "; level 3 writes spec.URL in the https form"
	}
	switch {
	case form == mount.URLFormLegacy && kcpForm == mount.URLFormHTTPS:
		r.Status = Warn
		r.Detail = kcp + "; " + plugin + ": http mounts, and those with a query or fragment, are called routable though kcp refuses them"
		r.Fix = "run the plugin with --mount-url-contract=auto (or https)"
	case form == mount.URLFormHTTPS && kcpForm == mount.URLFormLegacy:
		r.Status = OK
		r.Detail = kcp + "; " + plugin + ", stricter than kcp: http mounts are MountURLInvalid though kcp routes them"
	default:
		r.Status, r.Detail = OK, kcp+"; "+plugin
	}
	return r
}
