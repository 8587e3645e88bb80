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

// This file holds the events broadcaster's sink: it writes each event in
// the logical cluster of the Workspace it is regarding, once, and counts
// every event it cannot write as a drop.

package workspacemounts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

const (
	// maxEventWritesInFlight bounds the event writes to one shard at once;
	// an event beyond is dropped (metrics.EventDropQueueFull). A burst
	// (a provider's outage turning thousands of mounts not ready) costs
	// the shard at most this many concurrent requests, and the process
	// no pile of goroutines waiting for it.
	maxEventWritesInFlight = 64
	// eventWriteTimeout bounds one event write.
	eventWriteTimeout = 10 * time.Second
)

// clusterEventSink is the events.EventSink of a controller's broadcaster.
// client-go's sink writes to one cluster; kcp's Workspaces live in many, and
// an event names none: the sink finds the cluster of the Workspace the
// event is regarding by its UID (workspaceEvents.clusterOf).
//
// Each write is tried once. The broadcaster retries a write that failed
// with anything but an API status error up to 12 times, 10 s apart, and a
// series it could not write again at every flush: an unreachable shard
// would hold every event (and a goroutine) for two minutes. So every
// failure is returned as an API status error, which the broadcaster gives
// up on at once, and counted (workspacemounts_events_dropped_total).
type clusterEventSink struct {
	// events is the events client of a logical cluster.
	events    func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface
	clusterOf func(uid types.UID) (logicalcluster.Name, bool)
	// inFlight holds a token per write under way.
	inFlight chan struct{}
	timeout  time.Duration
	// dropped counts a dropped event (countEventDrop).
	dropped func(reason string)
}

var _ events.EventSink = &clusterEventSink{}

func newClusterEventSink(eventsOf func(cluster logicalcluster.Path) typedeventsv1.EventsV1Interface, clusterOf func(uid types.UID) (logicalcluster.Name, bool)) *clusterEventSink {
	return &clusterEventSink{events: eventsOf, clusterOf: clusterOf, inFlight: make(chan struct{}, maxEventWritesInFlight),
		timeout: eventWriteTimeout, dropped: countEventDrop}
}

func (s *clusterEventSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ctx, event, false, func(ctx context.Context, client typedeventsv1.EventInterface) (*eventsv1.Event, error) {
		return client.Create(ctx, event, metav1.CreateOptions{})
	})
}

func (s *clusterEventSink) Update(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ctx, event, false, func(ctx context.Context, client typedeventsv1.EventInterface) (*eventsv1.Event, error) {
		return client.Update(ctx, event, metav1.UpdateOptions{})
	})
}

// Patch writes the count of a series. An event no longer there (expired)
// is created again by the broadcaster on the NotFound: no drop.
func (s *clusterEventSink) Patch(ctx context.Context, event *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.write(ctx, event, true, func(ctx context.Context, client typedeventsv1.EventInterface) (*eventsv1.Event, error) {
		return client.Patch(ctx, event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	})
}

func (s *clusterEventSink) write(ctx context.Context, event *eventsv1.Event, patch bool,
	do func(context.Context, typedeventsv1.EventInterface) (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	if event.Namespace == "" {
		return nil, s.drop(metrics.EventDropRefused, apierrors.NewBadRequest("an event without a namespace"))
	}
	cluster, found := s.clusterOf(event.Regarding.UID)
	if !found {
		return nil, s.drop(metrics.EventDropWorkspaceDeleted,
			apierrors.NewResourceExpired(fmt.Sprintf("Workspace %s (uid %s) was deleted: its event is not written", event.Regarding.Name, event.Regarding.UID)))
	}
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	default:
		return nil, s.drop(metrics.EventDropQueueFull,
			apierrors.NewTooManyRequests(fmt.Sprintf("%d event writes to the shard under way", cap(s.inFlight)), 0))
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	written, err := do(ctx, s.events(cluster.Path()).Events(event.Namespace))
	var status *apierrors.StatusError
	switch {
	case err == nil:
		return written, nil
	case patch && apierrors.IsNotFound(err):
		return nil, err // the broadcaster creates the event instead
	case errors.As(err, &status):
		return nil, s.drop(metrics.EventDropRefused, status)
	default:
		return nil, s.drop(metrics.EventDropUnreachable, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: fmt.Sprintf("writing the event in cluster %s: %v", cluster, err),
		}})
	}
}

// drop counts a dropped event and returns err, an API status error.
func (s *clusterEventSink) drop(reason string, err *apierrors.StatusError) error {
	s.dropped(reason)
	return err
}
