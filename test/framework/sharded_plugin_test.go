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
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/server"
)

// parsePluginArgs parses a command line of StartPlugin with the flags of
// the real `workspacemounts start`.
func parsePluginArgs(t *testing.T, args []string) (*server.Options, *pflag.FlagSet) {
	t.Helper()
	require.Equal(t, "start", args[0])
	o := server.NewOptions()
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args[1:]), "%v", args)
	return o, fs
}

// flagValue is the value of a parsed flag, which must exist.
func flagValue(t *testing.T, fs *pflag.FlagSet, name string) string {
	t.Helper()
	f := fs.Lookup(name)
	require.NotNil(t, f, "no flag --%s", name)
	return f.Value.String()
}

// TestPluginArgsSingleShard: without RootKubeconfig, the command line is
// the single-shard one, a self-signed pair in WorkDir.
func TestPluginArgsSingleShard(t *testing.T) {
	t.Parallel()

	args, caFile := pluginArgs(PluginOptions{Kubeconfig: "admin.kubeconfig", WorkDir: "w", ExtraArgs: []string{"--workspace-workers=3"}}, 6001, 6002)
	require.Equal(t, filepath.Join("w", "certificates", "workspacemounts.crt"), caFile)
	o, _ := parsePluginArgs(t, args)
	require.Equal(t, "admin.kubeconfig", o.Kubeconfig)
	require.Equal(t, "shard-base", o.Context)
	require.Equal(t, 6001, o.VirtualWorkspace.SecureServing.BindPort)
	require.Equal(t, "127.0.0.1", o.VirtualWorkspace.SecureServing.BindAddress.String())
	require.Equal(t, filepath.Join("w", "certificates"), o.VirtualWorkspace.SecureServing.ServerCert.CertDirectory)
	require.Empty(t, o.VirtualWorkspace.SecureServing.ServerCert.CertKey.CertFile)
	require.Equal(t, "127.0.0.1:6002", o.MetricsBindAddress)
	require.Equal(t, 3, o.WorkspaceWorkers, "ExtraArgs come last")
}

// TestPluginArgsAsGiven: with Args, the command line is start and Args,
// nothing added (KCPOperatorArgs, the operator's exact list), and the
// serving CA is ServingCAFile.
func TestPluginArgsAsGiven(t *testing.T) {
	t.Parallel()
	given := KCPOperatorArgs(KCPOperatorPodFiles, 0, "--secure-port=6001")
	args, caFile := pluginArgs(PluginOptions{Args: given, ServingCAFile: "ca.crt", Kubeconfig: "x", ExtraArgs: []string{"--workspace-workers=3"}}, 6001, 6002)
	require.Equal(t, append([]string{"start"}, given...), args)
	require.Equal(t, "ca.crt", caFile)
	o, _ := parsePluginArgs(t, args)
	require.Equal(t, KCPOperatorPodFiles.Kubeconfig, o.Kubeconfig)
	require.Equal(t, 6001, o.VirtualWorkspace.SecureServing.BindPort, "spec.extraArgs come last")
}

// TestShardedPluginOptions: the plugin of a ShardedServer reads root and the
// shards with the admin's kubeconfigs, serves the PKI's serving certificate
// on the port the front-proxy maps to, and trusts the front-proxy's client
// certificate, and only it, for the user in X-Remote-* headers.
func TestShardedPluginOptions(t *testing.T) {
	t.Parallel()

	pki, err := newShardedPKI(filepath.Join(t.TempDir(), "pki"), nil)
	require.NoError(t, err)
	s := &ShardedServer{FrontProxyURL: "https://127.0.0.1:7000", PKI: pki, RootKubeconfigPath: "root.kubeconfig", ShardsKubeconfigPath: "shards.kubeconfig"}
	opts := s.PluginOptions(7001, "/w")
	require.Equal(t, "/w", opts.WorkDir)
	require.Equal(t, ServiceMapping{Name: "workspacemounts", Backend: "https://127.0.0.1:7001"}, PluginServiceMapping(opts.SecurePort))
	require.Equal(t, "https://127.0.0.1:7000/services/workspacemounts/clusters/*", s.PluginServiceURL("*"))

	args, caFile := pluginArgs(opts, opts.SecurePort, 7002)
	require.Equal(t, pki.ServingCAFile, caFile)
	require.NotContains(t, args, "--kubeconfig")
	o, fs := parsePluginArgs(t, args)
	require.Equal(t, "root.kubeconfig", flagValue(t, fs, "root-kubeconfig"))
	require.Equal(t, "shards.kubeconfig", flagValue(t, fs, "shards-kubeconfig"))
	require.Empty(t, o.Kubeconfig)
	vw := o.VirtualWorkspace
	require.Equal(t, 7001, vw.SecureServing.BindPort)
	require.Equal(t, pki.ServingCertFile, vw.SecureServing.ServerCert.CertKey.CertFile)
	require.Equal(t, pki.ServingKeyFile, vw.SecureServing.ServerCert.CertKey.KeyFile)
	require.Equal(t, pki.ClientCAFile, vw.ClientCert.ClientCA)

	// The serving certificate is what the front-proxy trusts by default.
	serving := readCert(t, vw.SecureServing.ServerCert.CertKey.CertFile)
	_, err = serving.Verify(x509.VerifyOptions{Roots: readCA(t, pki.ServingCAFile), DNSName: "127.0.0.1"})
	require.NoError(t, err)

	// The front-proxy's client certificate is accepted for X-Remote-* headers.
	rh := vw.RequestHeader
	require.Equal(t, pki.RequestHeaderCAFile, rh.ClientCAFile)
	proxyClient := readCert(t, pki.ProxyClientCertFile)
	_, err = proxyClient.Verify(x509.VerifyOptions{Roots: readCA(t, rh.ClientCAFile), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	require.Equal(t, []string{proxyClient.Subject.CommonName}, rh.AllowedNames)
	require.Equal(t, []string{"X-Remote-User"}, rh.UsernameHeaders)
	require.Equal(t, []string{"X-Remote-Group"}, rh.GroupHeaders)
	require.Equal(t, []string{"X-Remote-Extra-"}, rh.ExtraHeaderPrefixes)
	// A client certificate of the admin is not one of them.
	admin := readCert(t, pki.AdminCertFile)
	_, err = admin.Verify(x509.VerifyOptions{Roots: readCA(t, rh.ClientCAFile), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.Error(t, err)
}
