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

package server

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"k8s.io/client-go/rest"
	logsapiv1 "k8s.io/component-base/logs/api/v1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://kcp:6443":                   "https://kcp:6443",
		"https://kcp:6443/":                  "https://kcp:6443",
		"https://kcp:6443/clusters/root":     "https://kcp:6443",
		"https://kcp:6443/clusters/root:org": "https://kcp:6443",
		"https://proxy/kcp/clusters/root":    "https://proxy/kcp",
	} {
		require.Equal(t, want, baseURL(in), in)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() *Options {
		o := NewOptions()
		o.Kubeconfig = "kubeconfig"
		return o
	}
	require.NoError(t, valid().Validate())

	for name, tc := range map[string]struct {
		change func(*Options)
		want   string
	}{
		"no kubeconfig":                 {func(o *Options) { o.Kubeconfig = "" }, "--kubeconfig (or, for a sharded kcp, --root-kubeconfig and --shards-kubeconfig) is required"},
		"both modes":                    {func(o *Options) { o.RootKubeconfig, o.ShardsKubeconfig = "root", "shards" }, "exclude each other"},
		"root alone":                    {func(o *Options) { o.Kubeconfig, o.RootKubeconfig = "", "root" }, "go together"},
		"shards alone":                  {func(o *Options) { o.Kubeconfig, o.ShardsKubeconfig = "", "shards" }, "go together"},
		"all shards without kubeconfig": {func(o *Options) { o.Kubeconfig, o.AllShards = "", true }, "--all-shards needs --kubeconfig"},
		"all shards and root": {func(o *Options) {
			o.Kubeconfig, o.AllShards, o.RootKubeconfig, o.ShardsKubeconfig = "", true, "root", "shards"
		}, "--all-shards serves every shard with --kubeconfig; --root-kubeconfig and --shards-kubeconfig do so with two kubeconfigs: use one or the other"},
		"all shards and shards": {func(o *Options) { o.AllShards, o.ShardsKubeconfig = true, "shards" }, "use one or the other"},
		"sharded context": {func(o *Options) {
			o.Kubeconfig, o.RootKubeconfig, o.ShardsKubeconfig, o.Context = "", "root", "shards", "x"
		}, "current contexts"},
		"no workers":                   {func(o *Options) { o.WorkspaceWorkers = 0 }, "--workspace-workers"},
		"no qps":                       {func(o *Options) { o.QPS = 0 }, "--kube-api-qps"},
		"negative events per hour":     {func(o *Options) { o.WorkspaceEventsPerHour = -1 }, "--max-workspace-events-per-hour must not be negative"},
		"nothing to run":               {func(o *Options) { o.RunController, o.RunVirtualWorkspace = false, false }, "nothing to run"},
		"lease too short":              {func(o *Options) { o.LeaderElection.LeaseDuration = 5 * time.Second }, "lease-duration"},
		"no lease name":                {func(o *Options) { o.LeaderElection.ID = "" }, "--leader-election-id"},
		"profiling without a listener": {func(o *Options) { o.Profiling, o.MetricsBindAddress = true, "0" }, "--profiling"},
		"bad port":                     {func(o *Options) { o.VirtualWorkspace.SecureServing.BindPort = -1 }, "secure-port"},
		"allowed hosts not parsed": {func(o *Options) {
			o.WorkspaceURL, o.WorkspaceURLAllowedHosts = true, []string{"example.com", "*.example.org"}
		}, `--workspace-url-allowed-hosts: "*.example.org": write the suffix without a leading`},
		"allowed hosts without --workspace-url":  {func(o *Options) { o.WorkspaceURLAllowedHosts = []string{"example.com"} }, "apply with --workspace-url only"},
		"internal hosts without --workspace-url": {func(o *Options) { o.WorkspaceURLAllowInternalHosts = true }, "apply with --workspace-url only"},
		"a negative condition delay":             {func(o *Options) { o.WorkspaceCondition, o.WorkspaceConditionDelay = true, -time.Second }, "--workspace-condition-delay must not be negative, not -1s"},
		"max unavailable not a number":           {func(o *Options) { o.WorkspaceCondition, o.MaxUnavailable = true, "ten" }, `--max-unavailable: "ten" is neither a number of Workspaces (0 or more) nor a percentage`},
		"max unavailable over 100%":              {func(o *Options) { o.WorkspaceCondition, o.MaxUnavailable = true, "150%" }, `--max-unavailable: "150%" is not a percentage from 0% to 100%`},
		"max unavailable without --workspace-condition": {func(o *Options) { o.MaxUnavailable = "1" },
			"--workspace-condition-delay and --max-unavailable gate the condition of --workspace-condition, and apply with it only"},
		"condition delay without --workspace-condition": {func(o *Options) { o.WorkspaceConditionDelay = time.Minute }, "apply with it only"},
		"negative heartbeat timeout":                    {func(o *Options) { o.MountHeartbeatTimeout = -time.Second }, "--mount-heartbeat-timeout must be 0 (off) or at least 1s, not -1s"},
		"heartbeat timeout under a second":              {func(o *Options) { o.MountHeartbeatTimeout = 500 * time.Millisecond }, "not 500ms"},
		"an unknown mount URL contract":                 {func(o *Options) { o.MountURLContract = "http" }, `--mount-url-contract must be auto, https or legacy, not "http"`},
		"an empty mount URL contract":                   {func(o *Options) { o.MountURLContract = "" }, `--mount-url-contract must be auto, https or legacy, not ""`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := valid()
			tc.change(o)
			require.ErrorContains(t, o.Validate(), tc.want)
		})
	}

	o := valid()
	o.WorkspaceURL, o.WorkspaceURLAllowInternalHosts, o.WorkspaceURLAllowedHosts = true, true, []string{"example.com", "10.0.0.0/8"}
	completed, err := o.Complete()
	require.NoError(t, err)
	require.Equal(t, "10.0.0.0/8,example.com", completed.AllowedHosts.String())
	require.Nil(t, completed.maxUnavailable, "no limit by default")

	o = valid()
	o.WorkspaceCondition, o.MaxUnavailable, o.WorkspaceConditionDelay = true, "10%", 30*time.Second
	completed, err = o.Complete()
	require.NoError(t, err)
	require.Equal(t, "10%", completed.maxUnavailable.String())

	for _, timeout := range []time.Duration{0, time.Second, 5 * time.Minute} {
		o = valid()
		o.MountHeartbeatTimeout = timeout
		require.NoError(t, o.Validate(), "--mount-heartbeat-timeout=%s", timeout)
	}

	require.Equal(t, MountURLContractAuto, valid().MountURLContract, "auto by default")
	for _, contract := range []string{MountURLContractAuto, MountURLContractHTTPS, MountURLContractLegacy} {
		o = valid()
		o.MountURLContract = contract
		require.NoError(t, o.Validate(), "--mount-url-contract=%s", contract)
	}

	o = valid()
	o.LeaderElection.Enabled = false
	o.LeaderElection.ID = ""
	require.NoError(t, o.Validate(), "lease settings do not matter without leader election")

	o = valid()
	o.Kubeconfig, o.RootKubeconfig, o.ShardsKubeconfig = "", "root", "shards"
	require.NoError(t, o.Validate(), "a sharded kcp")
	require.True(t, o.Sharded())
	require.False(t, valid().Sharded())

	o = valid()
	o.AllShards, o.Context = true, "base"
	require.NoError(t, o.Validate(), "a sharded kcp through --kubeconfig, in any context")
	require.True(t, o.Sharded())
}

// TestKCPOperatorArguments: the start flags take exactly the arguments
// kcp-operator generates for a VirtualWorkspace (framework.KCPOperatorArgs,
// at the paths the operator mounts the files at), the two of kcp's own
// virtual workspaces accepted and reported by KCPOnlyFlagsSet; with
// --all-shards in spec.extraArgs, the options serve every shard.
func TestKCPOperatorArguments(t *testing.T) {
	t.Parallel()
	noCache := framework.KCPOperatorPodFiles
	noCache.CacheKubeconfig = ""
	for name, tc := range map[string]struct {
		files     framework.KCPOperatorFiles
		logLevel  int
		extraArgs []string
		ignored   []string
		sharded   bool
	}{
		"shard target": {files: noCache, ignored: []string{"--shard-external-url"}},
		"root shard target, a cache server, logging": {
			files: framework.KCPOperatorPodFiles, logLevel: 4, extraArgs: []string{"--all-shards"},
			ignored: []string{"--shard-external-url", "--cache-kubeconfig"}, sharded: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := framework.KCPOperatorArgs(tc.files, tc.logLevel, tc.extraArgs...)
			// The flags of `workspacemounts start` (app.StartFlags).
			o := NewOptions()
			fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
			o.AddFlags(fs)
			logging := logsapiv1.NewLoggingConfiguration()
			logsapiv1.AddFlags(logging, fs)
			require.NoError(t, fs.Parse(args), "%q", args)
			require.Empty(t, fs.Args())

			require.NoError(t, o.Validate())
			require.Equal(t, tc.sharded, o.Sharded())
			require.Equal(t, tc.ignored, o.KCPOnlyFlagsSet())
			require.Equal(t, tc.files.Kubeconfig, o.Kubeconfig)
			require.Empty(t, o.Context, "the kubeconfig's current context")
			require.Equal(t, tc.logLevel, int(logging.Verbosity))
			vw := o.VirtualWorkspace
			require.Equal(t, tc.files.ClientCAFile, vw.ClientCert.ClientCA)
			require.Equal(t, tc.files.ServingCertFile, vw.SecureServing.ServerCert.CertKey.CertFile)
			require.Equal(t, tc.files.ServingKeyFile, vw.SecureServing.ServerCert.CertKey.KeyFile)
			require.Equal(t, "0.0.0.0", vw.SecureServing.BindAddress.String())
			require.Equal(t, 6443, vw.SecureServing.BindPort)
			rh := vw.RequestHeader
			require.Equal(t, tc.files.RequestHeaderCAFile, rh.ClientCAFile)
			require.Equal(t, []string{"kcp-front-proxy", "kcp-root-shard-proxy"}, rh.AllowedNames)
			require.Equal(t, []string{"X-Remote-User"}, rh.UsernameHeaders)
			require.Equal(t, []string{"X-Remote-Group"}, rh.GroupHeaders)
			require.Equal(t, []string{"X-Remote-Extra-"}, rh.ExtraHeaderPrefixes)
		})
	}
}

func TestTokenReviewConfig(t *testing.T) {
	t.Parallel()
	cfg := tokenReviewConfig(&rest.Config{Host: "https://kcp:6443"}, nil)
	require.Equal(t, "https://kcp:6443/clusters/root", cfg.Host, "tokens are reviewed in root")

	cfg = tokenReviewConfig(&rest.Config{Host: "https://kcp:6443/clusters/other"}, nil)
	require.Equal(t, "https://kcp:6443/clusters/other", cfg.Host, "a cluster in the URL is kept")
}

// TestMetricsBindAddress: what --metrics-bind-address takes, as net.Listen
// gets it; $(POD_IP):8080 on an IPv6 cluster has no brackets.
func TestMetricsBindAddress(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8080":   "127.0.0.1:8080",
		":8080":            ":8080",
		"localhost:0":      "localhost:0",
		"[fd00::5]:8080":   "[fd00::5]:8080",
		"fd00::5:8080":     "[fd00::5]:8080",
		"fd00:10:244::7:9": "[fd00:10:244::7]:9",
	} {
		got, err := metricsBindAddress(addr)
		require.NoError(t, err, addr)
		require.Equal(t, want, got, addr)

		o := NewOptions()
		o.Kubeconfig, o.MetricsBindAddress = "kubeconfig", addr
		completed, err := o.Complete()
		require.NoError(t, err, addr)
		require.Equal(t, want, completed.MetricsBindAddress, addr)
	}
	for addr, want := range map[string]string{
		"8080":              "is not host:port",
		"10.0.0.1":          "is not host:port",
		"fd00::5":           "is not host:port",
		"10.0.0.1:8080:1":   "is not host:port",
		"10.0.0.1:http":     "is not a number",
		"[fd00::5]:70000":   "is not a number",
		"127.0.0.1:":        "is not a number",
		"fd00::5:123456789": "is not a number",
	} {
		_, err := metricsBindAddress(addr)
		require.ErrorContains(t, err, want, addr)
		o := NewOptions()
		o.Kubeconfig, o.MetricsBindAddress = "kubeconfig", addr
		require.ErrorContains(t, o.Validate(), "--metrics-bind-address: ", addr)
	}
}

// TestLegacyMountAnnotationFlag: the legacy annotation mounts nothing by
// default; --legacy-mount-annotation makes the one rule of the process honour it.
func TestLegacyMountAnnotationFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want mount.Rule
	}{
		{args: nil, want: mount.Rule{}},
		{args: []string{"--legacy-mount-annotation"}, want: mount.Rule{LegacyAnnotation: true}},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
		o.AddFlags(fs)
		require.NoError(t, fs.Parse(tc.args))
		require.Equal(t, tc.want, o.mountRule(), "%v", tc.args)
	}
}
