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

package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// fanOutWatchers is how many watches at * the fan-out benchmark holds, as
// test/bench/virtual's --watchers does.
const fanOutWatchers = 100

// BenchmarkWatchFanOutHTTPS flips one of 10,000 WorkspaceMounts between
// Ready and Connecting through the store's Workspace informer, each op one
// flip, while 100 watches at * (each on its own HTTP/2 connection, from a
// list's resource version, as kubectl get -w) read the events through the
// whole server: p50-ms and p99-ms are the flips' times from the informer's
// event until the last watcher has read the MODIFIED event off its
// connection; cpu-ms/op is the process's CPU time per
// flip, server and watchers. "history" gives the flipping mount a full
// history (mount.MaxTransitions), "none" none.
func BenchmarkWatchFanOutHTTPS(b *testing.B) {
	const n = 10000
	for _, history := range []bool{false, true} {
		name := "none"
		if history {
			name = "history"
		}
		b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
			workspaces := benchWorkspaces(n)
			flipping := [2]*tenancyv1alpha1.Workspace{workspaces[0].DeepCopy(), workspaces[0].DeepCopy()}
			var phases [2]string
			for i, status := range flipStatuses(workspaces[0], history) {
				flipping[i].Annotations[mount.StatusAnnotationKey] = status.Encode()
				phases[i] = string(status.Phase)
			}
			store, source := testStoreWatching(b, workspaces...)
			ts := startServerForAlice(b, store)
			config := ts.client(b, "alice").Transport.(*http.Transport).TLSClientConfig
			watchURL := clusterURL(ts, "*", resourcePath) + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + listVersion(b, ts)

			ctx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			var want atomic.Value // the phase the flip sets
			want.Store("")
			arrivals := make(chan time.Time, fanOutWatchers)
			for range fanOutWatchers {
				transport := &http.Transport{TLSClientConfig: config.Clone(), ForceAttemptHTTP2: true}
				b.Cleanup(transport.CloseIdleConnections)
				body := startWatch(ctx, b, &http.Client{Transport: transport}, watchURL)
				go readFlips(body, flipping[0].Name, &want, arrivals)
			}

			flip := func(i int) time.Duration {
				ws := flipping[i%2].DeepCopy()
				ws.ResourceVersion = fmt.Sprint(1000 + i)
				want.Store(phases[i%2])
				began := time.Now()
				source.Modify(ws)
				var last time.Time
				for range fanOutWatchers {
					select {
					case at := <-arrivals:
						last = at
					case <-time.After(30 * time.Second):
						b.Fatalf("flip %d: not every watcher got its event", i)
					}
				}
				return last.Sub(began)
			}
			flip(0) // every watcher past its start
			durations := make([]time.Duration, 0, 1000)
			b.ResetTimer()
			cpuBefore := processCPU(b)
			for i := 1; b.Loop(); i++ {
				durations = append(durations, flip(i))
			}
			b.StopTimer()
			// The process's CPU time (server and watchers), which the load of
			// a shared machine inflates less than the latencies.
			b.ReportMetric(float64((processCPU(b)-cpuBefore).Microseconds())/1000/float64(len(durations)), "cpu-ms/op")
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// flipStatuses are ws's status Connecting and Ready, each with a full
// history if history, else none.
func flipStatuses(ws *tenancyv1alpha1.Workspace, history bool) [2]mount.Status {
	ready := mount.CurrentStatus(ws.Annotations)
	connecting := ready
	connecting.Phase, connecting.Ready, connecting.Reason = mount.PhaseConnecting, false, "Connecting"
	if !history {
		return [2]mount.Status{connecting, ready}
	}
	states := [2]mount.Status{connecting, ready}
	at := ready.LastTransitionTime.Time
	var previous *mount.Status
	for i := range 2 * mount.MaxTransitions {
		at = at.Add(time.Minute)
		next := states[i%2].WithHistory(previous, metav1.NewTime(at))
		previous = &next
		states[i%2] = next
	}
	if len(states[0].History) != mount.MaxTransitions-1 || len(states[1].History) != mount.MaxTransitions-1 {
		panic("the flipping statuses' histories are not full")
	}
	return states
}

// listVersion is the resource version of a list at *.
func listVersion(b *testing.B, ts *testServer) string {
	b.Helper()
	page, _ := getList(b, ts.client(b, "alice"), clusterURL(ts, "*", resourcePath)+"?limit=1", kubectlJSONAccept, false, false)
	return page.Metadata.ResourceVersion
}

// startWatch opens a watch and returns its body once its headers came.
func startWatch(ctx context.Context, b *testing.B, client *http.Client, u string) io.ReadCloser {
	b.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", kubectlJSONAccept)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		b.Fatalf("watch: %d over %s", resp.StatusCode, resp.Proto)
	}
	b.Cleanup(func() { _ = resp.Body.Close() })
	return resp.Body
}

// readFlips reads a watch's events until it ends, sending when each one
// that modifies name into the wanted phase was read. It tells them by their
// bytes, which the server writes in the order of the fields of a
// WorkspaceMount, rather than decode them: a client decodes on its own
// machine, not on the server's cores.
func readFlips(body io.Reader, name string, want *atomic.Value, arrivals chan<- time.Time) {
	events := bufio.NewReaderSize(body, 64<<10)
	modified := []byte(`{"type":"MODIFIED","object":{"kind":"WorkspaceMount",`)
	named := []byte(`"metadata":{"name":"` + name + `",`)
	for {
		line, err := events.ReadSlice('\n')
		if err != nil {
			return
		}
		at := time.Now()
		if bytes.HasPrefix(line, modified) && bytes.Contains(line, named) &&
			bytes.Contains(line, []byte(`"status":{"phase":"`+want.Load().(string)+`",`)) {
			arrivals <- at
		}
	}
}
