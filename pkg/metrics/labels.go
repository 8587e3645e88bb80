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
	"sync"

	"k8s.io/component-base/metrics"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// The phase label values beside the contract's phases (mount.Phases).
const (
	// PhaseNone is the phase label of no workspacemounts.io/phase
	// annotation: a Workspace's first status, or one no longer mounted.
	PhaseNone = "None"
	// PhaseOther is the phase label of an annotation value that is none of
	// the contract's phases. The controller never writes one; anyone who may
	// annotate a Workspace may, and what they write is no label value.
	PhaseOther = "Other"
)

// PhaseLabels are every value PhaseLabel returns: PhaseNone, the
// contract's phases, PhaseOther.
var PhaseLabels = func() []string {
	labels := []string{PhaseNone}
	for _, phase := range mount.Phases {
		labels = append(labels, string(phase))
	}
	return append(labels, PhaseOther)
}()

// PhaseLabel is the label value of a workspacemounts.io/phase annotation
// value ("" where there is none): the phase itself if it is one of the
// contract's (exactly, as the controller writes it), PhaseNone for "",
// else PhaseOther.
func PhaseLabel(phase string) string {
	switch {
	case phase == "":
		return PhaseNone
	case slices.Contains(mount.Phases, mount.Phase(phase)):
		return phase
	default:
		return PhaseOther
	}
}

// ObservePhaseTransition counts a phase change the controller wrote, from
// and to the annotation's values ("" for none), each as PhaseLabel maps it.
func ObservePhaseTransition(from, to string) {
	PhaseTransitions.WithLabelValues(PhaseLabel(from), PhaseLabel(to)).Inc()
}

// requestPathMetrics are the series of k8s.io/apiserver that take group,
// version, resource and subresource from the path a client sent (its
// RequestInfo; for a path that names no resource, the path itself as
// subresource) instead of from the route that served the request: those
// of a request its timeout filter answered with a 504, its max-in-flight
// filter with a 429 (apiserver_request_total too), or a handler aborted.
// Any path a client sends would be a label value.
var requestPathMetrics = []string{"apiserver_request_total", "apiserver_request_terminations_total", "apiserver_request_aborts_total"}

// routeSubresources are the subresource values of the virtual workspace's
// own routes: none for its resource, the path for the health endpoints and
// the aggregated discovery (k8s.io/apiserver's InstrumentHandlerFunc).
var routeSubresources = []string{"", "/healthz", "/livez", "/readyz", "/api", "/apis"}

// UnexpectedLabel is the value component-base gives a label value outside
// its allow list.
const UnexpectedLabel = "unexpected"

var boundRequestPathLabelsOnce sync.Once

// BoundRequestPathLabels gives requestPathMetrics component-base's label
// allow lists (as kube components' --allow-metric-labels): the one resource
// the server serves (group, version, resource), or none, and the
// subresources of its routes; any other value is UnexpectedLabel. A vector
// reads its allow list when it is first used, so the server calls this
// before it serves any request; later calls do nothing.
func BoundRequestPathLabels(group, version, resource string) {
	boundRequestPathLabelsOnce.Do(func() {
		allowed := map[string][]string{
			"group":       {"", group},
			"version":     {"", version},
			"resource":    {"", resource},
			"subresource": routeSubresources,
		}
		lists := map[string]string{}
		for _, name := range requestPathMetrics {
			for label, values := range allowed {
				lists[name+","+label] = strings.Join(values, ",")
			}
		}
		metrics.SetLabelAllowList(lists)
	})
}
