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
	"sync"

	"k8s.io/component-base/metrics"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// spellBuckets run from a second to a week.
var spellBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 604800}

// The transition histograms, which [ObserveTransition] records.
var (
	NotReadyDuration = histogramVec("not_ready_duration_seconds", spellBuckets, "How long a mount that had been ready was not ready, observed when it became ready again (once per such transition written), "+
		"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).", "kind", "shard")
	TimeToReady = histogramVec("time_to_ready_seconds", spellBuckets, "Time from the controller first seeing a mount not ready to its first ready state, observed then (a mount ready when first seen is not), "+
		"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).", "kind", "shard")
)

// ObserveTransition records, once per transition written by shard's
// controller, status' [mount.Status.NotReadySpell] or [mount.Status.TimeToReady].
func ObserveTransition(shard string, status mount.Status) {
	if spell, ok := status.NotReadySpell(); ok {
		NotReadyDuration.WithLabelValues(transitionKinds.label(status), shard).Observe(spell.Seconds())
	}
	if took, ok := status.TimeToReady(); ok {
		TimeToReady.WithLabelValues(transitionKinds.label(status), shard).Observe(took.Seconds())
	}
}

// transitionKinds bounds the kind label of series that accumulate: only a
// resolved kind ([mount.Status.KindResolved]) among the first kindLimit()
// seen is a value of its own, for the life of the process; docs/metrics.md
// says why.
var transitionKinds = &kindSet{kindLimit: MountInformerLimit, seen: map[string]bool{}}

type kindSet struct {
	kindLimit func() int

	lock sync.Mutex
	seen map[string]bool
}

func (k *kindSet) label(status mount.Status) string {
	kind := status.MountRef.Kind
	if !status.KindResolved() || kind == "" {
		return KindUnresolved
	}
	k.lock.Lock()
	defer k.lock.Unlock()
	if !k.seen[kind] {
		if len(k.seen) >= k.kindLimit() {
			return KindUnresolved
		}
		k.seen[kind] = true
	}
	return kind
}

func forgetTransitionShard(shard string) {
	for _, histogram := range []*metrics.HistogramVec{NotReadyDuration, TimeToReady} {
		if histogram.IsCreated() {
			histogram.DeletePartialMatch(map[string]string{"shard": shard})
		}
	}
}
