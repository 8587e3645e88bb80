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

package kcprelease

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"v1.31.6+kcp-v0.28.1":                           "0.28.1",
		"v1.36.0+kcp-v0.32.3":                           "0.32.3",
		"v1.36.0+kcp-v0.31.5-12-gabcdef0":               "0.31.5",
		"v1.36.0+kcp-v0.32.2-dirty":                     "0.32.2",
		"v1.36.0+kcp-v0.32.2-3-g0123abc-dirty":          "0.32.2",
		"kcp version v1.36.0+kcp-v0.32.3\n":             "0.32.3",
		"kcp-front-proxy version v1.32.3+kcp-v0.28.1\n": "0.28.1",
		"kcp version v1.36.0+kcp-v0.33.0-rc.1":          "0.33.0-rc.1",
		"v1.37.0+kcp-v0.34.0":                           "0.34.0",
		"v1.31.0":                                       "",
		"v0.0.0-master+$Format:%H$":                     "",
		"v1.36.0+kcp-vX":                                "",
		"v1.36.0+kcp-v0.32":                             "",
		"":                                              "",
	} {
		release, err := Parse(s)
		if want == "" {
			require.Error(t, err, s)
			continue
		}
		require.NoError(t, err, s)
		require.Equal(t, want, release.String(), s)
	}
	_, err := Parse("kcp version v0.0.0-master+$Format:%H$\n")
	require.EqualError(t, err, `"kcp version v0.0.0-master+$Format:%H$" names no kcp release (kcp-vX.Y.Z)`)
}

func TestMountURLForm(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]mount.URLForm{
		"v1.30.0+kcp-v0.27.0":        mount.URLFormLegacy,
		"v1.31.6+kcp-v0.28.1":        mount.URLFormLegacy,
		"v1.36.0+kcp-v0.32.3":        mount.URLFormLegacy,
		"v1.36.0+kcp-v0.33.0-rc.1":   mount.URLFormHTTPS,
		"v1.36.0+kcp-v0.33.0":        mount.URLFormHTTPS,
		"v1.36.0+kcp-v0.33.7":        mount.URLFormHTTPS,
		"v1.37.0+kcp-v0.34.0":        mount.URLFormHTTPS,
		"v1.40.0+kcp-v1.0.0":         mount.URLFormHTTPS,
		"v1.36.0+kcp-v0.32.9-4-gabc": mount.URLFormLegacy,
	} {
		release, err := Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, want, release.MountURLForm(), s)
	}
}
