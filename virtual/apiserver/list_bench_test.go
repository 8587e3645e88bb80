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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Accept headers of kubectl v1.32 (measured with -v=8 and at the wire, see
// test/bench/virtual/README.md): kubectl get (any table output), and -o json|yaml|name.
const (
	kubectlTableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	kubectlJSONAccept  = "application/json"
	// kubectlChunkSize is kubectl's --chunk-size default: it sends limit=500
	// and follows continue until the list is done.
	kubectlChunkSize = 500
)

// listBody is what the benchmark's client decodes of a list: the fields
// test/bench/virtual decodes, of a WorkspaceMountList or a Table of them.
type listBody struct {
	Metadata struct {
		Continue        string `json:"continue"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []benchItem `json:"items"`
	Rows  []struct {
		Cells  []any     `json:"cells"`
		Object benchItem `json:"object"`
	} `json:"rows"`
}

type benchItem struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// BenchmarkListHTTPS lists n WorkspaceMounts at * through the whole server
// (TLS, HTTP/2, the generic handler chain with authentication and the
// authorizer, the storage, the encoders, gzip) with a client that reads and
// decodes every body: one list per op, or, for the kubectl rows, every page
// of kubectl's chunk size until no continue. Client and server share the
// process: B/op and allocs/op are both sides'.
func BenchmarkListHTTPS(b *testing.B) {
	const n = 10000
	ts := startServerForAlice(b, testStore(b, benchWorkspaces(n)...))
	alice := ts.client(b, "alice")
	config := alice.Transport.(*http.Transport).TLSClientConfig
	listURL := clusterURL(ts, "*", resourcePath)

	for _, tc := range []struct {
		name     string
		accept   string
		gzip     bool
		http1    bool
		pageSize int
	}{
		{name: "json", accept: kubectlJSONAccept},
		{name: "json-gzip", accept: kubectlJSONAccept, gzip: true},
		{name: "json-http1", accept: kubectlJSONAccept, http1: true},
		{name: "table", accept: "application/json;as=Table;v=v1;g=meta.k8s.io"},
		{name: "table-gzip", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", gzip: true},
		{name: "kubectl-table", accept: kubectlTableAccept, gzip: true, pageSize: kubectlChunkSize},
		{name: "kubectl-json", accept: kubectlJSONAccept, gzip: true, pageSize: kubectlChunkSize},
	} {
		b.Run(fmt.Sprintf("%s/%d", tc.name, n), func(b *testing.B) {
			transport := &http.Transport{TLSClientConfig: config.Clone(), ForceAttemptHTTP2: !tc.http1}
			if tc.http1 {
				transport.TLSClientConfig.NextProtos = []string{"http/1.1"}
			}
			client := &http.Client{Transport: transport, Timeout: time.Minute}
			b.Cleanup(transport.CloseIdleConnections)
			var bodyBytes int
			list := func() {
				items, continueToken := 0, ""
				for {
					u := listURL
					if tc.pageSize > 0 {
						u += fmt.Sprintf("?limit=%d", tc.pageSize)
						if continueToken != "" {
							u += "&continue=" + url.QueryEscape(continueToken)
						}
					}
					page, size := getList(b, client, u, tc.accept, tc.gzip, !tc.http1)
					bodyBytes += size
					items += len(page.Items) + len(page.Rows)
					if continueToken = page.Metadata.Continue; continueToken == "" {
						break
					}
				}
				if items != n {
					b.Fatalf("listed %d WorkspaceMounts, want %d", items, n)
				}
			}
			list() // the authorizer's answers cached, the connection up
			bodyBytes = 0
			b.ReportAllocs()
			b.ResetTimer()
			cpuBefore := processCPU(b)
			for b.Loop() {
				list()
			}
			// The process's CPU time (server and client), which the load of a
			// shared machine inflates less than the wall clock's ns/op.
			b.ReportMetric(float64((processCPU(b)-cpuBefore).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(bodyBytes)/float64(b.N), "body-B/op")
		})
	}
}

// startServerForAlice starts the server over store, where every cluster
// exists and alice, only she, may see each.
func startServerForAlice(tb testing.TB, store *wsmregistry.Store) *testServer {
	tb.Helper()
	return startServer(tb, func(_ *testServer, _ *Options, deps *Dependencies) {
		deps.Store = store
		allowed := func(_ context.Context, _ logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			return spec.User == "alice", nil
		}
		deps.Authorizer = authorization.New(authorization.NewReviews(allowed, authorization.DefaultReviewOptions(), nil), func(logicalcluster.Name) bool { return true })
	})
}

// processCPU is the CPU time, user and system, the process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// benchWorkspaces are n mounted Workspaces, Ready, over n/100 clusters.
func benchWorkspaces(n int) []*tenancyv1alpha1.Workspace {
	workspaces := make([]*tenancyv1alpha1.Workspace, 0, n)
	clusters := n / 100
	for i := range n {
		ws := mountedWorkspace(fmt.Sprintf("c%03d", i%clusters), fmt.Sprintf("mount-%05d", i), mount.PhaseReady)
		ws.UID = types.UID(fmt.Sprintf("2a5e2b6c-0000-4000-8000-%012d", i))
		ws.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		ws.Annotations[mount.StatusAnnotationKey] = mount.Status{
			Phase: mount.PhaseReady, Ready: true, URL: fmt.Sprintf("https://after.example/%d", i), Reason: "MountReady",
			Message: "KubeCluster is Ready", MountRef: mount.Reference(ws.Spec.Mount.Reference),
			LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)),
		}.Encode()
		ws.Status.Phase = "Ready"
		workspaces = append(workspaces, ws)
	}
	return workspaces
}

// BenchmarkListHTTPSReviewsExpire lists 10,000 WorkspaceMounts at * (100
// clusters) one list after the other while the authorizer's answers expire
// every AllowTTL (here 1s) and each review takes kcp reviewLatency, and
// reports the slowest list and the 90th percentile besides the mean: the p99
// spikes of bench-virtual, in miniature.
func BenchmarkListHTTPSReviewsExpire(b *testing.B) {
	const reviewLatency = 5 * time.Millisecond
	store := testStore(b, benchWorkspaces(10000)...)
	ts := startServer(b, func(_ *testServer, _ *Options, deps *Dependencies) {
		deps.Store = store
		slow := func(ctx context.Context, _ logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			select {
			case <-time.After(reviewLatency):
			case <-ctx.Done():
				return false, ctx.Err()
			}
			return spec.User == "alice", nil
		}
		opts := authorization.DefaultReviewOptions()
		opts.AllowTTL = time.Second
		deps.Authorizer = authorization.New(authorization.NewReviews(slow, opts, nil), func(logicalcluster.Name) bool { return true })
	})
	client := ts.client(b, "alice")
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	listURL := clusterURL(ts, "*", resourcePath)
	getList(b, client, listURL, kubectlJSONAccept, false, true)
	var durations []time.Duration
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		if page, _ := getList(b, client, listURL, kubectlJSONAccept, false, true); len(page.Items) != 10000 {
			b.Fatalf("listed %d", len(page.Items))
		}
		durations = append(durations, time.Since(began))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(durations[len(durations)-1].Microseconds())/1000, "max-ms")
}

// getList gets one list and decodes it; size is the decoded body's length.
func getList(b *testing.B, client *http.Client, u, accept string, gzip, http2 bool) (listBody, int) {
	b.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, http.NoBody)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	if !gzip {
		// Else the transport asks for gzip itself and gunzips.
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %s", u, resp.StatusCode, body)
	}
	if http2 != (resp.ProtoMajor == 2) {
		b.Fatalf("%s: served over %s", u, resp.Proto)
	}
	if gzip && len(body) > 128<<10 && !resp.Uncompressed {
		b.Fatalf("%s: a body of %d bytes not compressed", u, len(body))
	}
	var page listBody
	if err := json.Unmarshal(body, &page); err != nil {
		b.Fatal(err)
	}
	return page, len(body)
}
