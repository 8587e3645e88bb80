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

package workspacemounts

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

const (
	// maxEventWritesInFlight bounds the event writes to one shard at once: the number of writers.
	maxEventWritesInFlight = 64
	// maxEventWritesPerCluster bounds the event writes to one logical cluster at once.
	maxEventWritesPerCluster = 3
	// maxQueuedEventWritesPerCluster bounds a cluster's queue; an event beyond is dropped.
	maxQueuedEventWritesPerCluster = 1000
	// maxEventClusters bounds the clusters the recorder keeps.
	maxEventClusters  = 10000
	eventWriteTimeout = 5 * time.Second
)

// clusterWrites are a logical cluster's writes: the series waiting, the writes in flight, and its breaker.
type clusterWrites struct {
	name     logicalcluster.Name
	queue    []*eventSeries
	inFlight int
	inReady  bool
	breaker  eventBreaker
}

func (cw *clusterWrites) idle() bool {
	return len(cw.queue) == 0 && cw.inFlight == 0
}

// enqueue queues the write of s (under the lock): at most once, and not while it is being written (the writer queues it
// again when done), so a series has one write at a time, the latest state when it starts.
func (r *eventRecorder) enqueue(s *eventSeries, now time.Time) {
	if s.writing {
		s.dirty = true
		return
	}
	if s.queued {
		return
	}
	cw := r.clusters[s.cluster]
	if cw == nil {
		if len(r.clusters) >= maxEventClusters {
			r.dropped(metrics.EventDropQueueFull)
			return
		}
		cw = &clusterWrites{name: s.cluster}
		r.clusters[s.cluster] = cw
	}
	limit := r.breakers.limit(&cw.breaker, now, r.perCluster)
	switch {
	case limit == 0:
		r.dropped(metrics.EventDropClusterSuspended)
	case len(cw.queue) >= maxQueuedEventWritesPerCluster:
		r.dropped(metrics.EventDropQueueFull)
	default:
		cw.queue = append(cw.queue, s)
		s.queued = true
		r.makeReady(cw, limit)
	}
	r.forgetIfDone(cw, now)
}

// makeReady puts cw in the writers' turn if it has a write waiting and room for it (under the lock).
func (r *eventRecorder) makeReady(cw *clusterWrites, limit int) {
	if cw.inReady || len(cw.queue) == 0 || cw.inFlight >= limit {
		return
	}
	cw.inReady = true
	r.ready = append(r.ready, cw)
	r.cond.Signal()
}

// forgetIfDone forgets cw once it has nothing queued, in flight, or to remember of its breaker (under the lock).
func (r *eventRecorder) forgetIfDone(cw *clusterWrites, now time.Time) {
	if cw.idle() && !cw.inReady && cw.breaker.failures == 0 && r.clusters[cw.name] == cw {
		delete(r.clusters, cw.name)
	}
}

// writeQueued is a writer: it takes the next cluster in turn, writes the first series of its queue, and puts the
// cluster back in turn, until ctx is done or the recorder stops.
func (r *eventRecorder) writeQueued(ctx context.Context) {
	for {
		r.lock.Lock()
		for !r.stopped && len(r.ready) == 0 {
			r.cond.Wait()
		}
		if r.stopped {
			r.lock.Unlock()
			return
		}
		cw := r.ready[0]
		r.ready[0] = nil
		r.ready = r.ready[1:]
		cw.inReady = false
		now := r.now()
		limit := r.breakers.limit(&cw.breaker, now, r.perCluster)
		if limit == 0 || len(cw.queue) == 0 || cw.inFlight >= limit {
			r.dropQueued(cw, limit)
			r.forgetIfDone(cw, now)
			r.lock.Unlock()
			continue
		}
		s := cw.queue[0]
		cw.queue[0] = nil
		cw.queue = cw.queue[1:]
		s.queued = false
		if !r.exists(s.key.uid) {
			delete(r.series, s.key)
			r.dropped(metrics.EventDropWorkspaceDeleted)
			r.makeReady(cw, limit)
			r.forgetIfDone(cw, now)
			r.lock.Unlock()
			continue
		}
		cw.inFlight++
		s.writing, s.dirty = true, false
		event, created := r.event(s), s.created
		r.makeReady(cw, limit)
		r.lock.Unlock()

		result := r.write(ctx, s.cluster, event, created)

		r.lock.Lock()
		now = r.now()
		cw.inFlight--
		s.writing = false
		if result == writeCreate || result == writePatch {
			if s.bounced {
				r.dropped(metrics.EventDropRefused)
				result = writeFailed
			}
			s.bounced = !s.bounced
		} else {
			s.bounced = false
		}
		switch result {
		case writeDone:
			s.created = true
			r.breakers.succeeded(&cw.breaker)
		case writeCreate:
			s.created = false
			s.dirty = true
		case writePatch:
			s.created = true
			s.dirty = true
		case writeFailed:
			r.breakers.failed(&cw.breaker, now)
		case writeStopped:
		}
		if s.dirty && !r.stopped {
			r.enqueue(s, now)
		}
		limit = r.breakers.limit(&cw.breaker, now, r.perCluster)
		r.dropQueued(cw, limit)
		r.makeReady(cw, limit)
		r.forgetIfDone(cw, now)
		r.lock.Unlock()
	}
}

// dropQueued drops the writes queued for cw if its breaker is open.
func (r *eventRecorder) dropQueued(cw *clusterWrites, limit int) {
	if limit > 0 {
		return
	}
	for i, s := range cw.queue {
		s.queued = false
		r.dropped(metrics.EventDropClusterSuspended)
		cw.queue[i] = nil
	}
	cw.queue = nil
}

// writeResult is what a write did, and what comes next for its series.
type writeResult int

const (
	// writeDone: the event object is as the series was.
	writeDone writeResult = iota
	// writeCreate: the event object is not there: create it.
	writeCreate
	// writePatch: the event object was there already (a create that timed out succeeded): patch it.
	writePatch
	// writeFailed: refused or no answer, counted as a drop; a failure of the cluster for its breaker.
	writeFailed
	writeStopped
)

// write writes event in cluster once, within r.timeout: a create of a new event object, else a patch of the series'
// count and note.
func (r *eventRecorder) write(ctx context.Context, cluster logicalcluster.Name, event *eventsv1.Event, created bool) writeResult {
	if ctx.Err() != nil {
		return writeStopped
	}
	writeCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	client := r.events(cluster.Path())
	var err error
	if created {
		var patch []byte
		if patch, err = seriesPatch(event); err == nil {
			err = client.RESTClient().Patch(types.MergePatchType).AbsPath("/api/v1", "namespaces", event.Namespace, "events", event.Name).
				Body(patch).Do(writeCtx).Error()
		}
	} else {
		_, err = client.Events(event.Namespace).Create(writeCtx, event, metav1.CreateOptions{})
	}
	var status *apierrors.StatusError
	switch {
	case err == nil:
		return writeDone
	case created && apierrors.IsNotFound(err):
		return writeCreate
	case !created && apierrors.IsAlreadyExists(err):
		if event.Series == nil {
			return writeDone
		}
		return writePatch
	case ctx.Err() != nil:
		return writeStopped
	case errors.As(err, &status):
		r.dropped(metrics.EventDropRefused)
	default:
		r.dropped(metrics.EventDropUnreachable)
	}
	klog.FromContext(ctx).V(2).Info("event not written", "cluster", cluster, "event", event.Name, "err", err)
	return writeFailed
}

// seriesPatch is the merge patch of a core/v1 event setting the series and note of event.
func seriesPatch(event *eventsv1.Event) ([]byte, error) {
	patch := struct {
		Message string              `json:"message"`
		Series  *corev1.EventSeries `json:"series,omitempty"`
	}{Message: event.Note}
	if event.Series != nil {
		patch.Series = &corev1.EventSeries{Count: event.Series.Count, LastObservedTime: event.Series.LastObservedTime}
	}
	return json.Marshal(patch)
}
