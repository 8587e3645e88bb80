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
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kcpeventsv1 "github.com/kcp-dev/client-go/kubernetes/typed/events/v1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// eventServer is an HTTP server in place of a shard: it records the path
// and body of every request and answers with answer.
type eventServer struct {
	lock     sync.Mutex
	requests []eventRequest
	answer   func(w http.ResponseWriter, r *http.Request, body []byte)
}

type eventRequest struct {
	method, path string
	event        eventsv1.Event
	body         string
}

func (s *eventServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	request := eventRequest{method: r.Method, path: r.URL.Path, body: string(body)}
	_ = json.Unmarshal(body, &request.event)
	s.lock.Lock()
	s.requests = append(s.requests, request)
	s.lock.Unlock()
	s.answer(w, r, body)
}

func (s *eventServer) seen() []eventRequest {
	s.lock.Lock()
	defer s.lock.Unlock()
	return append([]eventRequest(nil), s.requests...)
}

func answerStatus(code int32, reason metav1.StatusReason) func(w http.ResponseWriter, _ *http.Request, _ []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
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

// echo answers a write with its body, as a shard that wrote it.
func echo(w http.ResponseWriter, _ *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, _ *http.Request, _ []byte) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// hang never answers: a webhook that accepts and never answers. It returns
// when the client gives up.
func hang(_ http.ResponseWriter, r *http.Request, _ []byte) {
	<-r.Context().Done()
}

// byCluster answers a request to a cluster named in answers with its
// answer, else with otherwise.
func byCluster(answers map[string]func(http.ResponseWriter, *http.Request, []byte), otherwise func(http.ResponseWriter, *http.Request, []byte)) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		for cluster, answer := range answers {
			if strings.HasPrefix(r.URL.Path, "/clusters/"+cluster+"/") {
				answer(w, r, body)
				return
			}
		}
		otherwise(w, r, body)
	}
}

// testClock is a clock the test moves.
type testClock struct{ nanos atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.nanos.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time      { return time.Unix(0, c.nanos.Load()) }
func (c *testClock) add(d time.Duration) { c.nanos.Add(int64(d)) }

// recordingTo starts the events of a controller whose shard is server,
// counting drops in dropped; tune changes the recorder before it starts.
func recordingTo(t testing.TB, server http.Handler, dropped *drops, tune func(*workspaceEvents, *eventRecorder)) (*workspaceEvents, *eventRecorder) {
	t.Helper()
	httpServer := httptest.NewServer(server)
	t.Cleanup(httpServer.Close)
	client, err := kcpeventsv1.NewForConfig(&rest.Config{Host: httpServer.URL, QPS: -1})
	require.NoError(t, err)
	e, recorder := newEventRecording(1000, client.Cluster, dropped.count)
	if tune != nil {
		tune(e, recorder)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		recorder.Shutdown()
	})
	require.NoError(t, recorder.StartRecordingToSinkWithContext(ctx))
	return e, recorder
}

// TestEventsWrittenInTheWorkspaceCluster: an event is written once, in the
// Workspace's logical cluster, namespace default, regarding the Workspace;
// one like it within minutes is a series, a patch of the first's count and
// note, which follows the latest event.
func TestEventsWrittenInTheWorkspaceCluster(t *testing.T) {
	t.Parallel()
	server := &eventServer{answer: echo}
	dropped := &drops{}
	clock := newTestClock()
	e, _ := recordingTo(t, server, dropped, func(_ *workspaceEvents, r *eventRecorder) { r.now = clock.now })
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
	require.Equal(t, clock.now(), event.EventTime.Time)
	require.Nil(t, event.Series)

	clock.add(time.Minute)
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountObjectNotFound, "KubeCluster proxy does not exist.")
	require.Eventually(t, func() bool { return len(server.seen()) == 2 }, 10*time.Second, 10*time.Millisecond)
	patch := server.seen()[1]
	require.Equal(t, http.MethodPatch, patch.method, "the same event again is a series")
	require.Equal(t, "/clusters/root:org:team/api/v1/namespaces/default/events/"+event.Name, patch.path)
	require.JSONEq(t, `{"message":"KubeCluster proxy does not exist.","series":{"count":2,"lastObservedTime":"2026-12-01T10:01:00.000000Z"}}`, patch.body)

	clock.add(time.Minute)
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountObjectNotFound, "KubeCluster proxy was deleted again.")
	require.Eventually(t, func() bool { return len(server.seen()) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.JSONEq(t, `{"message":"KubeCluster proxy was deleted again.","series":{"count":3,"lastObservedTime":"2026-12-01T10:02:00.000000Z"}}`,
		server.seen()[2].body, "the series tells its latest cause")

	clock.add(seriesWindow)
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountObjectNotFound, "KubeCluster proxy does not exist.")
	require.Eventually(t, func() bool { return len(server.seen()) == 4 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, http.MethodPost, server.seen()[3].method, "a series quiet for its window is closed")
	require.NotEqual(t, event.Name, server.seen()[3].event.Name)
	require.Empty(t, dropped.counted())
}

// TestEventSeriesRecreatedWhenGone: a series whose event object expired in
// kcp is created again, with its count; a create that finds the object
// (an earlier create that timed out but was written) patches it.
func TestEventSeriesRecreatedWhenGone(t *testing.T) {
	t.Parallel()
	var gone atomic.Bool
	server := &eventServer{}
	server.answer = func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case r.Method == http.MethodPatch && gone.Load():
			answerStatus(http.StatusNotFound, metav1.StatusReasonNotFound)(w, r, body)
		case r.Method == http.MethodPost && !gone.Load() && len(server.seen()) > 1:
			answerStatus(http.StatusConflict, metav1.StatusReasonAlreadyExists)(w, r, body)
		default:
			echo(w, r, body)
		}
	}
	dropped := &drops{}
	e, _ := recordingTo(t, server, dropped, nil)
	ws := eventWorkspace("root:org", "a", "uid-a")
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "one")
	require.Eventually(t, func() bool { return len(server.seen()) == 1 }, 10*time.Second, 10*time.Millisecond)
	gone.Store(true)
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "two")
	require.Eventually(t, func() bool { return len(server.seen()) == 3 }, 10*time.Second, 10*time.Millisecond)
	seen := server.seen()
	require.Equal(t, []string{http.MethodPost, http.MethodPatch, http.MethodPost}, []string{seen[0].method, seen[1].method, seen[2].method})
	require.Equal(t, seen[0].event.Name, seen[2].event.Name)
	require.Equal(t, &eventsv1.EventSeries{Count: 2, LastObservedTime: seen[2].event.Series.LastObservedTime}, seen[2].event.Series)
	require.Equal(t, "two", seen[2].event.Note)
	require.Empty(t, dropped.counted())
}

// TestEventSeriesBouncesOnce: a shard (or a webhook) that answers every
// patch NotFound and every create AlreadyExists costs one bounce, then a
// counted failure, not a loop of writes.
func TestEventSeriesBouncesOnce(t *testing.T) {
	t.Parallel()
	server := &eventServer{}
	server.answer = func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case len(server.seen()) == 1:
			echo(w, r, body)
		case r.Method == http.MethodPatch:
			answerStatus(http.StatusNotFound, metav1.StatusReasonNotFound)(w, r, body)
		default:
			answerStatus(http.StatusConflict, metav1.StatusReasonAlreadyExists)(w, r, body)
		}
	}
	dropped := &drops{}
	e, _ := recordingTo(t, server, dropped, nil)
	ws := eventWorkspace("root:org", "a", "uid-a")
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "one")
	require.Eventually(t, func() bool { return len(server.seen()) == 1 }, 10*time.Second, 10*time.Millisecond)
	e.record(ws, corev1.EventTypeWarning, mount.ReasonMountNotReady, "two")
	require.Eventually(t, func() bool { return len(dropped.counted()) > 0 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.Len(t, server.seen(), 3, "created, patched (NotFound), created (AlreadyExists), no more")
	require.Equal(t, map[string]int{metrics.EventDropRefused: 1}, dropped.counted())
}

// TestEventDropsAreCounted: an event the shard refuses, or that gets no
// answer, is tried once and counted; so is one of a Workspace deleted
// before its write, one beyond a cluster's queue, and none after the
// recorder stopped.
func TestEventDropsAreCounted(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		answer func(w http.ResponseWriter, r *http.Request, body []byte)
		reason string
	}{
		"forbidden":            {answer: answerStatus(http.StatusForbidden, metav1.StatusReasonForbidden), reason: metrics.EventDropRefused},
		"no namespace default": {answer: answerStatus(http.StatusNotFound, metav1.StatusReasonNotFound), reason: metrics.EventDropRefused},
		"shard failing":        {answer: answerStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError), reason: metrics.EventDropRefused},
		"connection closed":    {answer: hangUp, reason: metrics.EventDropUnreachable},
		"no answer in time":    {answer: hang, reason: metrics.EventDropUnreachable},
		"not an API answer":    {answer: func(w http.ResponseWriter, _ *http.Request, _ []byte) { _, _ = w.Write([]byte("<html>")) }, reason: metrics.EventDropUnreachable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dropped := &drops{}
			server := &eventServer{answer: tc.answer}
			e, _ := recordingTo(t, server, dropped, func(_ *workspaceEvents, r *eventRecorder) { r.timeout = 100 * time.Millisecond })
			e.record(eventWorkspace("root:org", "a", "uid-a"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
			require.Eventually(t, func() bool { return len(dropped.counted()) > 0 }, 10*time.Second, 10*time.Millisecond, "no drop counted")
			time.Sleep(200 * time.Millisecond)
			require.Equal(t, map[string]int{tc.reason: 1}, dropped.counted())
			require.Len(t, server.seen(), 1, "tried once")
		})
	}

	t.Run("workspace deleted", func(t *testing.T) {
		t.Parallel()
		dropped := &drops{}
		server := &eventServer{answer: echo}
		recordingTo(t, server, dropped, func(e *workspaceEvents, _ *eventRecorder) { // before the writers start
			e.record(eventWorkspace("root:org", "a", "uid-a"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
			e.forget("root:org|a")
		})
		require.Eventually(t, func() bool { return len(dropped.counted()) > 0 }, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, map[string]int{metrics.EventDropWorkspaceDeleted: 1}, dropped.counted())
		require.Empty(t, server.seen())
	})

	t.Run("queue full", func(t *testing.T) {
		t.Parallel()
		dropped := &drops{}
		e, recorder := newEventRecording(1000, nil, dropped.count) // not started: nothing is written
		for i := range maxQueuedEventWritesPerCluster + 1 {
			e.record(eventWorkspace("root:org", fmt.Sprintf("ws-%d", i), types.UID(fmt.Sprintf("uid-%d", i))), corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
		}
		require.Equal(t, map[string]int{metrics.EventDropQueueFull: 1}, dropped.counted())
		e.record(eventWorkspace("root:org", "ws-0", "uid-0"), corev1.EventTypeNormal, mount.ReasonMountNotReady, "x")
		require.Equal(t, map[string]int{metrics.EventDropQueueFull: 2}, dropped.counted())
		e.record(eventWorkspace("root:org", "ws-0", "uid-0"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "y")
		require.Equal(t, map[string]int{metrics.EventDropQueueFull: 2}, dropped.counted(), "a series queued is queued once")
		e.record(eventWorkspace("root:other", "ws-0", "uid-o"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
		require.Equal(t, map[string]int{metrics.EventDropQueueFull: 2}, dropped.counted(), "other clusters have their own queue")
		require.Len(t, recorder.clusters, 2)
	})

	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		dropped := &drops{}
		server := &eventServer{answer: echo}
		e, recorder := recordingTo(t, server, dropped, nil)
		recorder.Shutdown()
		e.record(eventWorkspace("root:org", "a", "uid-a"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
		time.Sleep(100 * time.Millisecond)
		require.Empty(t, server.seen())
		require.Empty(t, recorder.series)
	})
}

// TestEventsOfAHangingClusterHoldNoOther: while every event write in one
// cluster hangs (a webhook that never answers) and 50 of its Workspaces
// flap, another cluster's event is written at once; the hanging cluster
// never has more than maxEventWritesPerCluster writes in flight, and its
// breaker opens after breakerPolicy.failures of them timed out: the rest
// of its events are skipped and counted.
func TestEventsOfAHangingClusterHoldNoOther(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int32
	hangCounted := func(w http.ResponseWriter, r *http.Request, body []byte) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		hang(w, r, body)
	}
	server := &eventServer{answer: byCluster(map[string]func(http.ResponseWriter, *http.Request, []byte){"root:hostile": hangCounted}, echo)}
	dropped := &drops{}
	e, _ := recordingTo(t, server, dropped, func(_ *workspaceEvents, r *eventRecorder) { r.timeout = 2 * time.Second })
	var flapping sync.WaitGroup
	for i := range 50 {
		flapping.Add(1)
		go func() {
			defer flapping.Done()
			ws := eventWorkspace("root:hostile", fmt.Sprintf("ws-%d", i), types.UID(fmt.Sprintf("uid-h%d", i)))
			for j := range 4 {
				eventType := []string{corev1.EventTypeWarning, corev1.EventTypeNormal}[j%2]
				e.record(ws, eventType, mount.ReasonMountNotReady, fmt.Sprintf("flap %d", j))
			}
		}()
	}
	flapping.Wait()
	require.Eventually(t, func() bool { return inFlight.Load() == maxEventWritesPerCluster }, 5*time.Second, time.Millisecond)

	honest := eventWorkspace("root:honest", "a", "uid-a")
	start := time.Now()
	e.record(honest, corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
	require.Eventually(t, func() bool {
		for _, request := range server.seen() {
			if strings.HasPrefix(request.path, "/clusters/root:honest/") {
				return true
			}
		}
		return false
	}, time.Second, time.Millisecond, "the honest cluster's event waits for the hanging one")
	require.Less(t, time.Since(start), 2*time.Second, "written before the hanging writes timed out")
	// Counted by the server, a write that timed out ends a little after
	// the client gave up: count until the first does.
	require.Equal(t, int32(maxEventWritesPerCluster), most.Load())

	// The writes time out, the breaker opens, the queue is dropped: the
	// writes that took the place of the first to time out end too.
	require.Eventually(t, func() bool {
		counted := dropped.counted()
		return counted[metrics.EventDropUnreachable] >= maxEventWritesPerCluster && counted[metrics.EventDropClusterSuspended] > 0 && inFlight.Load() == 0
	}, 10*time.Second, 10*time.Millisecond)
	e.record(eventWorkspace("root:hostile", "late", "uid-late"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
	counted := dropped.counted()
	require.Equal(t, 101, counted[metrics.EventDropClusterSuspended]+counted[metrics.EventDropUnreachable], "every series: %v", counted)
	require.LessOrEqual(t, counted[metrics.EventDropUnreachable], 2*maxEventWritesPerCluster-1, "%v", counted)
	require.Len(t, counted, 2, "%v", counted)
}

// TestEventBreakerRecovers: a cluster whose writes fail is skipped once
// breakerPolicy.failures failed in a row; after the breaker's time one
// write probes it, alone; a probe that fails opens it for twice as long,
// one that succeeds closes it; a closed cluster with nothing to write is
// forgotten.
func TestEventBreakerRecovers(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	server := &eventServer{answer: func(w http.ResponseWriter, r *http.Request, body []byte) {
		if failing.Load() {
			answerStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError)(w, r, body)
			return
		}
		echo(w, r, body)
	}}
	dropped := &drops{}
	clock := newTestClock()
	e, recorder := recordingTo(t, server, dropped, func(_ *workspaceEvents, r *eventRecorder) { r.now = clock.now })
	n := 0
	record := func() {
		n++
		e.record(eventWorkspace("root:flaky", fmt.Sprintf("ws-%d", n), types.UID(fmt.Sprintf("uid-%d", n))), corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
	}
	requests := func(count int) {
		t.Helper()
		require.Eventually(t, func() bool { return len(server.seen()) == count }, 10*time.Second, time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		require.Len(t, server.seen(), count)
	}
	for range defaultBreakerPolicy.failures {
		record()
	}
	requests(defaultBreakerPolicy.failures)
	require.Eventually(t, func() bool { return dropped.counted()[metrics.EventDropRefused] == 3 }, 10*time.Second, time.Millisecond)
	record()
	requests(defaultBreakerPolicy.failures)
	require.Equal(t, map[string]int{metrics.EventDropRefused: 3, metrics.EventDropClusterSuspended: 1}, dropped.counted(), "skipped while open")

	clock.add(defaultBreakerPolicy.open)
	record() // the probe, which fails
	requests(4)
	require.Eventually(t, func() bool { return dropped.counted()[metrics.EventDropRefused] == 4 }, 10*time.Second, time.Millisecond)
	clock.add(defaultBreakerPolicy.open)
	record()
	requests(4)
	require.Equal(t, 2, dropped.counted()[metrics.EventDropClusterSuspended], "open for twice as long")

	clock.add(defaultBreakerPolicy.open)
	failing.Store(false)
	record() // the probe, which succeeds
	requests(5)
	for range 5 {
		record()
	}
	requests(10)
	require.Equal(t, map[string]int{metrics.EventDropRefused: 4, metrics.EventDropClusterSuspended: 2}, dropped.counted())
	require.Eventually(t, func() bool {
		recorder.lock.Lock()
		defer recorder.lock.Unlock()
		return len(recorder.clusters) == 0
	}, 10*time.Second, time.Millisecond, "a closed cluster with nothing to write is forgotten")
}

// TestEventBreakerPolicy: when the breaker opens, for how long, how many
// writes it lets through, and when it is forgotten.
func TestEventBreakerPolicy(t *testing.T) {
	t.Parallel()
	p := breakerPolicy{failures: 2, open: time.Minute, maxOpen: 3 * time.Minute, forget: 10 * time.Minute}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := start.Add
	var b eventBreaker
	require.Equal(t, 5, p.limit(&b, start, 5))
	require.True(t, p.forgettable(&b, start))
	require.False(t, p.failed(&b, start))
	require.Equal(t, 5, p.limit(&b, start, 5), "one failure")
	require.False(t, p.forgettable(&b, start))
	require.True(t, p.failed(&b, start), "opens")
	require.Equal(t, 0, p.limit(&b, at(59*time.Second), 5))
	require.False(t, p.failed(&b, at(time.Second)), "a write started before it opened changes nothing")
	require.Equal(t, at(time.Minute), b.openUntil)
	require.Equal(t, 1, p.limit(&b, at(time.Minute), 5), "probing")
	require.True(t, p.failed(&b, at(time.Minute)))
	require.Equal(t, at(3*time.Minute), b.openUntil, "twice as long")
	require.True(t, p.failed(&b, at(3*time.Minute)))
	require.Equal(t, at(6*time.Minute), b.openUntil, "at most maxOpen")
	require.False(t, p.forgettable(&b, at(5*time.Minute)), "open")
	require.False(t, p.forgettable(&b, at(12*time.Minute)), "failed 9 minutes ago")
	require.True(t, p.forgettable(&b, at(13*time.Minute)))
	p.succeeded(&b)
	require.Equal(t, eventBreaker{}, b)
	require.Equal(t, 5, p.limit(&b, at(6*time.Minute), 5))
}

// TestEventWritesPerClusterBounded: however many series of one cluster
// wait, at most maxEventWritesPerCluster are written at once, all in time;
// events recorded meanwhile, from many goroutines, never wait for a write.
func TestEventWritesPerClusterBounded(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	server := &eventServer{answer: func(w http.ResponseWriter, r *http.Request, body []byte) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		echo(w, r, body)
	}}
	dropped := &drops{}
	e, _ := recordingTo(t, server, dropped, nil)
	var recording sync.WaitGroup
	for g := range 8 {
		recording.Add(1)
		go func() {
			defer recording.Done()
			for i := range 5 {
				e.record(eventWorkspace("root:org", fmt.Sprintf("ws-%d-%d", g, i), types.UID(fmt.Sprintf("uid-%d-%d", g, i))), corev1.EventTypeWarning, mount.ReasonMountNotReady, "x")
			}
		}()
	}
	recording.Wait() // no record waited for a write: none was answered yet
	require.Eventually(t, func() bool { return inFlight.Load() == maxEventWritesPerCluster }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, int32(maxEventWritesPerCluster), most.Load())
	close(release)
	require.Eventually(t, func() bool { return len(server.seen()) == 40 }, 10*time.Second, time.Millisecond)
	require.Equal(t, int32(maxEventWritesPerCluster), most.Load())
	require.Empty(t, dropped.counted())
}
