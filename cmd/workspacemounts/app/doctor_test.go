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

package app

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestDoctorFlags: doctor takes start's flags for kcp and the Lease with
// start's defaults, and refuses bad input of its own with a clear error.
func TestDoctorFlags(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	options, d, _ := DoctorFlags(fs)
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, "root", options.LeaderElection.Cluster)
	require.Equal(t, "default", options.LeaderElection.Namespace)
	require.Equal(t, "workspacemounts", options.LeaderElection.ID)
	require.NoError(t, d.Validate())
	for _, name := range doctorStartFlags {
		require.NotNil(t, fs.Lookup(name), "--%s", name)
	}
	require.Nil(t, fs.Lookup("workspace-url"), "doctor reads the plugin's settings from its Lease, not from flags")

	// A kcp-operator VirtualWorkspace's kubeconfig, every shard.
	fs = pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	options, _, _ = DoctorFlags(fs)
	require.NoError(t, fs.Parse([]string{"--kubeconfig=/etc/kcp/server-kubeconfig/kubeconfig", "--all-shards"}))
	require.True(t, options.Sharded())

	for name, tc := range map[string]struct {
		options DoctorOptions
		err     string
	}{
		"http front-proxy":      {options: DoctorOptions{FrontProxyURL: "http://kcp"}, err: "--front-proxy-url must be an https:// URL"},
		"no host":               {options: DoctorOptions{VirtualWorkspaceURL: "https://"}, err: "--virtual-workspace-url must be an https:// URL"},
		"token and token file":  {options: DoctorOptions{FrontProxyURL: "https://kcp", Token: "t", TokenFile: "f"}, err: "exclude each other"},
		"token, no front-proxy": {options: DoctorOptions{Token: "t"}, err: "apply with --front-proxy-url only"},
		"CA, no front-proxy":    {options: DoctorOptions{FrontProxyCAFile: "ca.crt"}, err: "apply with --front-proxy-url only"},
		"output":                {options: DoctorOptions{Output: "yaml"}, err: "--output must be table or json"},
		"timeout":               {options: DoctorOptions{Timeout: -time.Second}, err: "--timeout must be positive"},
		"all given": {options: DoctorOptions{FrontProxyURL: "https://kcp.example.com", FrontProxyCAFile: "ca.crt", TokenFile: "token",
			VirtualWorkspaceURL: "https://workspacemounts.kcp.svc:6443"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := tc.options
			if o.Output == "" {
				o.Output = "table"
			}
			if o.Timeout == 0 {
				o.Timeout = time.Minute
			}
			err := o.Validate()
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.err)
			}
		})
	}
}

// TestDoctorRefusesBadInput: a bad flag ends doctor with one line on
// stderr and exit status 1, before anything is asked.
func TestDoctorRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, stderr, err := runCommand(t, "doctor", "--kubeconfig", "/nonexistent", "--front-proxy-url", "http://kcp")
	require.Error(t, err)
	require.Equal(t, "Error: --front-proxy-url must be an https:// URL, not \"http://kcp\"\n", stderr)
}
