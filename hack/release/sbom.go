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
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SpecVersion is the CycloneDX version of the SBOM: 1.6, the newest that
// the common scanners read.
const SpecVersion = cdx.SpecVersion1_6

// Binary is one released binary: the file attached to the release and the
// Go build information linked into it (debug/buildinfo).
type Binary struct {
	// Name is the file's name in the release, workspacemounts-<tag>-<os>-<arch>.
	Name   string
	SHA256 string
	Info   *debug.BuildInfo
}

// ReadBinary reads the build information and the SHA-256 of a Go binary.
func ReadBinary(path string) (Binary, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("the Go build information of %s: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Binary{}, err
	}
	return Binary{Name: filepath.Base(path), SHA256: sum, Info: info}, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Setting returns the value of a build setting (GOOS, GOARCH, -ldflags...),
// "" when the binary has none.
func (b Binary) Setting(key string) string {
	for _, s := range b.Info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// module is what a binary links of one module: the module compiled, which
// is the replacement where go.mod replaces one (kcp's Kubernetes fork for
// k8s.io/*), and the module path the code imports.
type module struct {
	Path, Version, Sum string
	// Replaces is the path@version that go.mod replaced with this one.
	Replaces string
}

func linked(dep *debug.Module) module {
	if dep.Replace == nil {
		return module{Path: dep.Path, Version: dep.Version, Sum: dep.Sum}
	}
	return module{Path: dep.Replace.Path, Version: dep.Replace.Version, Sum: dep.Replace.Sum, Replaces: dep.Path + "@" + dep.Version}
}

// purl is the package URL of a Go module (github.com/package-url/purl-spec,
// type golang).
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + version
}

// NewSBOM describes the release's binaries as one CycloneDX BOM, from their
// Go build information alone: the application (the main module at the
// release's version), every module linked into any of the binaries with its
// version (a library component each, which the application depends on), and
// each binary as a file component with its SHA-256, GOOS, GOARCH and Go
// version. Everything in it comes from the binaries and the arguments, so
// the same binaries give the same bytes (the serial number is derived from
// the binaries' digests, the timestamp is created, the commit's time).
func NewSBOM(version string, created time.Time, binaries []Binary) (*cdx.BOM, error) {
	if len(binaries) == 0 {
		return nil, fmt.Errorf("no binaries")
	}
	mainPath := binaries[0].Info.Main.Path
	modules := map[string]module{}
	for _, b := range binaries {
		if b.Info.Main.Path != mainPath {
			return nil, fmt.Errorf("%s is a build of %s, %s one of %s: one SBOM describes one main module", b.Name, b.Info.Main.Path, binaries[0].Name, mainPath)
		}
		for _, dep := range b.Info.Deps {
			m := linked(dep)
			if seen, ok := modules[dep.Path]; ok && seen != m {
				return nil, fmt.Errorf("%s links %s@%s, another binary %s@%s: the binaries of one release are built from one go.mod", b.Name, m.Path, m.Version, seen.Path, seen.Version)
			}
			modules[dep.Path] = m
		}
	}

	app := cdx.Component{
		BOMRef:     purl(mainPath, version),
		Type:       cdx.ComponentTypeApplication,
		Name:       mainPath,
		Version:    version,
		PackageURL: purl(mainPath, version),
		Licenses:   &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}},
	}
	var components []cdx.Component
	var dependsOn []string
	paths := make([]string, 0, len(modules))
	for p := range modules {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		m := modules[p]
		c := cdx.Component{
			BOMRef:     purl(m.Path, m.Version),
			Type:       cdx.ComponentTypeLibrary,
			Name:       m.Path,
			Version:    m.Version,
			PackageURL: purl(m.Path, m.Version),
		}
		var props []cdx.Property
		if m.Sum != "" {
			// The go.sum hash (h1: dirhash), not a digest of a file:
			// a property, not a CycloneDX hash.
			props = append(props, cdx.Property{Name: "go:module:sum", Value: m.Sum})
		}
		if m.Replaces != "" {
			props = append(props, cdx.Property{Name: "go:module:replaces", Value: m.Replaces})
		}
		if len(props) > 0 {
			c.Properties = &props
		}
		components = append(components, c)
		dependsOn = append(dependsOn, c.BOMRef)
	}

	serial := sha256.New()
	for _, b := range binaries {
		fmt.Fprintf(serial, "%s %s\n", b.SHA256, b.Name)
		props := []cdx.Property{{Name: "go:version", Value: b.Info.GoVersion}}
		// The build settings the binary records (go build leaves out
		// -ldflags under -trimpath, which make builds with).
		for _, key := range []string{"GOOS", "GOARCH", "CGO_ENABLED", "-ldflags", "vcs.revision"} {
			if v := b.Setting(key); v != "" {
				props = append(props, cdx.Property{Name: "go:build:" + key, Value: v})
			}
		}
		components = append(components, cdx.Component{
			BOMRef:     "file:" + b.Name,
			Type:       cdx.ComponentTypeFile,
			Name:       b.Name,
			Version:    version,
			Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: b.SHA256}},
			Properties: &props,
		})
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = uuidURN(serial.Sum(nil))
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Component: &app,
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "hack/release sbom", Version: version,
			Description: "the SBOM of the release's binaries, from their Go build information (debug/buildinfo)",
		}}},
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{{Ref: app.BOMRef, Dependencies: &dependsOn}}
	return bom, nil
}

// uuidURN formats the first 16 bytes of a digest as a version 5 style
// (name-based, SHA) UUID URN, the form CycloneDX's serialNumber takes.
func uuidURN(sum []byte) string {
	u := make([]byte, 16)
	copy(u, sum)
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// WriteSBOM writes bom as CycloneDX JSON to path.
func WriteSBOM(path string, bom *cdx.BOM) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.EncodeVersion(bom, SpecVersion); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// ReadSBOM parses a CycloneDX JSON SBOM.
func ReadSBOM(path string) (*cdx.BOM, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return nil, fmt.Errorf("parsing %s as CycloneDX JSON: %w", path, err)
	}
	return &bom, nil
}

// CheckSBOM fails unless bom describes binaries at version: the main
// module as the application at that version, every module each binary links
// as a component with the version it links, and each binary as a file with
// its SHA-256.
func CheckSBOM(bom *cdx.BOM, version string, binaries []Binary) error {
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		return fmt.Errorf("the SBOM names no application (metadata.component)")
	}
	app := bom.Metadata.Component
	if bom.Components == nil {
		return fmt.Errorf("the SBOM has no components")
	}
	versions := map[string]string{}
	files := map[string]string{}
	for _, c := range *bom.Components {
		switch c.Type {
		case cdx.ComponentTypeLibrary:
			versions[c.Name] = c.Version
		case cdx.ComponentTypeFile:
			if c.Hashes != nil {
				for _, h := range *c.Hashes {
					if h.Algorithm == cdx.HashAlgoSHA256 {
						files[c.Name] = h.Value
					}
				}
			}
		}
	}
	for _, b := range binaries {
		if app.Name != b.Info.Main.Path || app.Version != version {
			return fmt.Errorf("the SBOM's application is %s@%s, %s is a build of %s@%s", app.Name, app.Version, b.Name, b.Info.Main.Path, version)
		}
		if len(b.Info.Deps) == 0 {
			return fmt.Errorf("%s has no dependencies in its build information", b.Name)
		}
		for _, dep := range b.Info.Deps {
			m := linked(dep)
			got, ok := versions[m.Path]
			if !ok {
				return fmt.Errorf("the SBOM lacks %s, which %s links at %s", m.Path, b.Name, m.Version)
			}
			if got != m.Version {
				return fmt.Errorf("the SBOM has %s@%s, %s links %s", m.Path, got, b.Name, m.Version)
			}
		}
		if got := files[b.Name]; got != b.SHA256 {
			return fmt.Errorf("the SBOM's SHA-256 of %s is %q, the file's %s", b.Name, got, b.SHA256)
		}
	}
	return nil
}
