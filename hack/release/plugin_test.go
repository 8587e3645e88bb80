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
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPluginRelease: the archives of two platforms and the manifest naming
// them pass the check; the same inputs make the same bytes; a changed
// archive, a manifest of another tag and an archive missing the license fail it.
func TestPluginRelease(t *testing.T) {
	t.Parallel()
	platforms := []string{"linux/amd64", "darwin/arm64"}
	bin, out := t.TempDir(), t.TempDir()
	for _, p := range platforms {
		dir := filepath.Join(bin, p[:len(p)-6]+"_"+p[len(p)-5:])
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, PluginBinary), []byte("binary of "+p), 0o755))
	}
	license := filepath.Join(t.TempDir(), "LICENSE")
	require.NoError(t, os.WriteFile(license, []byte("Apache License"), 0o644))
	source := "../../deploy/krew/workspacemounts.yaml"
	args := []string{"--tag", "v1.2.3", "--created", "2026-01-02T03:04:05Z", "--bin-dir", bin, "--license", license,
		"--manifest", source, "--platforms", "linux/amd64,darwin/arm64", "--out", out}
	require.NoError(t, runPlugin(args))

	src, err := ReadKrewManifest(source)
	require.NoError(t, err)
	require.Equal(t, "workspacemounts", src.Metadata.Name, "krew names the manifest after its plugin")
	require.Empty(t, src.Spec.Platforms, "the source leaves the platforms to hack/release")
	got, err := ReadKrewManifest(filepath.Join(out, KrewManifestName))
	require.NoError(t, err)
	require.Equal(t, "v1.2.3", got.Spec.Version)
	require.Len(t, got.Spec.Platforms, 2)
	require.Equal(t, DownloadURL+"/v1.2.3/kubectl-workspacemounts-v1.2.3-darwin-arm64.tar.gz", got.Spec.Platforms[1].URI)
	require.Equal(t, map[string]string{"os": "darwin", "arch": "arm64"}, got.Spec.Platforms[1].Selector.MatchLabels)
	require.Equal(t, PluginBinary, got.Spec.Platforms[1].Bin)
	require.NoError(t, CheckKrewManifest(got, src, "v1.2.3", DownloadURL, out, platforms))

	// The same inputs, the same bytes.
	first, err := os.ReadFile(filepath.Join(out, PluginArchiveName("v1.2.3", "linux/amd64")))
	require.NoError(t, err)
	again := t.TempDir()
	require.NoError(t, runPlugin(append(args[:len(args)-1:len(args)-1], again)))
	second, err := os.ReadFile(filepath.Join(again, PluginArchiveName("v1.2.3", "linux/amd64")))
	require.NoError(t, err)
	require.True(t, bytes.Equal(first, second), "the archive is reproducible")

	// Another tag's manifest.
	require.ErrorContains(t, CheckKrewManifest(got, src, "v1.2.4", DownloadURL, out, platforms), "no such file")
	other := got
	other.Spec.Version = "v0.0.1"
	require.ErrorContains(t, CheckKrewManifest(other, src, "v1.2.3", DownloadURL, out, platforms), "is not the manifest")

	// An archive changed after the manifest was written.
	archive := filepath.Join(out, PluginArchiveName("v1.2.3", "darwin/arm64"))
	require.NoError(t, WritePluginArchive(archive, license, license, time.Unix(0, 0)))
	require.ErrorContains(t, CheckKrewManifest(got, src, "v1.2.3", DownloadURL, out, platforms), "is not the manifest")

	// An archive without the license, even with a manifest written for it.
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: PluginBinary, Mode: 0o755, Size: 1, Typeflag: tar.TypeReg}))
	_, err = tw.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, os.WriteFile(archive, buf.Bytes(), 0o644))
	fixed, err := ReleaseKrewManifest(src, "v1.2.3", DownloadURL, out, platforms)
	require.NoError(t, err)
	require.ErrorContains(t, CheckKrewManifest(fixed, src, "v1.2.3", DownloadURL, out, platforms), "holds [kubectl-workspacemounts], want [LICENSE kubectl-workspacemounts]")
}
