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

package clients

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithIdentity(t *testing.T) {
	t.Parallel()
	identities := map[string]string{"tenancy.kcp.io": "abc"}
	for _, tc := range []struct {
		path, want string
	}{
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces", "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:abc"},
		{"/base/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces", "/base/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:abc"},
		// Already named, one cluster, another group, discovery: untouched.
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:xyz", "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:xyz"},
		{"/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/ws", "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/ws"},
		{"/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings", "/clusters/*/apis/apis.kcp.io/v1alpha1/apibindings"},
		{"/clusters/*/apis/tenancy.kcp.io/v1alpha1", "/clusters/*/apis/tenancy.kcp.io/v1alpha1"},
	} {
		got, changed := withIdentity(tc.path, identities)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.path != tc.want, changed)
	}
}
