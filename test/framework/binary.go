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

package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
)

// modulePath identifies the repository root by its go.mod.
const modulePath = "github.com/workspacemounts/workspacemounts"

// binary returns the kcp executable to run.
func (o Options) binary() (string, error) {
	return findBinary(o.Binary, "KCP_BINARY", "kcp", "kcp")
}

// KCPBinary returns the kcp executable Start runs by default: $KCP_BINARY,
// else <repo root>/bin/kcp (make kcp), which must be an executable file.
func KCPBinary() (string, error) {
	return Options{}.binary()
}

// findBinary returns the executable to run (kcp's commands kcp,
// cache-server and kcp-front-proxy, workspacemounts, prometheus): the one
// given, else binaryPath's, checking that it is an executable file. The
// errors say how to build it: make <target>.
func findBinary(given, envVar, name, target string) (string, error) {
	binary := given
	if binary == "" {
		var err error
		if binary, err = binaryPath(envVar, name); err != nil {
			return "", err
		}
	}
	info, err := os.Stat(binary)
	if err != nil {
		return "", fmt.Errorf("%s binary: %w (build it with `make %s`, or set %s)", name, err, target, envVar)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s binary %s is not an executable file", name, binary)
	}
	return binary, nil
}

// binaryPath returns the executable $envVar names, else <repo
// root>/bin/<name>, which make builds.
func binaryPath(envVar, name string) (string, error) {
	if binary := os.Getenv(envVar); binary != "" {
		return binary, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("finding the %s binary (set %s to skip this): %w", name, envVar, err)
	}
	return filepath.Join(root, "bin", name), nil
}

// RepoRoot returns the directory of the go.mod of module
// github.com/workspacemounts/workspacemounts, searching upwards from the working
// directory (which `go test` sets to the package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && goModModule(data) == modulePath {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// goModModule returns the module path declared in a go.mod file.
func goModModule(data []byte) string {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// KCPRelease returns the kcp release a kcp command (kcp, kcp-front-proxy)
// was built from, from its --version; an error for a build without it
// (go build without kcp's -ldflags prints v0.0.0-master+$Format:%H$).
func KCPRelease(ctx context.Context, binary string) (*version.Version, error) {
	out, err := exec.CommandContext(ctx, binary, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w: %s", binary, err, bytes.TrimSpace(out))
	}
	return parseKCPRelease(string(out))
}

func parseKCPRelease(versionOutput string) (*version.Version, error) {
	release, err := kcprelease.Parse(versionOutput)
	if err != nil {
		return nil, fmt.Errorf("%w: build kcp as its Makefile does, or with make kcp", err)
	}
	return release.Version, nil
}

// RedirectsUncleanPaths is the first kcp whose proxy (kcp's mini-proxy in
// front of a shard, and kcp-front-proxy) routes its path mappings with a Go
// http.ServeMux (kcp's pkg/server/proxy/handler.go, new in v0.29.0 with kcp
// c767a4d36): a path with an empty, "." or ".." segment is answered with
// 307 Temporary Redirect to its cleaned form and never reaches the backend.
// Before it, such a path is passed on as it is.
var RedirectsUncleanPaths = version.MustParseSemantic("v0.29.0")

// Release is the kcp release of the kcp s runs.
func (s *Server) Release(ctx context.Context) (*version.Version, error) {
	return KCPRelease(ctx, s.binary)
}

// FrontProxyRelease is the kcp release of the front-proxy s runs.
func (s *ShardedServer) FrontProxyRelease(ctx context.Context) (*version.Version, error) {
	return KCPRelease(ctx, s.opts.FrontProxyBinary)
}
