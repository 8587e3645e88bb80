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

package oci

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/require"
)

// TestBuild builds an index of two fake binaries into a layout and reads it
// back: one image per platform, each with its own binary, the entrypoint,
// user, labels and files; the same inputs give the same digest.
func TestBuild(t *testing.T) {
	t.Parallel()
	binaries := t.TempDir()
	platforms, err := ParsePlatforms("linux/amd64, linux/arm64")
	require.NoError(t, err)
	for _, p := range platforms {
		path := BinaryPath(binaries, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("binary of "+p.String()), 0o755))
	}
	opts := Options{Binaries: binaries, Platforms: platforms, Version: "v0.1.0-2-gabcdef0", Revision: "abcdef0123",
		Created: time.Date(2026, 12, 3, 10, 20, 18, 0, time.UTC)}

	index, err := Build(opts)
	require.NoError(t, err)
	again, err := Build(opts)
	require.NoError(t, err)
	digest, err := index.Digest()
	require.NoError(t, err)
	againDigest, err := again.Digest()
	require.NoError(t, err)
	require.Equal(t, digest, againDigest, "one input, one digest")

	dir := filepath.Join(t.TempDir(), "oci")
	ref, err := name.NewTag("registry.example/workspacemounts:v0.1.0")
	require.NoError(t, err)
	require.NoError(t, WriteLayout(dir, index, ref))
	outer, err := layout.ImageIndexFromPath(dir)
	require.NoError(t, err)
	outerManifest, err := outer.IndexManifest()
	require.NoError(t, err)
	require.Len(t, outerManifest.Manifests, 1)
	require.Equal(t, map[string]string{RefName: "v0.1.0", ImageName: "registry.example/workspacemounts:v0.1.0"},
		outerManifest.Manifests[0].Annotations, "index.json names the image by its tag and by its whole name")
	read, err := ReadLayout(dir, "v0.1.0")
	require.NoError(t, err)
	readDigest, err := read.Digest()
	require.NoError(t, err)
	require.Equal(t, digest, readDigest)
	_, err = ReadLayout(dir, "v9.9.9")
	require.ErrorContains(t, err, `no index named "v9.9.9"`)

	for _, p := range platforms {
		img, err := PlatformImage(read, p)
		require.NoError(t, err)
		config, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, p.OS, config.OS)
		require.Equal(t, p.Architecture, config.Architecture)
		require.Equal(t, []string{Entrypoint}, config.Config.Entrypoint)
		require.Equal(t, User, config.Config.User)
		require.Equal(t, opts.Labels(), config.Config.Labels)
		require.Equal(t, "2026-12-03T10:20:18Z", config.Config.Labels[LabelCreated])
		files, content, err := LayerFiles(img, BinaryName)
		require.NoError(t, err)
		require.Equal(t, "binary of "+p.String(), string(content))
		modes := map[string]fs.FileMode{}
		for _, f := range files {
			modes[f.Name] = f.Mode
			require.Zero(t, f.UID, f.Name)
		}
		require.Equal(t, fs.FileMode(0o755), modes[BinaryName].Perm())
		require.NotZero(t, modes["tmp/"]&fs.ModeSticky, "/tmp is 1777")
		require.Contains(t, modes, "etc/passwd")
	}
	_, err = PlatformImage(read, v1.Platform{OS: "linux", Architecture: "s390x"})
	require.Error(t, err)

	_, err = Build(Options{Binaries: t.TempDir(), Platforms: platforms})
	require.Error(t, err, "a missing binary")
	_, err = ParsePlatforms("linux")
	require.Error(t, err)
}
