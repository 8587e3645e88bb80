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

// spellBuckets are the buckets of the transition histograms: from a second
// to a week.
var spellBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 604800}

var (
	// NotReadyDuration is the length of the not-ready spells that ended, per
	// mount kind (transitionKind) and shard.
	NotReadyDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Name: "not_ready_duration_seconds",
		Help: "How long a mount that had been ready was not ready, observed when it became ready again (once per such transition written), " +
			"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).",
		Buckets:        spellBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "shard"})
	// TimeToReady is, per mount kind and shard, the time from the
	// controller's first sight of a mount, not ready, to its first ready
	// state.
	TimeToReady = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Name: "time_to_ready_seconds",
		Help: "Time from the controller first seeing a mount not ready to its first ready state, observed then (a mount ready when first seen is not), " +
			"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).",
		Buckets:        spellBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "shard"})
)

// ObserveTransition records a transition the controller of shard ("" with
// one shard) wrote: status is the status written, with its history
// (mount.Status.WithHistory). A mount ready again is a not-ready spell
// (mount.Status.NotReadySpell), a mount ready for the first time a time to
// ready (mount.Status.TimeToReady); any other transition records nothing.
// The caller calls it once per transition, after the write succeeded.
func ObserveTransition(shard string, status mount.Status) {
	if spell, ok := status.NotReadySpell(); ok {
		NotReadyDuration.WithLabelValues(transitionKinds.label(status), shard).Observe(spell.Seconds())
	}
	if took, ok := status.TimeToReady(); ok {
		TimeToReady.WithLabelValues(transitionKinds.label(status), shard).Observe(took.Seconds())
	}
}

// transitionKinds bounds the kind label of the transition histograms as the
// mount gauges' is bounded (mountCollector), but for series that
// accumulate and cannot be folded at a scrape: a status' kind is a label
// value only if the controller's status says it resolved to a served,
// watched resource (mount.Status.KindResolved), and only the first
// kindLimit() kinds seen take a value of their own, for the life of the
// process; every other status is KindUnresolved. So the histograms have at
// most kindLimit()+1 kind values per shard, whatever tenants define.
var transitionKinds = &kindSet{kindLimit: MountInformerLimit, seen: map[string]bool{}}

type kindSet struct {
	kindLimit func() int

	lock sync.Mutex
	seen map[string]bool
}

// label is the kind label value of status.
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

// forgetTransitionShard drops the transition histograms' series of a shard.
func forgetTransitionShard(shard string) {
	for _, histogram := range []*metrics.HistogramVec{NotReadyDuration, TimeToReady} {
		if histogram.IsCreated() {
			histogram.DeletePartialMatch(map[string]string{"shard": shard})
		}
	}
}
