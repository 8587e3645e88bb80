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
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/stretchr/testify/require"
)

var created = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// testBinary is this test's own executable, a real Go binary of this
// module: its build information names the main module and the modules the
// test links (cyclonedx-go among them).
func testBinary(t *testing.T) Binary {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	b, err := ReadBinary(exe)
	require.NoError(t, err)
	require.Equal(t, "github.com/workspacemounts/workspacemounts", b.Info.Main.Path)
	require.NotEmpty(t, b.Info.Deps)
	return b
}

func TestSBOMRoundTrip(t *testing.T) {
	t.Parallel()
	b := testBinary(t)
	bom, err := NewSBOM("v0.1.0", created, []Binary{b})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sbom.cdx.json")
	require.NoError(t, WriteSBOM(path, bom))

	read, err := ReadSBOM(path)
	require.NoError(t, err)
	require.Equal(t, cdx.SpecVersion1_6, read.SpecVersion)
	require.Equal(t, "github.com/workspacemounts/workspacemounts", read.Metadata.Component.Name)
	require.Equal(t, "v0.1.0", read.Metadata.Component.Version)
	require.Equal(t, "pkg:golang/github.com/workspacemounts/workspacemounts@v0.1.0", read.Metadata.Component.PackageURL)
	require.NoError(t, CheckSBOM(read, "v0.1.0", []Binary{b}))

	var cyclonedx *cdx.Component
	for i, c := range *read.Components {
		if c.Name == "github.com/CycloneDX/cyclonedx-go" {
			cyclonedx = &(*read.Components)[i]
		}
	}
	require.NotNil(t, cyclonedx, "the SBOM names the modules the binary links")
	require.Equal(t, "v0.12.0", cyclonedx.Version)
	require.Equal(t, "pkg:golang/github.com/CycloneDX/cyclonedx-go@v0.12.0", cyclonedx.PackageURL)

	// The same binaries, the same bytes.
	again := filepath.Join(t.TempDir(), "again.cdx.json")
	bom, err = NewSBOM("v0.1.0", created, []Binary{b})
	require.NoError(t, err)
	require.NoError(t, WriteSBOM(again, bom))
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	second, err := os.ReadFile(again)
	require.NoError(t, err)
	require.Equal(t, string(first), string(second))
}

func TestCheckSBOM(t *testing.T) {
	t.Parallel()
	b := testBinary(t)
	dep := b.Info.Deps[0].Path
	for _, tc := range []struct {
		name    string
		change  func(*cdx.BOM)
		version string
		wantErr string
	}{
		{name: "as written", change: func(*cdx.BOM) {}},
		{name: "another version", version: "v0.2.0", wantErr: "the SBOM's application is github.com/workspacemounts/workspacemounts@v0.1.0"},
		{name: "a dependency missing", wantErr: "the SBOM lacks " + dep, change: func(bom *cdx.BOM) {
			var kept []cdx.Component
			for _, c := range *bom.Components {
				if c.Name != dep {
					kept = append(kept, c)
				}
			}
			bom.Components = &kept
		}},
		{name: "a dependency at another version", wantErr: "the SBOM has " + dep + "@v9.9.9", change: func(bom *cdx.BOM) {
			for i, c := range *bom.Components {
				if c.Name == dep {
					(*bom.Components)[i].Version = "v9.9.9"
				}
			}
		}},
		{name: "the binary's digest", wantErr: "the SBOM's SHA-256 of " + b.Name, change: func(bom *cdx.BOM) {
			for i, c := range *bom.Components {
				if c.Type == cdx.ComponentTypeFile {
					(*bom.Components)[i].Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: "00"}}
				}
			}
		}},
		{name: "no application", wantErr: "names no application", change: func(bom *cdx.BOM) { bom.Metadata.Component = nil }},
		{name: "no components", wantErr: "no components", change: func(bom *cdx.BOM) { bom.Components = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bom, err := NewSBOM("v0.1.0", created, []Binary{b})
			require.NoError(t, err)
			if tc.change != nil {
				tc.change(bom)
			}
			version := "v0.1.0"
			if tc.version != "" {
				version = tc.version
			}
			err = CheckSBOM(bom, version, []Binary{b})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestNewSBOM(t *testing.T) {
	t.Parallel()
	binary := func(name, goarch string, deps ...*debug.Module) Binary {
		return Binary{Name: name, SHA256: "ab", Info: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "example.com/main", Version: "(devel)"},
			Deps:      deps,
			Settings:  []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: goarch}},
		}}
	}
	replaced := &debug.Module{Path: "k8s.io/api", Version: "v0.36.0", Replace: &debug.Module{Path: "github.com/kcp-dev/kubernetes/staging/src/k8s.io/api", Version: "v0.0.0-20260602065202-e006560fc76a", Sum: "h1:x"}}
	plain := &debug.Module{Path: "example.com/a", Version: "v1.0.0", Sum: "h1:a"}
	armOnly := &debug.Module{Path: "example.com/arm", Version: "v0.1.0"}

	t.Run("the union of the binaries' modules, a replaced module as its replacement", func(t *testing.T) {
		t.Parallel()
		bins := []Binary{binary("amd64", "amd64", replaced, plain), binary("arm64", "arm64", plain, armOnly)}
		bom, err := NewSBOM("v1.0.0", created, bins)
		require.NoError(t, err)
		require.NoError(t, CheckSBOM(bom, "v1.0.0", bins))
		got := map[string]cdx.Component{}
		for _, c := range *bom.Components {
			got[c.Name] = c
		}
		require.Len(t, got, 5)
		k8s := got["github.com/kcp-dev/kubernetes/staging/src/k8s.io/api"]
		require.Equal(t, "v0.0.0-20260602065202-e006560fc76a", k8s.Version)
		require.Contains(t, *k8s.Properties, cdx.Property{Name: "go:module:replaces", Value: "k8s.io/api@v0.36.0"})
		require.Equal(t, cdx.ComponentTypeLibrary, got["example.com/arm"].Type)
		require.Equal(t, cdx.ComponentTypeFile, got["arm64"].Type)
		require.Contains(t, *got["arm64"].Properties, cdx.Property{Name: "go:build:GOARCH", Value: "arm64"})
		require.Len(t, *(*bom.Dependencies)[0].Dependencies, 3, "the application depends on each module")
	})
	t.Run("two versions of a module", func(t *testing.T) {
		t.Parallel()
		other := &debug.Module{Path: "example.com/a", Version: "v1.1.0"}
		_, err := NewSBOM("v1.0.0", created, []Binary{binary("amd64", "amd64", plain), binary("arm64", "arm64", other)})
		require.ErrorContains(t, err, "arm64 links example.com/a@v1.1.0, another binary example.com/a@v1.0.0")
	})
	t.Run("two main modules", func(t *testing.T) {
		t.Parallel()
		b := binary("other", "amd64")
		b.Info.Main.Path = "example.com/other"
		_, err := NewSBOM("v1.0.0", created, []Binary{binary("amd64", "amd64"), b})
		require.ErrorContains(t, err, "one SBOM describes one main module")
	})
	t.Run("no binaries", func(t *testing.T) {
		t.Parallel()
		_, err := NewSBOM("v1.0.0", created, nil)
		require.ErrorContains(t, err, "no binaries")
	})
	t.Run("not a Go binary", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "notes.md")
		require.NoError(t, os.WriteFile(path, []byte("# notes\n"), 0o644))
		_, err := ReadBinary(path)
		require.ErrorContains(t, err, "the Go build information of "+path)
	})
}
