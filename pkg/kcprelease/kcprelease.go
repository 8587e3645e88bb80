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

// Package kcprelease reads which kcp release a kcp answers or was built from.
package kcprelease

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// Release is a kcp release, v0.28.1 or a pre-release such as v0.33.0-rc.1.
type Release struct {
	*version.Version
}

// built is what git describe adds past a tag: "-12-gabcdef0", "-dirty".
var built = regexp.MustCompile(`(-\d+-g[0-9a-f]+)?(-dirty)?$`)

// Parse reads the kcp release in a gitVersion (v1.31.6+kcp-v0.28.1) or a --version, a build past it
// included.
func Parse(s string) (Release, error) {
	i := strings.Index(s, "kcp-v")
	if i < 0 {
		return Release{}, fmt.Errorf("%q names no kcp release (kcp-vX.Y.Z)", strings.TrimSpace(s))
	}
	tag := strings.Fields(s[i+len("kcp-"):])[0]
	v, err := version.ParseSemantic(built.ReplaceAllString(tag, ""))
	if err != nil {
		return Release{}, fmt.Errorf("%q: %w", strings.TrimSpace(s), err)
	}
	return Release{v}, nil
}

// HTTPSMounts is the first kcp release that routes only https mount URLs (kcp-dev/kcp
// pkg/reconciler/tenancy/workspacemounts @3f4358ca).
var HTTPSMounts = version.MustParseSemantic("v0.33.0")

// MountURLForm is the form of mount URLs the release routes.
func (r Release) MountURLForm() mount.URLForm {
	if r.Major() > HTTPSMounts.Major() || (r.Major() == HTTPSMounts.Major() && r.Minor() >= HTTPSMounts.Minor()) {
		return mount.URLFormHTTPS
	}
	return mount.URLFormLegacy
}
