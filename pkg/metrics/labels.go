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

// The phase labels beside [mount.Phases], for no annotation and for a value that
// is none of them.
const (
	PhaseNone  = "None"
	PhaseOther = "Other"
)

var PhaseLabels = func() []string {
	labels := []string{PhaseNone}
	for _, phase := range mount.Phases {
		labels = append(labels, string(phase))
	}
	return append(labels, PhaseOther)
}()

// PhaseLabel is the label of a phase annotation value.
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

// ObservePhaseTransition counts a phase change the controller wrote.
func ObservePhaseTransition(from, to string) {
	PhaseTransitions.WithLabelValues(PhaseLabel(from), PhaseLabel(to)).Inc()
}

// requestPathMetrics are the apiserver series that take their resource labels
// from the path a client sent.
var requestPathMetrics = []string{"apiserver_request_total", "apiserver_request_terminations_total", "apiserver_request_aborts_total"}

var routeSubresources = []string{"", "/healthz", "/livez", "/readyz", "/api", "/apis"}

// UnexpectedLabel is component-base's value for a label outside its allow list.
const UnexpectedLabel = "unexpected"

var boundRequestPathLabelsOnce sync.Once

// BoundRequestPathLabels allows requestPathMetrics only the one resource served
// and [routeSubresources]; call it once, before serving.
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
