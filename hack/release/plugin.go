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
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The kubectl plugin in a release: per platform an archive
// kubectl-workspacemounts-<tag>-<os>-<arch>.tar.gz holding the binary and
// the LICENSE (what krew installs), and the krew manifest naming them,
// workspacemounts.yaml (krew wants a manifest named after its plugin).
const (
	// PluginBinary is the plugin's executable, in _output/bin/<os>_<arch> and in each archive.
	PluginBinary = "kubectl-workspacemounts"
	// KrewManifestName is the release's krew manifest.
	KrewManifestName = "workspacemounts.yaml"
	// licenseFile is the license every archive carries.
	licenseFile = "LICENSE"
	// DownloadURL is where a tag's files are: <DownloadURL>/<tag>/<file>
	// (the GitHub release that make release-publish creates).
	DownloadURL = "https://github.com/workspacemounts/workspacemounts/releases/download"
)

// PluginArchiveName is a platform's archive of the plugin:
// kubectl-workspacemounts-v0.1.0-linux-amd64.tar.gz.
func PluginArchiveName(tag, platform string) string {
	return PluginBinary + "-" + tag + "-" + strings.ReplaceAll(platform, "/", "-") + ".tar.gz"
}

// KrewManifest is a krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2
// Plugin), the fields this release writes.
type KrewManifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec KrewSpec `json:"spec"`
}

// KrewSpec is a manifest's spec.
type KrewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Caveats          string         `json:"caveats,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one archive of a manifest, installed on the os and arch of its selector.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Files  []KrewFile `json:"files"`
	Bin    string     `json:"bin"`
}

// KrewFile is a file krew copies out of an archive.
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// WritePluginArchive writes a gzipped tar of the plugin binary and the
// license, the same bytes for the same inputs: fixed order, owner, modes and
// time (the commit's).
func WritePluginArchive(out, binary, license string, mtime time.Time) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = mtime.UTC()
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		path, name string
		mode       int64
	}{{binary, PluginBinary, 0o755}, {license, licenseFile, 0o644}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(data)), ModTime: mtime.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// ReadPluginArchive fails unless an archive holds exactly the plugin binary
// (executable) and the license, as regular files.
func ReadPluginArchive(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return fmt.Errorf("%s: %s is not a regular file", path, hdr.Name)
		}
		if hdr.Name == PluginBinary && hdr.Mode&0o111 == 0 {
			return fmt.Errorf("%s: %s is not executable", path, hdr.Name)
		}
		// A release's archive: a binary and a license, bounded (256 MiB) all the same.
		if _, err := io.CopyN(io.Discard, tr, 256<<20); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", path, err)
		}
		names = append(names, hdr.Name)
	}
	slices.Sort(names)
	if want := []string{licenseFile, PluginBinary}; !slices.Equal(names, want) {
		return fmt.Errorf("%s holds %v, want %v", path, names, want)
	}
	return nil
}

// ReadKrewManifest reads a krew manifest, strictly (an unknown field is an error).
func ReadKrewManifest(path string) (KrewManifest, error) {
	var m KrewManifest
	data, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ReleaseKrewManifest is the source manifest for a release: the tag as its
// version, and per platform (os/arch) its archive in dir, at downloadURL/<tag>/<archive>.
func ReleaseKrewManifest(source KrewManifest, tag, downloadURL, dir string, platforms []string) (KrewManifest, error) {
	m := source
	m.Spec.Version = tag
	m.Spec.Platforms = nil
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return m, fmt.Errorf("platform %q is not os/arch", p)
		}
		name := PluginArchiveName(tag, p)
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return m, err
		}
		var platform KrewPlatform
		platform.Selector.MatchLabels = map[string]string{"os": goos, "arch": goarch}
		platform.URI = strings.TrimSuffix(downloadURL, "/") + "/" + tag + "/" + name
		platform.SHA256 = sum
		platform.Files = []KrewFile{{From: PluginBinary, To: "."}, {From: licenseFile, To: "."}}
		platform.Bin = PluginBinary
		m.Spec.Platforms = append(m.Spec.Platforms, platform)
	}
	return m, nil
}

// CheckKrewManifest fails unless the release's manifest is the source's for
// the tag, and each platform names its archive in dir with the archive's SHA-256.
func CheckKrewManifest(got, source KrewManifest, tag, downloadURL, dir string, platforms []string) error {
	if got.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || got.Kind != "Plugin" {
		return fmt.Errorf("%s: not a krew Plugin manifest (%s %s)", KrewManifestName, got.APIVersion, got.Kind)
	}
	want, err := ReleaseKrewManifest(source, tag, downloadURL, dir, platforms)
	if err != nil {
		return err
	}
	a, err := yaml.Marshal(got)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(want)
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("%s is not the manifest of the release's archives; want:\n%s", KrewManifestName, b)
	}
	for _, p := range platforms {
		if err := ReadPluginArchive(filepath.Join(dir, PluginArchiveName(tag, p))); err != nil {
			return err
		}
	}
	return nil
}

// runPlugin writes the plugin's archives and the krew manifest into --out.
func runPlugin(args []string) error {
	fs := flag.NewFlagSet("plugin", flag.ContinueOnError)
	tag := fs.String("tag", "", "the release's tag, in the names and the manifest's version (required)")
	created := fs.String("created", "", "the files' time, RFC 3339: the commit's (required)")
	binDir := fs.String("bin-dir", "_output/bin", "where <os>_<arch>/"+PluginBinary+" are")
	license := fs.String("license", "LICENSE", "the license each archive carries")
	source := fs.String("manifest", "deploy/krew/workspacemounts.yaml", "the krew manifest's source")
	downloadURL := fs.String("download-url", DownloadURL, "where the release's files are downloaded: <url>/<tag>/<file>")
	platforms := fs.String("platforms", "", "the platforms, comma-separated os/arch (required)")
	out := fs.String("out", "", "the release's files (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || *created == "" || *platforms == "" || *out == "" || fs.NArg() != 0 {
		return errors.New("plugin: --tag, --created, --platforms and --out are required, and it takes no arguments")
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	list := strings.Split(*platforms, ",")
	for _, p := range list {
		binary := filepath.Join(*binDir, strings.ReplaceAll(p, "/", "_"), PluginBinary)
		if err := WritePluginArchive(filepath.Join(*out, PluginArchiveName(*tag, p)), binary, *license, t); err != nil {
			return err
		}
	}
	src, err := ReadKrewManifest(*source)
	if err != nil {
		return err
	}
	m, err := ReleaseKrewManifest(src, *tag, *downloadURL, *out, list)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, KrewManifestName), data, 0o644)
}
