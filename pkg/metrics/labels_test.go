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
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/legacyregistry"

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

// TestRequestPathLabelsBounded: a request the virtual workspace's timeout
// filter answers, its max-in-flight filter refuses, or a handler aborts, is
// counted with the labels of its RequestInfo, which come from the path the client sent: only the virtual
// workspace's own resource is a label value, any other path is
// "unexpected".
func TestRequestPathLabelsBounded(t *testing.T) {
	t.Parallel()
	BoundRequestPathLabels("workspacemounts.io", "v1alpha1", "workspacemounts")
	apimetrics.Register()
	request := func(path string) *http.Request {
		return httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, http.NoBody)
	}
	junk := "junk-" + strings.Repeat("x", 200)
	apimetrics.RecordRequestTermination(request("/apis/evil.io/v9/"+junk),
		&apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "evil.io", APIVersion: "v9", Resource: junk, Subresource: junk}, apimetrics.APIServerComponent, http.StatusGatewayTimeout)
	apimetrics.RecordRequestTermination(request("/"+junk), &apirequest.RequestInfo{Verb: "get", Path: "/" + junk}, apimetrics.APIServerComponent, http.StatusGatewayTimeout)
	apimetrics.RecordRequestTermination(request("/apis/workspacemounts.io/v1alpha1/workspacemounts"),
		&apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "workspacemounts.io", APIVersion: "v1alpha1", Resource: "workspacemounts"}, apimetrics.APIServerComponent, http.StatusGatewayTimeout)
	apimetrics.RecordRequestAbort(request("/apis/evil.io/v9/"+junk), &apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "evil.io", APIVersion: "v9", Resource: junk})
	apimetrics.RecordDroppedRequest(request("/apis/evil.io/v9/"+junk),
		&apirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: "evil.io", APIVersion: "v9", Resource: junk, Subresource: junk}, apimetrics.APIServerComponent, false)
	// A request served: the labels of its route.
	apimetrics.MonitorRequest(request("/apis/workspacemounts.io/v1alpha1/workspacemounts"), "LIST", "workspacemounts.io", "v1alpha1", "workspacemounts", "", "cluster",
		apimetrics.APIServerComponent, false, "", http.StatusOK, 0, time.Millisecond)

	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	seen := map[string]map[string]bool{}
	for _, family := range families {
		if !slices.Contains(requestPathMetrics, family.GetName()) {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, label := range m.GetLabel() {
				require.NotContains(t, label.GetValue(), "junk", "%s{%s}", family.GetName(), label.GetName())
				require.NotContains(t, label.GetValue(), "evil", "%s{%s}", family.GetName(), label.GetName())
				if seen[label.GetName()] == nil {
					seen[label.GetName()] = map[string]bool{}
				}
				seen[label.GetName()][label.GetValue()] = true
			}
		}
	}
	require.Equal(t, map[string]bool{UnexpectedLabel: true, "workspacemounts": true, "": true}, seen["resource"])
	require.Equal(t, map[string]bool{UnexpectedLabel: true, "": true}, seen["subresource"])
	require.Equal(t, map[string]bool{UnexpectedLabel: true, "workspacemounts.io": true, "": true}, seen["group"])
}
