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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

const (
	// EventReportingController is the reportingController of every event the controller records.
	EventReportingController = "workspacemounts.io/controller"
	// EventAction is the action of every event the controller records.
	EventAction = "Reconcile"
	// DefaultMaxWorkspaceEventsPerHour is --max-workspace-events-per-hour.
	DefaultMaxWorkspaceEventsPerHour = 12
	maxEventNote                     = 1024
	maxEventReason                   = 128
	eventWindow                      = time.Hour
)

// workspaceRef is what every event of the controller is regarding: the Workspace by kind, name and UID, without a
// resourceVersion (which every write moves: a series would never form if its key held it).
func workspaceRef(ws *tenancyv1alpha1.Workspace) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(),
		Kind:       "Workspace",
		Name:       ws.Name,
		UID:        ws.UID,
	}
}

// transitionEventType is the type of the event of a transition into status (Controller.noteTransition; the reason and
// note are the contract's): Normal when the mount is ready, else Warning.
func transitionEventType(status mount.Status) string {
	if status.Ready {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// recordTransition records the event of ws's transition into status, ws being the Workspace before the write: none for
// a Workspace's first status that only says its mount object is not ready yet (nothing happened; the annotations and
// the condition tell it), so that new mounted Workspaces cost kcp no event write each until their mount changes.
func (c *Controller) recordTransition(ws *tenancyv1alpha1.Workspace, status mount.Status) {
	if status.Reason == mount.ReasonMountNotReady && priorStatus(ws) == nil {
		return
	}
	c.recordEvent(ws, transitionEventType(status), status.Reason, status.Message)
}

// recordEvent records an event regarding ws, in ws's logical cluster.
func (c *Controller) recordEvent(ws *tenancyv1alpha1.Workspace, eventType, reason, note string) {
	if c.events == nil {
		return
	}
	c.events.record(ws, eventType, mount.Truncate(mount.Sanitize(reason), maxEventReason), mount.Truncate(mount.Sanitize(note), maxEventNote))
}

// workspaceEvents hands a controller's events to its series, at most maxPerHour per Workspace in any hour, and
// remembers in which logical cluster each Workspace it recorded an event of lives, for the sink.
type workspaceEvents struct {
	maxPerHour int
	now        func() time.Time
	eventf     func(cluster logicalcluster.Name, regarding *corev1.ObjectReference, eventType, reason, note string)
	dropped    func(reason string)

	lock     sync.Mutex
	byKey    map[string]*recentEvents
	clusters map[types.UID]logicalcluster.Name
}

type recentEvents struct {
	uid types.UID
	// times are the times of the Workspace's events within eventWindow, oldest first, in Unix nanoseconds.
	times []int64
}

func newWorkspaceEvents(maxPerHour int, eventf func(cluster logicalcluster.Name, regarding *corev1.ObjectReference, eventType, reason, note string)) *workspaceEvents {
	return &workspaceEvents{
		maxPerHour: maxPerHour,
		now:        time.Now,
		eventf:     eventf,
		dropped:    countEventDrop,
		byKey:      map[string]*recentEvents{},
		clusters:   map[types.UID]logicalcluster.Name{},
	}
}

// newEventRecording returns a controller's events and their recorder, which writes each event with the events client of
// its Workspace's cluster; both count their drops with dropped.
func newEventRecording(maxPerHour int, eventsOf func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface,
	dropped func(reason string)) (*workspaceEvents, *eventRecorder) {
	var recorder *eventRecorder
	e := newWorkspaceEvents(maxPerHour, func(cluster logicalcluster.Name, regarding *corev1.ObjectReference, eventType, reason, note string) {
		recorder.record(cluster, regarding, eventType, reason, note)
	})
	e.dropped = dropped
	recorder = newEventRecorder(eventsOf, e.clusterOf)
	recorder.dropped = dropped
	return e, recorder
}

// record hands the event to its series unless ws had maxPerHour events within the last hour.
func (e *workspaceEvents) record(ws *tenancyv1alpha1.Workspace, eventType, reason, note string) {
	key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	if err != nil {
		return
	}
	if !e.allow(key, ws.UID, logicalcluster.From(ws)) {
		e.dropped(metrics.EventDropRateLimited)
		return
	}
	e.eventf(logicalcluster.From(ws), workspaceRef(ws), eventType, reason, note)
}

// countEventDrop counts a dropped event in workspacemounts_events_dropped_total.
func countEventDrop(reason string) {
	metrics.EventsDropped.WithLabelValues(reason).Inc()
}

// allow counts an event of the Workspace key (uid, in cluster) if it had fewer than maxPerHour within the last hour.
func (e *workspaceEvents) allow(key string, uid types.UID, cluster logicalcluster.Name) bool {
	now := e.now().UnixNano()
	e.lock.Lock()
	defer e.lock.Unlock()
	recent := e.byKey[key]
	if recent == nil || recent.uid != uid {
		if recent != nil {
			delete(e.clusters, recent.uid) // a Workspace of the same name, created again
		}
		recent = &recentEvents{uid: uid}
		e.byKey[key] = recent
	}
	e.clusters[uid] = cluster
	expired := 0
	for expired < len(recent.times) && now-recent.times[expired] >= int64(eventWindow) {
		expired++
	}
	recent.times = recent.times[expired:]
	if len(recent.times) == 0 {
		recent.times = nil // frees the array of a Workspace quiet for an hour
	}
	if len(recent.times) >= e.maxPerHour {
		return false
	}
	recent.times = append(recent.times, now)
	return true
}

// clusterOf returns the logical cluster of the Workspace uid, if it has an event recorded and was not deleted since.
func (e *workspaceEvents) clusterOf(uid types.UID) (logicalcluster.Name, bool) {
	e.lock.Lock()
	defer e.lock.Unlock()
	cluster, found := e.clusters[uid]
	return cluster, found
}

// forget drops what is kept of the Workspace key.
func (e *workspaceEvents) forget(key string) {
	e.lock.Lock()
	defer e.lock.Unlock()
	if recent, found := e.byKey[key]; found {
		delete(e.clusters, recent.uid)
		delete(e.byKey, key)
	}
}
