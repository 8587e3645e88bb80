//go:build e2e

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

package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// imageEnv is the OCI layout make image writes (_output/image/oci), which
	// the Makefile exports for make test-e2e.
	imageEnv = "WORKSPACEMOUNTS_IMAGE"
	// imageBinary is where ko puts the binary, the image's entrypoint;
	// /workspacemounts links to it.
	imageBinary = "ko-app/workspacemounts"
)

// imageFile is one entry of an image's layers.
type imageFile struct {
	mode fs.FileMode
	uid  int
	link string
}

// readImageLayout returns the index that the layout at dir names tag.
func readImageLayout(t *testing.T, dir, tag string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	outer, err := p.ImageIndex()
	require.NoError(t, err)
	manifest, err := outer.IndexManifest()
	require.NoError(t, err)
	for _, desc := range manifest.Manifests {
		if desc.Annotations["org.opencontainers.image.ref.name"] == tag && desc.MediaType.IsIndex() {
			index, err := outer.ImageIndex(desc.Digest)
			require.NoError(t, err)
			return index
		}
	}
	require.FailNow(t, "no index named "+tag, "%s/index.json: %+v", dir, manifest.Manifests)
	return nil
}

// platformImage returns the image of p in index.
func platformImage(t *testing.T, index v1.ImageIndex, p v1.Platform) v1.Image {
	t.Helper()
	manifest, err := index.IndexManifest()
	require.NoError(t, err)
	for _, desc := range manifest.Manifests {
		if desc.Platform != nil && desc.Platform.Equals(p) {
			img, err := index.Image(desc.Digest)
			require.NoError(t, err)
			return img
		}
	}
	require.FailNow(t, "no image for "+p.String())
	return nil
}

// imageFiles lists the files of img's filesystem and returns the binary's content.
func imageFiles(t *testing.T, img v1.Image) (map[string]imageFile, []byte) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]imageFile{}
	var binary []byte
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, binary
		}
		require.NoError(t, err)
		name := strings.Trim(hdr.Name, "/")
		files[name] = imageFile{mode: hdr.FileInfo().Mode(), uid: hdr.Uid, link: hdr.Linkname}
		if name == imageBinary {
			binary, err = io.ReadAll(tr)
			require.NoError(t, err)
		}
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(imageEnv)
	require.NotEmpty(t, dir, "%s is not set: run make image (make test-e2e does), or set it to the OCI layout it writes (_output/image/oci)", imageEnv)
	release, err := os.ReadFile("../../VERSION")
	require.NoError(t, err)
	tag := strings.TrimSpace(string(release))

	index := readImageLayout(t, dir, tag)

	// The version the tested binary reports is the image's.
	binary, err := framework.PluginBinary()
	require.NoError(t, err)
	out, err := exec.CommandContext(t.Context(), binary, "version", "-o", "json").Output()
	require.NoError(t, err)
	var built version.Info
	require.NoError(t, json.Unmarshal(out, &built))
	require.Equal(t, "v0.32.3", built.KcpVersion, "the kcp libraries of go.mod, from the binary's build information")
	require.True(t, strings.HasPrefix(built.Version, tag), "%s is a build of %s", built.Version, tag)

	hostBinary, err := os.ReadFile(binary)
	require.NoError(t, err)
	host := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	var fromImage []byte
	for _, platform := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}} {
		img := platformImage(t, index, platform)
		config, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, platform.OS, config.OS)
		require.Equal(t, platform.Architecture, config.Architecture)
		require.Equal(t, []string{"/" + imageBinary}, config.Config.Entrypoint, platform.String())
		require.Empty(t, config.Config.Cmd, platform.String())
		require.Equal(t, "65532:65532", config.Config.User, platform.String())
		labels := config.Config.Labels
		require.Equal(t, built.Version, labels["org.opencontainers.image.version"], platform.String())
		require.Equal(t, built.Revision, labels["org.opencontainers.image.revision"], platform.String())
		require.Equal(t, "https://github.com/workspacemounts/workspacemounts", labels["org.opencontainers.image.source"], platform.String())
		require.Equal(t, "Apache-2.0", labels["org.opencontainers.image.licenses"], platform.String())

		files, content := imageFiles(t, img)
		var names []string
		for n, f := range files {
			names = append(names, n)
			require.Zero(t, f.uid, "%s: %s is root's", platform, n)
		}
		require.ElementsMatch(t, []string{"etc", "etc/group", "etc/passwd", "tmp", "workspacemounts",
			"var", "var/run", "var/run/ko", "ko-app", imageBinary}, names, platform.String())
		require.Equal(t, fs.ModeDir|fs.ModeSticky|0o777, files["tmp"].mode, "%s: /tmp for --cert-dir", platform)
		require.Equal(t, imageBinary, files["workspacemounts"].link, "%s: /workspacemounts, the command deploy/kcp-operator names", platform)
		require.NotEmpty(t, content, "%s: the binary", platform)
		if platform.Equals(host) {
			fromImage = content
		}
	}
	require.NotNil(t, fromImage, "the image has the host's platform, %s", host)
	require.True(t, bytes.Equal(hostBinary, fromImage), "the image's %s binary is %s, byte for byte", host, binary)

	// Run from the image: version, then the virtual workspace on the shared kcp.
	extracted := filepath.Join(t.TempDir(), "workspacemounts")
	require.NoError(t, os.WriteFile(extracted, fromImage, 0o755))
	out, err = exec.CommandContext(t.Context(), extracted, "version").Output()
	require.NoError(t, err)
	require.Equal(t, built.String()+"\n", string(out))

	p := framework.StartPluginT(t, t, framework.PluginOptions{
		Name:       "the plugin of the image",
		Binary:     extracted,
		Kubeconfig: kcp.KubeconfigPath,
		WorkDir:    t.TempDir(),
		ExtraArgs:  []string{"--leader-elect=false", "--run-controller=false"},
	})
	route := vwRoute{name: "image", base: p.VirtualWorkspaceURL, kubeconfig: writePluginKubeconfig(t, p.VirtualWorkspaceURL, p.CAFile)}
	k := newKubectl(t, route, adminContext)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		r := k.run("*", "get", "workspacemounts")
		return r.err == nil, r.String()
	}, time.Minute, 500*time.Millisecond, "kubectl get workspacemounts from the image's plugin")
	var served struct {
		GitVersion string `json:"gitVersion"`
		GitCommit  string `json:"gitCommit"`
	}
	raw := k.ok("root", "get", "--raw", vwPrefix+"root/version")
	require.NoError(t, json.Unmarshal([]byte(raw), &served), raw)
	require.Equal(t, built.Version, served.GitVersion, "the virtual workspace's /version: %s", raw)
	require.Equal(t, built.Revision, served.GitCommit, raw)

	// Pushed and pulled again, by tag: the same index.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref, err := name.NewTag(fmt.Sprintf("%s/workspacemounts/workspacemounts:%s", strings.TrimPrefix(reg.URL, "http://"), tag), name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, index))
	pulled, err := remote.Index(ref, remote.WithTransport(http.DefaultTransport))
	require.NoError(t, err)
	want, err := index.Digest()
	require.NoError(t, err)
	got, err := pulled.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got, "the index pulled by its tag")
	_, content := imageFiles(t, platformImage(t, pulled, host))
	require.True(t, bytes.Equal(hostBinary, content), "the pulled image's binary")
}
