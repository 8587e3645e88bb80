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
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// opLogLines is how many lines of a plugin's log a failure message quotes.
const opLogLines = 40

// opBinary is the workspacemounts executable (framework.PluginBinary), which
// must exist.
func opBinary(t *testing.T) string {
	t.Helper()
	binary, err := framework.PluginBinary()
	require.NoError(t, err)
	info, err := os.Stat(binary)
	require.NoError(t, err, "the workspacemounts binary (run `make build`, or set WORKSPACEMOUNTS_BINARY)")
	require.False(t, info.IsDir(), "%s is a directory", binary)
	return binary
}

// opStartPlugin starts `workspacemounts start` with the given extra flags,
// its log and certificates in dir/name, and stops it when owner ends (a
// parent test, so that the process outlives the subtest t that starts it).
func opStartPlugin(t, owner *testing.T, dir, name, kubeconfig string, extra ...string) *framework.Plugin {
	t.Helper()
	dir = filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return framework.StartPluginT(t, owner, framework.PluginOptions{
		Binary:     opBinary(t),
		Name:       name,
		Kubeconfig: kubeconfig,
		ExtraArgs:  extra,
		LogPath:    filepath.Join(dir, name+".log"),
		WorkDir:    dir,
	})
}

// opLogs formats the log tails of plugins for a failure message, read when
// the message is formatted.
func opLogs(plugins ...*framework.Plugin) framework.LogTails {
	return framework.LogTails{Lines: opLogLines, Plugins: plugins}
}

// opHTTP is a plain HTTP client for the metrics and health endpoints.
var opHTTP = &http.Client{Timeout: 5 * time.Second}

// opGet GETs url and returns the status code and body; err is set when no
// HTTP response came back (e.g. connection refused).
func opGet(client *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(body), err
}

// opLabels is a shorthand for label maps: opLabels("k1", "v1", "k2", "v2").
func opLabels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// opRequestHeaderCA makes a CA named name, standing for a front-proxy's
// request-header CA, and writes its certificate into dir for a plugin's
// --requestheader-client-ca-file (framework.RequestHeaderArgs).
func opRequestHeaderCA(t *testing.T, dir, name string) (*framework.CA, string) {
	t.Helper()
	ca, err := framework.NewCA(name)
	require.NoError(t, err)
	caFile := filepath.Join(dir, "requestheader-ca.pem")
	require.NoError(t, ca.WriteCertFile(caFile))
	return ca, caFile
}
