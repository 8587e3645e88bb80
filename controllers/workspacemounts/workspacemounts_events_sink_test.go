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
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kcpeventsv1 "github.com/kcp-dev/client-go/kubernetes/typed/events/v1"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// eventServer is an HTTP server in place of a shard: it records the path
// and body of every request and answers with answer.
type eventServer struct {
	lock     sync.Mutex
	requests []eventRequest
	answer   func(w http.ResponseWriter, body []byte)
}

type eventRequest struct {
	method, path string
	event        eventsv1.Event
}

func (s *eventServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	request := eventRequest{method: r.Method, path: r.URL.Path}
	_ = json.Unmarshal(body, &request.event)
	s.lock.Lock()
	s.requests = append(s.requests, request)
	s.lock.Unlock()
	s.answer(w, body)
}

func (s *eventServer) seen() []eventRequest {
	s.lock.Lock()
	defer s.lock.Unlock()
	return append([]eventRequest(nil), s.requests...)
}

func answerStatus(code int32, reason metav1.StatusReason) func(w http.ResponseWriter, _ []byte) {
	return func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(code))
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: code, Reason: reason})
	}
}

// drops counts dropped events by reason, as countEventDrop does.
type drops struct {
	lock     sync.Mutex
	byReason map[string]int
}

func (d *drops) count(reason string) {
	d.lock.Lock()
	defer d.lock.Unlock()
	if d.byReason == nil {
		d.byReason = map[string]int{}
	}
	d.byReason[reason]++
}

func (d *drops) counted() map[string]int {
	d.lock.Lock()
	defer d.lock.Unlock()
	return maps.Clone(d.byReason)
}

// recordingTo starts the events of a controller whose shard is server,
// counting drops in dropped; the sink returned writes there too.
func recordingTo(t *testing.T, server *eventServer, dropped *drops) (*workspaceEvents, *clusterEventSink) {
	t.Helper()
	httpServer := httptest.NewServer(server)
	t.Cleanup(httpServer.Close)
	client, err := kcpeventsv1.NewForConfig(&rest.Config{Host: httpServer.URL})
	require.NoError(t, err)
	e, broadcaster := newEventRecording(10, client.Cluster, dropped.count)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		broadcaster.Shutdown()
	})
	require.NoError(t, broadcaster.StartRecordingToSinkWithContext(ctx))
	sink := newClusterEventSink(client.Cluster, e.clusterOf)
	sink.dropped = dropped.count
	return e, sink
}

// TestEventsWrittenInTheWorkspaceCluster: through client-go's broadcaster,
// an event is written once, in the Workspace's logical cluster, namespace
// default, regarding the Workspace; a second one like it within minutes
// is a series (a patch of the first), as the broadcaster aggregates.
func TestEventsWrittenInTheWorkspaceCluster(t *testing.T) {
	t.Parallel()
	server := &eventServer{answer: func(w http.ResponseWriter, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}}
	dropped := &drops{}
	e, _ := recordingTo(t, server, dropped)
	ws := eventWorkspace("root:org:team", "a", "uid-a")
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountObjectNotFound, "KubeCluster proxy does not exist.")
	require.Eventually(t, func() bool { return len(server.seen()) == 1 }, 10*time.Second, 10*time.Millisecond)

	request := server.seen()[0]
	require.Equal(t, http.MethodPost, request.method)
	require.Equal(t, "/clusters/root:org:team/apis/events.k8s.io/v1/namespaces/default/events", request.path)
	event := request.event
	require.Equal(t, corev1.ObjectReference{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace", Name: "a", UID: "uid-a"}, event.Regarding)
	require.Equal(t, "default", event.Namespace)
	require.Equal(t, corev1.EventTypeWarning, event.Type)
	require.Equal(t, mount.ReasonMountObjectNotFound, event.Reason)
	require.Equal(t, "KubeCluster proxy does not exist.", event.Note)
	require.Equal(t, EventAction, event.Action)
	require.Equal(t, EventReportingController, event.ReportingController)
	require.NotEmpty(t, event.ReportingInstance)
	require.False(t, event.EventTime.IsZero())

	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountObjectNotFound, "KubeCluster proxy does not exist.")
	require.Eventually(t, func() bool { return len(server.seen()) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, http.MethodPatch, server.seen()[1].method, "the same event again is a series")
	require.Equal(t, "/clusters/root:org:team/apis/events.k8s.io/v1/namespaces/default/events/"+event.Name, server.seen()[1].path)
	require.Empty(t, dropped.counted())
}

// TestEventDropsAreCounted: an event the shard refuses, or that gets no
// answer, is tried once and counted; so is one of a Workspace deleted
// before its write, and one beyond the writes allowed at once.
func TestEventDropsAreCounted(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		answer func(w http.ResponseWriter, body []byte)
		reason string
	}{
		"forbidden":            {answer: answerStatus(http.StatusForbidden, metav1.StatusReasonForbidden), reason: metrics.EventDropRefused},
		"no namespace default": {answer: answerStatus(http.StatusNotFound, metav1.StatusReasonNotFound), reason: metrics.EventDropRefused},
		"shard failing":        {answer: answerStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError), reason: metrics.EventDropRefused},
		"connection closed":    {answer: hangUp, reason: metrics.EventDropUnreachable},
		"not an API answer":    {answer: func(w http.ResponseWriter, _ []byte) { _, _ = w.Write([]byte("<html>")) }, reason: metrics.EventDropUnreachable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dropped := &drops{}
			server := &eventServer{answer: tc.answer}
			e, sink := recordingTo(t, server, dropped)
			uid := types.UID("uid-" + name)
			e.record(eventWorkspace("root:org", "a", uid), corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
			require.Eventually(t, func() bool { return len(dropped.counted()) > 0 }, 10*time.Second, 10*time.Millisecond, "no drop counted")
			require.Equal(t, map[string]int{tc.reason: 1}, dropped.counted())
			require.Len(t, server.seen(), 1)
			// The broadcaster retries a write that failed with anything but
			// an API status (*StatusError), 10 s later, up to 12 times: the
			// sink answers every failure with one.
			_, err := sink.Create(context.Background(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Regarding: corev1.ObjectReference{UID: uid}})
			var status *apierrors.StatusError
			require.ErrorAs(t, err, &status)
			require.Equal(t, map[string]int{tc.reason: 2}, dropped.counted())
		})
	}

	t.Run("workspace deleted", func(t *testing.T) {
		t.Parallel()
		dropped := &drops{}
		sink := newClusterEventSink(nil, func(types.UID) (logicalcluster.Name, bool) { return "", false })
		sink.dropped = dropped.count
		_, err := sink.Create(context.Background(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Regarding: corev1.ObjectReference{UID: "gone"}})
		var status *apierrors.StatusError
		require.ErrorAs(t, err, &status, "an API status: the broadcaster does not retry it")
		require.Equal(t, map[string]int{metrics.EventDropWorkspaceDeleted: 1}, dropped.counted())
	})

	t.Run("queue full", func(t *testing.T) {
		t.Parallel()
		dropped := &drops{}
		sink := newClusterEventSink(nil, func(types.UID) (logicalcluster.Name, bool) { return "root", true })
		sink.dropped = dropped.count
		for range cap(sink.inFlight) {
			sink.inFlight <- struct{}{}
		}
		_, err := sink.Patch(context.Background(), &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}, []byte("{}"))
		require.True(t, apierrors.IsTooManyRequests(err))
		require.Equal(t, map[string]int{metrics.EventDropQueueFull: 1}, dropped.counted())
	})
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ []byte) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}
