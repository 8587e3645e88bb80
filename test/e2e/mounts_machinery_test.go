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
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// kcpMountsTestEnv is kcp's own end-to-end test of mounts (kcp's
// test/e2e/mounts, compiled): make builds bin/kcp-mounts.test from the kcp
// module hack/kcp pins and exports it; set it to another kcp release's.
const kcpMountsTestEnv = "KCP_MOUNTS_TEST_BINARY"

// TestMountsMachinery runs kcp's own TestMountsMachinery, written against
// kcp's in-tree mounts controller, against a kcp of its own with the
// feature gate off and the plugin at level 3: it must pass as it does with
// the gate on and no plugin (the control, so that the test is known to test
// what it should). It waits for kcp's condition WorkspaceMountReady, for
// access through kcp's proxy to the mount's URL, and for 503 once the mount
// is not ready.
func TestMountsMachinery(t *testing.T) {
	t.Parallel()
	binary := os.Getenv(kcpMountsTestEnv)
	require.NotEmpty(t, binary, "%s is not set: make test-e2e builds kcp's test (bin/kcp-mounts.test) and sets it", kcpMountsTestEnv)

	t.Run("kcp's in-tree controller, the control", func(t *testing.T) {
		t.Parallel()
		e := newCondEnv(t, "WorkspaceMounts=true")
		runKCPMountsTest(t, binary, e)
	})
	t.Run("the plugin at level 3, kcp's gate off", func(t *testing.T) {
		t.Parallel()
		e := newCondEnv(t, "WorkspaceMounts=false")
		// kcp's test mounts a workspace of the same kcp: an internal host.
		p := e.startPlugin(t, "level-3", "--workspace-condition", "--workspace-url", "--workspace-url-allow-internal-hosts")
		runKCPMountsTest(t, binary, e)
		require.NoError(t, p.CheckRunning())
	})
}

// runKCPMountsTest runs kcp's TestMountsMachinery against e's kcp (its
// --kcp-kubeconfig), from this repository's work tree: kcp's helpers before
// v0.31 look for a .git above the (trimmed) source path, relative to the
// working directory; from v0.31 on they want kcp's source tree, which
// $KCP_REPO_DIR names (make sets it to KCP_SOURCE) and the test inherits.
func runKCPMountsTest(t *testing.T, binary string, e *condEnv) {
	t.Helper()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"-test.run=^TestMountsMachinery$", "-test.v", "-test.count=1", "-test.timeout=4m", "--kcp-kubeconfig=" + e.kcp.KubeconfigPath}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err = cmd.Run()
	took := time.Since(began).Round(100 * time.Millisecond)
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestMountsMachinery") {
		t.Logf("%s %s:\n%s", binary, strings.Join(args, " "), out.String())
	}
	require.NoError(t, err, "kcp's TestMountsMachinery failed after %s", took)
	require.Contains(t, out.String(), "--- PASS: TestMountsMachinery", "kcp's test ran and passed")
	t.Logf("kcp's TestMountsMachinery passed in %s", took)
}
