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

// Package version says which build of workspacemounts is running: the
// release in the repository's VERSION file (v0.1.0), or v0.1.0-N-g<sha> for
// a commit N past the one that set it, and the commit, set by the Makefile
// with -ldflags -X; the Go version and the kcp library version come from the
// binary's own build information. `workspacemounts version`, the start-up
// log line, the virtual workspace's /version and the metric
// workspacemounts_build_info all read Get.
package version

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Set by the Makefile: -ldflags "-X github.com/workspacemounts/workspacemounts/pkg/version.version=v0.1.0-3-gabcdef0
// -X github.com/workspacemounts/workspacemounts/pkg/version.revision=<commit>". A plain `go build` leaves the defaults.
var (
	version  = "v0.0.0-dev"
	revision = "unknown"
)

// kcpModule is the kcp library module whose version Get reports.
const kcpModule = "github.com/kcp-dev/kcp"

// Info is what Get reports.
type Info struct {
	// Version is v0.1.0 for the release, v0.1.0-N-g<sha> past it (with
	// -dirty for uncommitted changes), v0.0.0-dev for a plain go build.
	Version string `json:"version"`
	// Revision is the full commit, or "unknown".
	Revision string `json:"revision"`
	// GoVersion is the Go toolchain the binary was built with.
	GoVersion string `json:"goVersion"`
	// KcpVersion is the version of the kcp libraries the binary was built
	// with (github.com/kcp-dev/kcp), or "unknown".
	KcpVersion string `json:"kcpVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get reports this binary's build.
func Get() Info {
	info := Info{
		Version:    version,
		Revision:   revision,
		GoVersion:  runtime.Version(),
		KcpVersion: "unknown",
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	if build, ok := debug.ReadBuildInfo(); ok {
		info.KcpVersion = moduleVersion(build, kcpModule)
	}
	return info
}

// moduleVersion is the version of module path in build (after any
// replacement), or "unknown".
func moduleVersion(build *debug.BuildInfo, path string) string {
	for _, dep := range build.Deps {
		if dep.Path != path {
			continue
		}
		if dep.Replace != nil && dep.Replace.Version != "" {
			return dep.Replace.Version
		}
		if dep.Version != "" {
			return dep.Version
		}
	}
	return "unknown"
}

// String is the one line `workspacemounts version` prints and the start-up
// log repeats.
func (i Info) String() string {
	return fmt.Sprintf("workspacemounts %s (revision %s, %s, %s, kcp libraries %s)",
		i.Version, i.Revision, i.GoVersion, i.Platform, i.KcpVersion)
}

// semver is the major and minor of a version such as v0.1.0-3-gabcdef0.
var semver = regexp.MustCompile(`^v(\d+)\.(\d+)\.`)

// APIServer is the Info as an API server's /version answers it (what
// `kubectl version` reads): the version as gitVersion, its major and minor,
// the commit, and gitTreeState dirty for a -dirty version.
func (i Info) APIServer() apimachineryversion.Info {
	major, minor := "", ""
	if m := semver.FindStringSubmatch(i.Version); m != nil {
		major, minor = m[1], m[2]
	}
	treeState := "clean"
	if strings.HasSuffix(i.Version, "-dirty") {
		treeState = "dirty"
	}
	return apimachineryversion.Info{
		Major:        major,
		Minor:        minor,
		GitVersion:   i.Version,
		GitCommit:    i.Revision,
		GitTreeState: treeState,
		GoVersion:    i.GoVersion,
		Compiler:     runtime.Compiler,
		Platform:     i.Platform,
	}
}
