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

// Package oci builds the workspacemounts container image with
// go-containerregistry (no container daemon, no base image: empty.Image and
// one layer), writes it as an OCI layout and as tarballs, and reads it back.
// hack/image runs it for `make image`; the end-to-end test
// (test/e2e/image_test.go) and the Dockerfile check against the same
// constants.
//
// The layer holds exactly Files: /etc/passwd and /etc/group (root and
// nonroot, 65532, so that tools show a name), an empty /tmp of mode 1777 (the
// manifests mount an emptyDir there for --cert-dir) and the static binary
// /workspacemounts, all owned by root, every mtime the commit time: the same
// commit and binaries give the same digests.
package oci

import (
	"archive/tar"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// Entrypoint is the binary in the image, its entrypoint (no Cmd).
	Entrypoint = "/workspacemounts"
	// User is the image's user, distroless' nonroot.
	User = "65532:65532"
	// WorkingDir is the image's working directory.
	WorkingDir = "/"
	// Path is the image's only environment variable, the PATH docker build
	// gives an image FROM scratch (the Dockerfile sets it too).
	Path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// BinaryName is the binary's file name in the image and below --binaries.
	BinaryName = "workspacemounts"

	// Source, Licenses, Title and Description are the fixed OCI labels.
	Source      = "https://github.com/workspacemounts/workspacemounts"
	Licenses    = "Apache-2.0"
	Title       = "workspacemounts"
	Description = "A kcp plugin that shows, for every mounted workspace, whether its mount is ready, and serves them as a read-only API."

	// The OCI annotation keys used as labels and annotations.
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelCreated     = "org.opencontainers.image.created"
	// RefName names the multi-platform index in the layout's index.json by
	// its tag, as the OCI image layout specification has it.
	RefName = "org.opencontainers.image.ref.name"
	// ImageName names it by its whole reference, repository and tag:
	// containerd's (docker load) and podman's load name the image so (podman
	// 4.3 names it localhost/<tag> from RefName alone).
	ImageName = "io.containerd.image.name"
)

// rootfs holds the committed files of the layer besides the binary (the
// Dockerfile copies the same directory).
//
//go:embed rootfs/etc/passwd rootfs/etc/group
var rootfs embed.FS

// File is one entry of the layer.
type File struct {
	// Name is the path in the tar, without a leading slash; a directory ends in "/".
	Name string
	// Mode is the permission bits, with fs.ModeSticky for /tmp.
	Mode fs.FileMode
	// UID and GID own the file.
	UID, GID int
}

// Files is what the layer holds, in this order.
var Files = []File{
	{Name: "etc/", Mode: 0o755},
	{Name: "etc/group", Mode: 0o644},
	{Name: "etc/passwd", Mode: 0o644},
	{Name: "tmp/", Mode: 0o777 | fs.ModeSticky},
	{Name: BinaryName, Mode: 0o755},
}

// Options says what Build builds.
type Options struct {
	// Binaries is the directory of <os>_<arch>/workspacemounts (_output/bin).
	Binaries string
	// Platforms are the image's platforms, e.g. linux/amd64 and linux/arm64.
	Platforms []v1.Platform
	// Version and Revision are the build's (the binary's) version and commit.
	Version, Revision string
	// Created is the commit time: the image's creation time and every mtime.
	Created time.Time
}

// Labels are the OCI labels of the configs, and annotations of the
// manifests and the index.
func (o Options) Labels() map[string]string {
	return map[string]string{
		LabelSource:      Source,
		LabelVersion:     o.Version,
		LabelRevision:    o.Revision,
		LabelLicenses:    Licenses,
		LabelTitle:       Title,
		LabelDescription: Description,
		LabelCreated:     o.Created.UTC().Format(time.RFC3339),
	}
}

// BinaryPath is where Build takes a platform's binary from.
func BinaryPath(binaries string, p v1.Platform) string {
	return filepath.Join(binaries, p.OS+"_"+p.Architecture, BinaryName)
}

// ParsePlatforms parses "linux/amd64,linux/arm64".
func ParsePlatforms(list string) ([]v1.Platform, error) {
	var platforms []v1.Platform
	for _, s := range strings.Split(list, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", s, err)
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", s)
		}
		platforms = append(platforms, *p)
	}
	return platforms, nil
}

// Build builds the multi-platform index, one image per platform.
func Build(opts Options) (v1.ImageIndex, error) {
	if len(opts.Platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	if opts.Version == "" || opts.Revision == "" || opts.Created.IsZero() {
		return nil, errors.New("the version, the revision and the creation time must be set")
	}
	labels := opts.Labels()
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range opts.Platforms {
		binary, err := os.ReadFile(BinaryPath(opts.Binaries, p))
		if err != nil {
			return nil, fmt.Errorf("the binary of %s (make image-binaries builds it): %w", p, err)
		}
		img, err := Image(binary, p, opts)
		if err != nil {
			return nil, fmt.Errorf("the image of %s: %w", p, err)
		}
		platform := p
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform, Annotations: labels},
		})
	}
	built, ok := mutate.Annotations(index, labels).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotating the index did not give an index")
	}
	return built, nil
}

// Image builds the image of one platform around binary.
func Image(binary []byte, p v1.Platform, opts Options) (v1.Image, error) {
	layerTar, err := Layer(binary, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("the layer: %w", err)
	}
	created := v1.Time{Time: opts.Created.UTC()}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image (hack/image)", Comment: "workspacemounts " + opts.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("appending the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Created = created
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Author = ""
	cfg.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User,
		WorkingDir: WorkingDir,
		Env:        []string{Path},
		Labels:     opts.Labels(),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	annotated, ok := mutate.Annotations(img, opts.Labels()).(v1.Image)
	if !ok {
		return nil, errors.New("annotating the image did not give an image")
	}
	return annotated, nil
}

// Layer returns the uncompressed layer: Files, the binary the last.
func Layer(binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range Files {
		hdr := &tar.Header{
			Name: f.Name, Mode: int64(f.Mode.Perm()), Uid: f.UID, Gid: f.GID,
			ModTime: created.UTC(), Format: tar.FormatPAX,
		}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		var data []byte
		switch {
		case strings.HasSuffix(f.Name, "/"):
			hdr.Typeflag = tar.TypeDir
		case f.Name == BinaryName:
			hdr.Typeflag, data = tar.TypeReg, binary
		default:
			content, err := rootfs.ReadFile(path.Join("rootfs", f.Name))
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", f.Name, err)
			}
			hdr.Typeflag, data = tar.TypeReg, content
		}
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteLayout writes index into a new OCI layout at dir (removing what was
// there), named ref in index.json: its tag (RefName) and its whole name
// (ImageName).
func WriteLayout(dir string, index v1.ImageIndex, ref name.Tag) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(index, layout.WithAnnotations(map[string]string{
		RefName:   ref.TagStr(),
		ImageName: ref.String(),
	})); err != nil {
		return fmt.Errorf("writing the index to %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the multi-platform index that index.json of the layout
// at dir names tag (the only entry make image writes).
func ReadLayout(dir, tag string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the layout %s: %w", dir, err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	manifest, err := outer.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	for _, desc := range manifest.Manifests {
		if desc.Annotations[RefName] == tag && desc.MediaType.IsIndex() {
			return outer.ImageIndex(desc.Digest)
		}
	}
	return nil, fmt.Errorf("%s/index.json has no index named %q (%s)", dir, tag, RefName)
}

// PlatformImage returns the image of platform p in index.
func PlatformImage(index v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the index: %w", err)
	}
	for _, desc := range manifest.Manifests {
		if desc.Platform != nil && desc.Platform.Equals(p) {
			return index.Image(desc.Digest)
		}
	}
	return nil, fmt.Errorf("the index has no image for %s", p)
}

// LayerFiles lists the files of img's layers (in order), and returns the
// content of the regular file named want ("" for none).
func LayerFiles(img v1.Image, want string) ([]File, []byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("the layers: %w", err)
	}
	var files []File
	var content []byte
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			return nil, nil, fmt.Errorf("reading a layer: %w", err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, errors.Join(fmt.Errorf("reading a layer: %w", err), rc.Close())
			}
			files = append(files, File{Name: hdr.Name, Mode: hdr.FileInfo().Mode() &^ fs.ModeDir, UID: hdr.Uid, GID: hdr.Gid})
			if hdr.Name == want && hdr.Typeflag == tar.TypeReg {
				if content, err = io.ReadAll(tr); err != nil {
					return nil, nil, errors.Join(fmt.Errorf("reading %s: %w", want, err), rc.Close())
				}
			}
		}
		if err := rc.Close(); err != nil {
			return nil, nil, fmt.Errorf("reading a layer: %w", err)
		}
	}
	return files, content, nil
}

// TarDir writes the directory dir (an OCI layout) as a tar to file, its
// entries sorted, owned by root, every mtime modTime: an OCI archive as
// podman load and docker load (25 and newer) read it.
func TarDir(dir, file string, modTime time.Time) (err error) {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(names)
	out, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("creating %s: %w", file, err)
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	tw := tar.NewWriter(out)
	for _, name := range names {
		if err := tarEntry(tw, dir, name, modTime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

func tarEntry(tw *tar.Writer, dir, name string, modTime time.Time) error {
	info, err := os.Lstat(name)
	if err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: modTime.UTC(), Format: tar.FormatPAX}
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		return tw.WriteHeader(hdr)
	case info.Mode().IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	default:
		return fmt.Errorf("archiving %s: not a regular file or directory", name)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	}
	return nil
}
