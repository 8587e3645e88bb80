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

package layout

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/workspacemounts/workspacemounts/"

// rule forbids the packages under from to import any package under one of to.
type rule struct {
	from string
	to   []string
	why  string
}

var rules = []rule{
	{"pkg/", []string{"server", "controllers/", "virtual/", "cmd/"}, "a leaf imports no part and not the root"},
	{"controllers/", []string{"virtual/", "server", "cmd/"}, "the controller never imports the virtual workspace or the root"},
	{"virtual/", []string{"controllers/", "server", "cmd/"}, "the virtual workspace never imports the controller or the root"},
	{"virtual/registry/", []string{"virtual/apiserver"}, "storage knows nothing of the server around it"},
	{"server", []string{"cmd/"}, "the root is imported by the command, not the other way"},
}

// TestImportRules: every Go package of the module, its non-test and test
// imports, against the rules.
func TestImportRules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	imports := map[string][]string{} // package dir (module-relative) -> module-relative imports
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" || d.Name() == "third_party") {
			return filepath.SkipDir
		}
		if rel != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (hack/kcp, hack/tools)
			}
		}
		pkg, err := build.ImportDir(path, build.ImportComment)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			return err
		}
		for _, imported := range append(append(pkg.Imports, pkg.TestImports...), pkg.XTestImports...) {
			if own, ok := strings.CutPrefix(imported, module); ok {
				imports[filepath.ToSlash(rel)] = append(imports[filepath.ToSlash(rel)], own)
			}
		}
		return nil
	}))
	require.Contains(t, imports, "server", "the walk found the module's packages")

	require.Empty(t, violations(imports))

	// The rules catch what they forbid.
	require.Equal(t, []string{
		"controllers/workspacemounts imports virtual/registry/workspacemounts: the controller never imports the virtual workspace or the root",
		"pkg/metrics imports server: a leaf imports no part and not the root",
		"virtual/registry/workspacemounts imports virtual/apiserver: storage knows nothing of the server around it",
	}, violations(map[string][]string{
		"pkg/metrics":                      {"pkg/mount", "server"},
		"controllers/workspacemounts":      {"pkg/mount", "virtual/registry/workspacemounts"},
		"virtual/registry/workspacemounts": {"virtual/apis/workspacemounts/v1alpha1", "virtual/apiserver"},
		"server":                           {"controllers/workspacemounts", "virtual/apiserver", "pkg/mount"},
		"cmd/workspacemounts/app":          {"server"},
	}))
}

// violations are the imports that break a rule, sorted.
func violations(imports map[string][]string) []string {
	var broken []string
	for from, imported := range imports {
		for _, r := range rules {
			if !under(from, r.from) {
				continue
			}
			for _, to := range imported {
				for _, forbidden := range r.to {
					if under(to, forbidden) {
						broken = append(broken, from+" imports "+to+": "+r.why)
					}
				}
			}
		}
	}
	sort.Strings(broken)
	return broken
}

// under tells whether a module-relative package path is prefix (a
// package, "server") or below it ("pkg/").
func under(path, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(path+"/", prefix)
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}
