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

package deploy

import (
	"encoding/json"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"

	"github.com/workspacemounts/workspacemounts/cmd/workspacemounts/app"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// The objects of deploy/kcp-operator, with the fields this test reads.
// test/e2e/install_objects_test.go checks them whole against kcp-operator's
// CRDs; this checks that they fit together and with the rest of the
// repository.
type (
	kcpOperatorKubeconfig struct {
		Metadata struct{ Name string }
		Spec     struct {
			Target          struct{ RootShardRef *corev1.LocalObjectReference }
			TargetWorkspace string
			Username        string
			Groups          []string
			SecretRef       corev1.LocalObjectReference
			Authorization   *struct {
				ClusterRoleBindings struct{ ClusterRoles []string }
			}
		}
	}
	kcpOperatorVirtualWorkspace struct {
		Metadata struct{ Name string }
		Spec     struct {
			Target              struct{ RootShardRef *corev1.LocalObjectReference }
			Image               struct{ Repository, Tag string }
			Command             []string
			KubeconfigSecretRef *corev1.LocalObjectReference
			ExtraArgs           []string
			ExtraVolumes        []corev1.Volume
			ExtraVolumeMounts   []corev1.VolumeMount
		}
	}
	kcpOperatorFrontProxy struct {
		Spec struct {
			RootShard              struct{ Ref corev1.LocalObjectReference }
			AdditionalPathMappings []struct {
				Path    string
				Backend string
			}
		}
	}
)

// kcpOperatorNamespace is the namespace the backend of frontproxy.yaml names
// (the RootShard's, kcp in the docs).
const kcpOperatorNamespace = "kcp"

// TestKCPOperatorObjects: the VirtualWorkspace runs this release's image with
// its entrypoint, mounts the Secrets the Kubeconfigs write (the authentication
// one where --authentication-kubeconfig reads it), everything targets one
// RootShard, the plugin takes the operator's arguments with the extraArgs
// shipped, the FrontProxy routes the plugin's path to the Service the
// operator names after the VirtualWorkspace, and the TokenReview identity is
// bound to the ClusterRole of deploy/kcp/authentication.yaml.
func TestKCPOperatorObjects(t *testing.T) {
	t.Parallel()
	kubeconfigs := map[string]kcpOperatorKubeconfig{}
	for _, doc := range documents(t, readFile(t, "kcp-operator/kubeconfig.yaml")) {
		var k kcpOperatorKubeconfig
		require.NoError(t, json.Unmarshal(doc, &k))
		kubeconfigs[k.Metadata.Name] = k
	}
	var vw kcpOperatorVirtualWorkspace
	vwDocs := documents(t, readFile(t, "kcp-operator/virtualworkspace.yaml"))
	require.Len(t, vwDocs, 1)
	require.NoError(t, json.Unmarshal(vwDocs[0], &vw))
	var fp kcpOperatorFrontProxy
	fpDocs := documents(t, readFile(t, "kcp-operator/frontproxy.yaml"))
	require.Len(t, fpDocs, 1)
	require.NoError(t, json.Unmarshal(fpDocs[0], &fp))

	version, err := os.ReadFile("../VERSION")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(version)), vw.Spec.Image.Tag, "the image tag is the VERSION file")
	var base struct {
		Images []struct{ Name string }
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "base/kustomization.yaml"), &base))
	require.NotEmpty(t, base.Images)
	require.Equal(t, base.Images[0].Name, vw.Spec.Image.Repository, "the image of deploy/base")
	dockerfile, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	entrypoint := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]`).FindSubmatch(dockerfile)
	require.NotNil(t, entrypoint, "ENTRYPOINT in the Dockerfile")
	require.Equal(t, []string{string(entrypoint[1]), "start"}, vw.Spec.Command, "the image's entrypoint and the subcommand")

	// One RootShard.
	require.NotNil(t, vw.Spec.Target.RootShardRef, "the VirtualWorkspace serves every shard from the root shard")
	rootShard := vw.Spec.Target.RootShardRef.Name
	require.Equal(t, rootShard, fp.Spec.RootShard.Ref.Name)
	require.Contains(t, vw.Spec.ExtraArgs, "--all-shards")

	// What the pod runs: the operator's arguments (with a cache server and
	// logging, the longest list), then extraArgs, all taken by the flags of
	// `workspacemounts start` and valid together.
	args := framework.KCPOperatorArgs(framework.KCPOperatorPodFiles, 2, vw.Spec.ExtraArgs...)
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	options, _ := app.StartFlags(fs)
	require.NoError(t, fs.Parse(args), "%q", args)
	require.Empty(t, fs.Args())
	require.NoError(t, options.Validate(), "%q", args)
	require.True(t, options.Sharded(), "--all-shards: every shard")
	require.Equal(t, []string{"--shard-external-url", "--cache-kubeconfig"}, options.KCPOnlyFlagsSet())

	// The plugin's identity: system:masters, its Secret the --kubeconfig.
	main, ok := kubeconfigs["workspacemounts"]
	require.True(t, ok, "Kubeconfig workspacemounts")
	require.Equal(t, []string{"system:masters"}, main.Spec.Groups)
	require.NotNil(t, vw.Spec.KubeconfigSecretRef)
	require.Equal(t, main.Spec.SecretRef.Name, vw.Spec.KubeconfigSecretRef.Name)

	// The TokenReview identity: no group, bound to the ClusterRole of
	// authentication.yaml, its Secret mounted where --authentication-kubeconfig reads.
	authn, ok := kubeconfigs["workspacemounts-authn"]
	require.True(t, ok, "Kubeconfig workspacemounts-authn")
	require.Empty(t, authn.Spec.Groups)
	require.Equal(t, "root", authn.Spec.TargetWorkspace, "TokenReviews are made in root")
	require.NotNil(t, authn.Spec.Authorization)
	var tokenReviewer string
	for _, doc := range documents(t, readFile(t, "kcp/authentication.yaml")) {
		var o object
		require.NoError(t, json.Unmarshal(doc, &o))
		if o.Kind == "ClusterRole" {
			tokenReviewer = o.Metadata.Name
		}
	}
	require.Equal(t, []string{tokenReviewer}, authn.Spec.Authorization.ClusterRoleBindings.ClusterRoles)
	var authnPath string
	for _, arg := range vw.Spec.ExtraArgs {
		if p, ok := strings.CutPrefix(arg, "--authentication-kubeconfig="); ok {
			authnPath = p
		}
	}
	require.NotEmpty(t, authnPath, "--authentication-kubeconfig in extraArgs")
	mounted := false
	for _, m := range vw.Spec.ExtraVolumeMounts {
		if m.MountPath != path.Dir(authnPath) {
			continue
		}
		for _, v := range vw.Spec.ExtraVolumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == authn.Spec.SecretRef.Name {
				for _, item := range v.Secret.Items {
					mounted = mounted || (item.Key == "kubeconfig" && item.Path == path.Base(authnPath))
				}
			}
		}
	}
	require.True(t, mounted, "%s is key kubeconfig of Secret %s", authnPath, authn.Spec.SecretRef.Name)

	for name, k := range kubeconfigs {
		require.NotNil(t, k.Spec.Target.RootShardRef, name)
		require.Equal(t, rootShard, k.Spec.Target.RootShardRef.Name, name)
	}

	// The route: the operator's Service for the VirtualWorkspace
	// (<name>-virtual-workspace, port 6443).
	require.Len(t, fp.Spec.AdditionalPathMappings, 1)
	mapping := fp.Spec.AdditionalPathMappings[0]
	require.Equal(t, "/services/workspacemounts", mapping.Path)
	require.Equal(t, "https://"+vw.Metadata.Name+"-virtual-workspace."+kcpOperatorNamespace+".svc.cluster.local:6443", mapping.Backend)
}
