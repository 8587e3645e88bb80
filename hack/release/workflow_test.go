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

package release

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The workflow of a tag, as far as these tests read it (YAML 1.2, as GitHub
// reads it: "on" is a key, not YAML 1.1's true).
type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Permissions map[string]string `yaml:"permissions"`
		Steps       []struct {
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// makeVariable returns the default of a Makefile variable (NAME ?= value or
// NAME := value).
func makeVariable(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` [?:]= (.+)$`).FindStringSubmatch(makefile)
	require.NotNil(t, m, "the Makefile sets %s", name)
	return strings.TrimSpace(m[1])
}

// TestWorkflow: the release workflow runs on v* tags with the two
// permissions it needs and no more, pins every action by commit, and makes
// the release with the make targets that make release-dry-run runs, so the
// two cannot drift.
func TestWorkflow(t *testing.T) {
	t.Parallel()
	var w workflow
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, "../../.github/workflows/release.yaml")), &w))
	require.Equal(t, []string{"v*"}, w.On.Push.Tags)
	require.Empty(t, w.Permissions, "the workflow grants nothing; the job grants what it needs")
	require.Len(t, w.Jobs, 1)
	pinned := regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`)
	var runs []string
	for _, job := range w.Jobs {
		require.Equal(t, map[string]string{"contents": "write", "packages": "write"}, job.Permissions)
		for _, step := range job.Steps {
			if step.Uses != "" {
				require.Regexp(t, pinned, step.Uses, "an action pinned by its commit")
			}
			runs = append(runs, step.Run)
		}
	}
	all := strings.Join(runs, "\n")
	require.Contains(t, all, "make release-verify ")
	require.Contains(t, all, "make release-publish ")

	makefile := readFile(t, "../../Makefile")
	require.Regexp(t, `(?m)^release-dry-run: release-verify release-publish-local\b`, makefile)
	require.Contains(t, readFile(t, "publish-local.sh"), "release-publish VERSION=", "the dry run pushes with the workflow's recipe")
	require.Regexp(t, `(?m)^release-verify: release-artifacts\b`, makefile)
	require.Regexp(t, `(?m)^test: .*\brelease-dry-run\b`, makefile)
}

// TestPublishedNames: what the workflow publishes is what the chart and the
// docs name.
func TestPublishedNames(t *testing.T) {
	t.Parallel()
	makefile := readFile(t, "../../Makefile")
	image := makeVariable(t, makefile, "IMAGE_REPOSITORY")
	chart := makeVariable(t, makefile, "CHART_REPOSITORY") + "/workspacemounts"
	require.Equal(t, "ghcr.io/workspacemounts/workspacemounts", image)
	require.Equal(t, "oci://ghcr.io/workspacemounts/charts/workspacemounts", chart)

	require.Contains(t, readFile(t, "../../deploy/charts/workspacemounts/values.yaml"), "repository: "+image+"\n")
	require.Contains(t, readFile(t, "../../deploy/charts/workspacemounts/Chart.yaml"), "name: workspacemounts\n")
	for _, doc := range []string{"../../README.md", "../../docs/deployment.md"} {
		text := readFile(t, doc)
		require.Contains(t, text, image+":v", doc)
		require.Contains(t, text, chart, doc)
	}
}
