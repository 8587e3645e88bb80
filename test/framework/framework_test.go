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
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
)

func TestTailBuffer(t *testing.T) {
	t.Parallel()

	b := newTailBuffer(10)
	for _, s := range []string{"line1\n", "line2\n", "line3\n", "partial"} {
		_, err := b.Write([]byte(s))
		require.NoError(t, err)
	}
	require.Equal(t, "e3\npartial", b.String(), "keeps the last 10 bytes")
	require.Equal(t, "e3\npartial", b.lastLines(5))
	require.Equal(t, "partial", b.lastLines(1))
}

func TestGoModModule(t *testing.T) {
	t.Parallel()

	require.Equal(t, "example.com/a", goModModule([]byte("// comment\nmodule example.com/a\n\ngo 1.24\n")))
	require.Equal(t, "example.com/b", goModModule([]byte(`module "example.com/b"`)))
	require.Empty(t, goModModule([]byte("go 1.24\n")))
}

func TestRepoRoot(t *testing.T) {
	t.Parallel()

	root, err := RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, modulePath, goModModule(data))
}

func TestUniqueName(t *testing.T) {
	t.Parallel()

	a, b := UniqueName("Test"), UniqueName("Test")
	require.NotEqual(t, a, b)
	require.Regexp(t, `^test-[a-z0-9]{5}$`, a)
	require.Len(t, UniqueName(strings.Repeat("x", 100)), 63)
}

func TestClusterAwareConfig(t *testing.T) {
	t.Parallel()

	for host, want := range map[string]string{
		"https://127.0.0.1:6443":                    "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root":      "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root:a:b/": "https://127.0.0.1:6443",
	} {
		require.Equal(t, want, clusterAwareConfig(&rest.Config{Host: host}).Host, host)
	}
}

func TestMountCRD(t *testing.T) {
	t.Parallel()

	crd := MountCRD("contrib.kcp.io", "KubeCluster", "kubeclusters", apiextensionsv1.ClusterScoped)
	require.Equal(t, "kubeclusters.contrib.kcp.io", crd.Name)
	require.NotNil(t, crd.Spec.Versions[0].Subresources.Status)
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	require.ElementsMatch(t, []string{"phase", "URL", "conditions"}, keys(status.Properties))
	require.True(t, *crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XPreserveUnknownFields)

	schema, err := apisv1alpha1.CRDToAPIResourceSchema(crd, "v1")
	require.NoError(t, err)
	require.Equal(t, "v1.kubeclusters.contrib.kcp.io", schema.Name)
}

func TestStartMissingBinary(t *testing.T) {
	t.Parallel()

	_, err := Start(t.Context(), Options{Binary: filepath.Join(t.TempDir(), "kcp")})
	require.ErrorContains(t, err, "go build -o ../../bin/kcp")
}

func TestStartEarlyExit(t *testing.T) {
	t.Parallel()

	binary := fakeKCP(t, `echo "the log says why"; exit 3`)
	_, err := Start(t.Context(), Options{Binary: binary, RootDir: t.TempDir()})
	require.ErrorContains(t, err, "kcp exited before it became ready")
	require.ErrorContains(t, err, "the log says why")
	require.ErrorContains(t, err, "exit status 3")
}

func TestStartRetriesTakenPorts(t *testing.T) {
	t.Parallel()

	runs := filepath.Join(t.TempDir(), "runs")
	binary := fakeKCP(t, `echo run >> `+runs+`; echo "listen tcp 127.0.0.1:1234: bind: address already in use"; exit 1`)
	_, err := Start(t.Context(), Options{Binary: binary})
	require.ErrorIs(t, err, errPortInUse)
	data, err := os.ReadFile(runs)
	require.NoError(t, err)
	require.Equal(t, startAttempts, strings.Count(string(data), "run"))
}

func TestStartCancelled(t *testing.T) {
	t.Parallel()

	marker := filepath.Join(t.TempDir(), "terminated")
	binary := fakeKCP(t, `trap 'echo > `+marker+`; exit 0' TERM; while true; do sleep 0.05; done`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	t.Cleanup(cancel)
	_, err := Start(ctx, Options{Binary: binary, RootDir: t.TempDir()})
	require.ErrorContains(t, err, "waiting for kcp")
	require.ErrorContains(t, err, "admin.kubeconfig not written yet")
	require.FileExists(t, marker, "kcp got SIGTERM")
}

// fakeKCP writes a shell script that stands in for the kcp binary.
func fakeKCP(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kcp")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return path
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
