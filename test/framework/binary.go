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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// modulePath identifies the repository root by its go.mod.
const modulePath = "github.com/workspacemounts/workspacemounts"

// binary returns the kcp executable to run.
func (o Options) binary() (string, error) {
	return findBinary(o.Binary, "KCP_BINARY", "kcp")
}

// findBinary returns the kcp command (kcp, cache-server, kcp-front-proxy)
// to run: the executable given, else the one $envVar names, else <repo
// root>/bin/<name>, checking that it is an executable file. The errors say
// how to build it (make kcp: hack/kcp/build.sh).
func findBinary(given, envVar, name string) (string, error) {
	binary := given
	if binary == "" {
		binary = os.Getenv(envVar)
	}
	if binary == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", fmt.Errorf("finding the %s binary (set %s to skip this): %w", name, envVar, err)
		}
		binary = filepath.Join(root, "bin", name)
	}
	info, err := os.Stat(binary) //nolint:gosec // G703: the binary to run is the caller's choice.
	if err != nil {
		return "", fmt.Errorf("%s binary: %w (build it with `make kcp`, or set %s)", name, err, envVar)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s binary %s is not an executable file", name, binary)
	}
	return binary, nil
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
