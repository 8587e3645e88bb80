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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/hack/image/oci"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// imageEnv is the OCI layout make image writes (_output/image/oci), which
// the Makefile exports for make test-e2e.
const imageEnv = "WORKSPACEMOUNTS_IMAGE"

// TestImage reads back the image make image built: both platforms, their
// entrypoint, user and labels, the files of the layer; the host's binary in
// it is bin/workspacemounts byte for byte (the binary every other e2e test
// runs), and, run from the image, it says its version and serves the
// virtual workspace to kubectl. The index is then pushed to a registry (in
// process) and read back by its tag, as crane push and a pull would.
func TestImage(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(imageEnv)
	require.NotEmpty(t, dir, "%s is not set: run make image (make test-e2e does), or set it to the OCI layout it writes (_output/image/oci)", imageEnv)
	release, err := os.ReadFile("../../VERSION")
	require.NoError(t, err)
	tag := strings.TrimSpace(string(release))

	index, err := oci.ReadLayout(dir, tag)
	require.NoError(t, err, "make image writes the index named %s", tag)

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
		img, err := oci.PlatformImage(index, platform)
		require.NoError(t, err)
		config, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, platform.OS, config.OS)
		require.Equal(t, platform.Architecture, config.Architecture)
		require.Equal(t, []string{oci.Entrypoint}, config.Config.Entrypoint, platform.String())
		require.Empty(t, config.Config.Cmd, platform.String())
		require.Equal(t, oci.User, config.Config.User, platform.String())
		labels := config.Config.Labels
		require.Equal(t, built.Version, labels[oci.LabelVersion], platform.String())
		require.Equal(t, built.Revision, labels[oci.LabelRevision], platform.String())
		require.Equal(t, oci.Source, labels[oci.LabelSource], platform.String())
		require.Equal(t, oci.Licenses, labels[oci.LabelLicenses], platform.String())

		files, content, err := oci.LayerFiles(img, oci.BinaryName)
		require.NoError(t, err)
		var names []string
		for _, f := range files {
			names = append(names, f.Name)
			require.Zero(t, f.UID, "%s: %s is root's", platform, f.Name)
		}
		require.ElementsMatch(t, []string{"etc/", "etc/group", "etc/passwd", "tmp/", oci.BinaryName}, names, platform.String())
		require.NotEmpty(t, content, "%s: the binary", platform)
		if platform.Equals(host) {
			fromImage = content
		}
	}
	require.NotNil(t, fromImage, "the image has the host's platform, %s", host)
	require.True(t, bytes.Equal(hostBinary, fromImage), "the image's %s binary is %s, byte for byte", host, binary)

	// Run from the image: version, then the virtual workspace on the shared kcp.
	extracted := filepath.Join(t.TempDir(), oci.BinaryName)
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
	img, err := oci.PlatformImage(pulled, host)
	require.NoError(t, err)
	_, content, err := oci.LayerFiles(img, oci.BinaryName)
	require.NoError(t, err)
	require.True(t, bytes.Equal(hostBinary, content), "the pulled image's binary")
}
