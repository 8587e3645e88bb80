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
	"errors"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/record/util"

	"github.com/kcp-dev/logicalcluster/v3"
)

const (
	// seriesWindow is how long a series stays open after its last event (client-go's finishTime).
	seriesWindow = 6 * time.Minute
	seriesSweep  = time.Minute
)

// seriesKey is what makes two events one series (client-go's eventKey, less what is the same for every event of the
// controller: action, reporting controller and instance, no related object).
type seriesKey struct {
	uid       types.UID
	eventType string
	reason    string
}

// eventSeries is one event object in kcp: the first event of a series and the count, time and note of its latest.
type eventSeries struct {
	key       seriesKey
	cluster   logicalcluster.Name
	regarding corev1.ObjectReference
	name      string
	first     time.Time
	last      time.Time
	count     int32
	// note is the latest event's: a series tells its latest cause.
	note string
	// created: the event object was written (or found) in kcp; later writes patch its series and note.
	created bool
	// queued: in its cluster's queue of writes; writing: a write is under way.
	queued, writing, dirty bool
	// bounced: the last write found the object not as expected.
	bounced bool
}

// eventRecorder turns the events of a controller into event objects in the Workspaces' logical clusters, in place of
// client-go's events broadcaster (k8s.io/client-go/tools/events), keeping what users see.
type eventRecorder struct {
	events func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface
	// exists tells whether the Workspace uid is still there.
	exists   func(uid types.UID) bool
	now      func() time.Time
	timeout  time.Duration
	instance string
	dropped  func(reason string)
	// perCluster bounds the writes in flight to one cluster when its breaker is closed.
	perCluster int
	breakers   breakerPolicy

	lock   sync.Mutex
	cond   *sync.Cond
	series map[seriesKey]*eventSeries
	// clusters are the clusters with writes queued or in flight, or whose last writes failed.
	clusters map[logicalcluster.Name]*clusterWrites
	ready    []*clusterWrites
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	workers  sync.WaitGroup
}

func newEventRecorder(eventsOf func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface, clusterOf func(uid types.UID) (logicalcluster.Name, bool)) *eventRecorder {
	hostname, _ := os.Hostname()
	r := &eventRecorder{
		events: eventsOf,
		exists: func(uid types.UID) bool {
			_, found := clusterOf(uid)
			return found
		},
		now:        time.Now,
		timeout:    eventWriteTimeout,
		instance:   EventReportingController + "-" + hostname,
		dropped:    countEventDrop,
		perCluster: maxEventWritesPerCluster,
		breakers:   defaultBreakerPolicy,
		series:     map[seriesKey]*eventSeries{},
		clusters:   map[logicalcluster.Name]*clusterWrites{},
	}
	r.cond = sync.NewCond(&r.lock)
	return r
}

// StartRecordingToSinkWithContext starts the writers (at most maxEventWritesInFlight writes at once) and the sweep of
// closed series, until ctx is done or Shutdown.
func (r *eventRecorder) StartRecordingToSinkWithContext(ctx context.Context) error {
	r.lock.Lock()
	defer r.lock.Unlock()
	if r.started {
		return errors.New("the event recorder runs once")
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(ctx)
	r.workers.Add(maxEventWritesInFlight + 1)
	for range maxEventWritesInFlight {
		go func() {
			defer r.workers.Done()
			r.writeQueued(ctx)
		}()
	}
	go func() {
		defer r.workers.Done()
		ticker := time.NewTicker(seriesSweep)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				r.stop()
				return
			case <-ticker.C:
				r.sweep()
			}
		}
	}()
	return nil
}

// Shutdown stops the writers, cancelling the writes under way, and returns once they ended: nothing is written after
// it.
func (r *eventRecorder) Shutdown() {
	r.stop()
	r.workers.Wait()
}

func (r *eventRecorder) stop() {
	r.lock.Lock()
	defer r.lock.Unlock()
	r.stopped = true
	if r.cancel != nil {
		r.cancel()
	}
	r.series = map[seriesKey]*eventSeries{}
	r.clusters = map[logicalcluster.Name]*clusterWrites{}
	r.ready = nil
	r.cond.Broadcast()
}

// record adds an event regarding a Workspace of cluster to its series, or starts one, and queues the series' write.
func (r *eventRecorder) record(cluster logicalcluster.Name, regarding *corev1.ObjectReference, eventType, reason, note string) {
	now := r.now()
	key := seriesKey{uid: regarding.UID, eventType: eventType, reason: reason}
	r.lock.Lock()
	defer r.lock.Unlock()
	if r.stopped {
		return
	}
	s := r.series[key]
	if s != nil && now.Sub(s.last) >= seriesWindow && !s.queued && !s.writing {
		s = nil // closed: a new event object
	}
	if s == nil {
		s = &eventSeries{key: key, cluster: cluster, regarding: *regarding, first: now, last: now, count: 1, note: note,
			name: util.GenerateEventName(regarding.Name, now.UnixNano())}
		r.series[key] = s
	} else {
		s.count++
		s.last = now
		s.note = note
	}
	r.enqueue(s, now)
}

// event is the event object of s as it is now (under the lock).
func (r *eventRecorder) event(s *eventSeries) *eventsv1.Event {
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: s.name, Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.MicroTime{Time: s.first},
		ReportingController: EventReportingController,
		ReportingInstance:   r.instance,
		Action:              EventAction,
		Reason:              s.key.reason,
		Regarding:           s.regarding,
		Note:                s.note,
		Type:                s.key.eventType,
	}
	if s.count > 1 {
		event.Series = &eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.MicroTime{Time: s.last}}
	}
	return event
}

// sweep forgets the series closed, and the clusters whose breaker has had no write to refuse for a while.
func (r *eventRecorder) sweep() {
	now := r.now()
	r.lock.Lock()
	defer r.lock.Unlock()
	for key, s := range r.series {
		if now.Sub(s.last) >= seriesWindow && !s.queued && !s.writing {
			delete(r.series, key)
		}
	}
	for name, cw := range r.clusters {
		if cw.idle() && r.breakers.forgettable(&cw.breaker, now) {
			delete(r.clusters, name)
		}
	}
}
