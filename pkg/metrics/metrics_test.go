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

package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/workspacemounts/workspacemounts/pkg/version"
)

// TestBuildInfo: once registered, the registry /metrics serves has the
// build's one series at 1.
func TestBuildInfo(t *testing.T) {
	t.Parallel()
	Register()
	build := version.Get()
	expected := fmt.Sprintf(`# HELP workspacemounts_build_info %s
# TYPE workspacemounts_build_info gauge
workspacemounts_build_info{goversion=%q,revision=%q,version=%q} 1
`, BuildInfo.Help, build.GoVersion, build.Revision, build.Version)
	require.NoError(t, testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(expected), "workspacemounts_build_info"))
}
