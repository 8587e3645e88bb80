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

package leaderfacts

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, facts := range []Facts{
		{Identity: "a_1", Version: "v0.1.0"},
		{Identity: "b_2", Version: "v0.1.0-3-gabcdef0", WorkspaceCondition: true},
		{Identity: "c_3", Version: "v0.2.0", WorkspaceCondition: true, WorkspaceURL: true, TrustsRequestHeaders: true},
		{Identity: "d_4", Version: "v0.3.0", WorkspaceCondition: true, MountURLContract: "legacy"},
		{Identity: "e_5", Version: "v0.3.0", MountURLContract: "auto"},
	} {
		parsed, ok, err := Parse(facts.Annotations())
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, facts, parsed)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	full := Facts{Identity: "x", Version: "v0.1.0", WorkspaceURL: true}.Annotations()
	without := func(key string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			if k != key {
				m[k] = v
			}
		}
		return m
	}
	with := func(key, value string) map[string]string {
		m := without(key)
		m[key] = value
		return m
	}
	for name, tc := range map[string]struct {
		annotations map[string]string
		ok          bool
		err         string
	}{
		"none":                                 {annotations: nil},
		"others only":                          {annotations: map[string]string{"a": "b"}},
		"complete":                             {annotations: full, ok: true},
		"missing a flag":                       {annotations: without(WorkspaceURLAnnotation), ok: true, err: "is missing"},
		"not a bool":                           {annotations: with(TrustsRequestHeadersAnnotation, "yes"), ok: true, err: `"yes", not true or false`},
		"a leader before --mount-url-contract": {annotations: without(MountURLContractAnnotation), ok: true},
		"an unknown contract":                  {annotations: with(MountURLContractAnnotation, "http"), ok: true, err: `"http", not auto, https or legacy`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, ok, err := Parse(tc.annotations)
			require.Equal(t, tc.ok, ok)
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.err)
			}
		})
	}
}

func TestLevel(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, Facts{}.Level())
	require.Equal(t, 2, Facts{WorkspaceCondition: true}.Level())
	require.Equal(t, 3, Facts{WorkspaceCondition: true, WorkspaceURL: true}.Level())
	require.Equal(t, 3, Facts{WorkspaceURL: true}.Level())
}
