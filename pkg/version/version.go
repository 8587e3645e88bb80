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

// Package version says which build of workspacemounts is running.
package version

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Set by the Makefile's -ldflags -X; a plain `go build` leaves the defaults.
var (
	version  = "v0.0.0-dev"
	revision = "unknown"
)

const kcpModule = "github.com/kcp-dev/kcp"

// Info is what [Get] reports; Version is the VERSION file's release, v0.1.0-N-g<sha> past it, or
// v0.0.0-dev.
type Info struct {
	Version    string `json:"version"`
	Revision   string `json:"revision"`
	GoVersion  string `json:"goVersion"`
	KcpVersion string `json:"kcpVersion"`
	Platform   string `json:"platform"`
}

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

// String is the line `workspacemounts version` prints.
func (i Info) String() string {
	return fmt.Sprintf("workspacemounts %s (revision %s, %s, %s, kcp libraries %s)",
		i.Version, i.Revision, i.GoVersion, i.Platform, i.KcpVersion)
}

var semver = regexp.MustCompile(`^v(\d+)\.(\d+)\.`)

// APIServer is the Info as an API server's /version answers it.
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
