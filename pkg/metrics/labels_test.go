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
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func TestPhaseLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase, want string
	}{
		{"", "None"},
		{"Ready", "Ready"},
		{"Initializing", "Initializing"},
		{"Connecting", "Connecting"},
		{"Unknown", "Unknown"},
		{"NotFound", "NotFound"},
		{"Invalid", "Invalid"},
		// Anything else anyone may write on a Workspace.
		{"None", "Other"},
		{"Other", "Other"},
		{"ready", "Other"},
		{"READY", "Other"},
		{" Ready", "Other"},
		{"Ready\n", "Other"},
		{"Ready\x00", "Other"},
		{"Reаdy", "Other"}, // a Cyrillic а
		{"Unavailable", "Other"},
		{`{"phase":"Ready"}`, "Other"},
		{strings.Repeat("x", 100<<10), "Other"},
	} {
		require.Equal(t, tc.want, PhaseLabel(tc.phase), "%.40q", tc.phase)
	}
	require.Equal(t, []string{"None", "Ready", "Initializing", "Connecting", "Unknown", "NotFound", "Invalid", "Other"}, PhaseLabels)
}

// FuzzPhaseLabel: whatever a Workspace's phase annotation holds, its label is
// one of PhaseLabels, and the annotation's own value only where it is one of
// the contract's phases.
func FuzzPhaseLabel(f *testing.F) {
	for _, seed := range []string{"", "Ready", "Invalid", "None", "Other", "ready", "Ready ", "Reаdy", "\xff", strings.Repeat("Ready", 1000)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, phase string) {
		label := PhaseLabel(phase)
		if !slices.Contains(PhaseLabels, label) {
			t.Fatalf("PhaseLabel(%.40q) = %.40q, not one of %v", phase, label, PhaseLabels)
		}
		if label != PhaseNone && label != PhaseOther && (label != phase || !slices.Contains(mount.Phases, mount.Phase(phase))) {
			t.Fatalf("PhaseLabel(%.40q) = %q: only a phase of the contract is its own label", phase, label)
		}
		if (phase == "") != (label == PhaseNone) {
			t.Fatalf("PhaseLabel(%.40q) = %q: None is no annotation, and only that", phase, label)
		}
	})
}
