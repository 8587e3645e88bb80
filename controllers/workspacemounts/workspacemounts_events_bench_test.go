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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kcpeventsv1 "github.com/kcp-dev/client-go/kubernetes/typed/events/v1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// BenchmarkHonestEventBesideHangingCluster: how long an honest cluster's
// event takes to be written while 50 Workspaces of another cluster, whose
// every event write hangs (a webhook that never answers), flap: each
// records four events (not ready then ready, twice: two series), then the
// honest Workspace one. honest-ms is the time from its record to its
// write reaching the shard, honestWaitLimit (15 s) when it never does;
// written is 1 when it did. It uses only newEventRecording and the
// recorder's start and shutdown, so it also runs against the controller
// of 74144e0 (client-go's broadcaster).
func BenchmarkHonestEventBesideHangingCluster(b *testing.B) {
	const honestWaitLimit = 15 * time.Second
	for b.Loop() {
		honestWritten := make(chan struct{}, 1)
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if strings.HasPrefix(r.URL.Path, "/clusters/root:hostile/") {
				<-r.Context().Done()
				return
			}
			select {
			case honestWritten <- struct{}{}:
			default:
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(json.RawMessage(body))
		}))
		client, err := kcpeventsv1.NewForConfig(&rest.Config{Host: server.URL, QPS: -1})
		if err != nil {
			b.Fatal(err)
		}
		dropped := &drops{}
		e, recorder := newEventRecording(1000, client.Cluster, dropped.count)
		ctx, cancel := context.WithCancel(context.Background())
		if err := recorder.StartRecordingToSinkWithContext(ctx); err != nil {
			b.Fatal(err)
		}
		for i := range 50 {
			ws := eventWorkspace("root:hostile", fmt.Sprintf("ws-%d", i), types.UID(fmt.Sprintf("uid-h%d", i)))
			for j := range 4 {
				e.record(ws, []string{corev1.EventTypeWarning, corev1.EventTypeNormal}[j%2], mount.ReasonMountNotReady, fmt.Sprintf("flap %d", j))
			}
		}
		time.Sleep(100 * time.Millisecond) // the hostile writes under way
		start := time.Now()
		e.record(eventWorkspace("root:honest", "a", "uid-a"), corev1.EventTypeWarning, mount.ReasonMountNotReady, "not ready")
		written := 0.0
		select {
		case <-honestWritten:
			written = 1
		case <-time.After(honestWaitLimit):
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "honest-ms")
		b.ReportMetric(written, "written")
		b.Logf("drops: %v", dropped.counted())
		cancel()
		recorder.Shutdown()
		server.CloseClientConnections()
		server.Close()
	}
}
