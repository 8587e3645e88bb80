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
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneShardTextMountProvider checks the line to try with the mount
// provider sits between the other blocks, one blank line apart, and that
// without a provider the text is as before.
func TestOneShardTextMountProvider(t *testing.T) {
	t.Parallel()
	expand := func(given bool) string {
		vars := map[string]string{"MOUNT_PROVIDER": mountProviderText(given, "/k/admin.kubeconfig", "https://127.0.0.1:6443")}
		return os.Expand(oneShardText, func(name string) string { return vars[name] })
	}
	without, with := expand(false), expand(true)
	require.NotContains(t, without, "\n\n\n")
	require.NotContains(t, with, "\n\n\n")
	require.Contains(t, without, "'\n\n  # Prometheus metrics")
	require.NotContains(t, without, "auth whoami")
	require.Contains(t, with, "'\n\n  # a ready mount, through kcp's mount proxy")
	require.Contains(t, with, "\n  kubectl --kubeconfig /k/admin.kubeconfig --server https://127.0.0.1:6443/clusters/root:demo-a:ready auth whoami\n\n  # Prometheus metrics")
	require.Equal(t, strings.Count(without, "\n")+3, strings.Count(with, "\n"))
}
