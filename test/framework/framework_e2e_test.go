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

package framework

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServer(t *testing.T) {
	t.Parallel()

	server := StartT(t, Options{})

	_, err := server.Config("user")
	require.ErrorContains(t, err, `context "user" not found`, "no user battery by default")

	// Nested workspaces, with a root config: the helpers strip /clusters/root.
	cfg := server.ConfigT(t, "root")
	parentName := UniqueName("parent")
	parent, _ := CreateWorkspace(t, cfg, RootPath, parentName)
	child, ws := CreateWorkspace(t, cfg, RootPath.Join(parentName), "child")
	require.NotEqual(t, parent, child)
	require.Equal(t, child.String(), ws.Spec.Cluster)
}
