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

package mountbench

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// listWarmUps is the number of untimed lists before the timed ones of each kind.
	listWarmUps = 3
	// vwReadyTimeout bounds how long the virtual workspace may take to serve
	// every benchmark mount as Ready after the plugin's annotations showed it.
	vwReadyTimeout = 2 * time.Minute

	// workspaceMountsAtWildcard is the WorkspaceMounts of every cluster, below
	// the virtual workspace's URL.
	workspaceMountsAtWildcard = "/services/workspacemounts/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts"

	acceptJSON = "application/json"
	// acceptTable is a Table, as meta.k8s.io/v1.
	acceptTable = "application/json;as=Table;v=v1;g=meta.k8s.io"
	// acceptKubectlTable is what kubectl v1.32 get asks for when it prints
	// a table (the default output, -o wide); -o json, yaml and name ask for
	// acceptJSON. Both with limit=kubectlChunkSize, following continue.
	acceptKubectlTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	// kubectlChunkSize is kubectl's --chunk-size default.
	kubectlChunkSize = 500
)

// virtualResult is what the virtual workspace benchmark measured.
type virtualResult struct {
	workspaces int
	lists      []listStats
	watch      *watchResult
	// memory is the plugin's after the phase.
	memory    framework.Memory
	memoryErr error
	// heap is the plugin's live heap after a GC once the virtual workspace
	// served every mount, before the lists (pluginHeap).
	heap    uint64
	heapErr error
}

// listCase is one list across all clusters that is timed.
type listCase struct {
	name   string
	client *http.Client
	url    string
	accept string
	// gzip asks for a compressed response, as client-go and kubectl do by
	// default; the API servers compress bodies above 128 KiB.
	gzip bool
	// proto is the protocol the client must speak, http2 or http1.
	proto string
	// pageSize, if set, lists as kubectl does: limit=pageSize, then every
	// page its continue token names until one has none; the timings are
	// the whole list's (headers: the first page's).
	pageSize int
}

// listedObject is the little of a listed object (or of a Table row's object,
// or of a watch event's object) that the benchmark reads.
type listedObject struct {
	Metadata struct {
		Name        string `json:"name"`
		Annotations struct {
			// Cluster is the logical cluster of the object (logicalcluster.AnnotationKey).
			Cluster string `json:"kcp.io/cluster"`
		} `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase string `json:"phase"`
		// Shard is the shard holding the Workspace (sharded mode).
		Shard string `json:"shard"`
	} `json:"status"`
}

// objectList is the little of a list, or of a meta.k8s.io Table (whose rows
// carry the objects' metadata), that the benchmark reads.
type objectList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []listedObject `json:"items"`
	Rows  []struct {
		Object listedObject `json:"object"`
	} `json:"rows"`
}

// listResponse is one list's response and timings, all from the request.
type listResponse struct {
	// items are all the objects listed; benchItems those of this benchmark,
	// of which ready are in phase Ready, and wrongShard (with shards in the
	// layout) those whose status names another shard than theirs.
	items, benchItems, ready, wrongShard int
	resourceVersion                      string
	// bytes is the size of the (uncompressed) body, wire its size as sent.
	bytes, wire     int64
	encoding, proto string
	// headers is when the response headers arrived, body when the body was
	// read, total when it was decoded too; decode is total-body.
	headers, body, total, decode time.Duration
}

// listStats are the timings of the timed lists of one listCase, each sorted
// once all are recorded.
type listStats struct {
	name string
	// last is the last response.
	last                         listResponse
	headers, body, total, decode []time.Duration
}

// measureVirtual lists the WorkspaceMounts across all clusters from the
// plugin's virtual workspace, and the Workspaces from kcp directly, then
// times how long one change takes to reach --watchers watches of the virtual
// workspace. t must show every mount object Ready for the plugin.
func (b *bench) measureVirtual(ctx context.Context, t *tracker) (*virtualResult, error) {
	res := &virtualResult{workspaces: b.opts.workspaces}
	defer func() { res.memory, res.memoryErr = b.plugin.Memory.Sample() }()

	vwCfg, err := b.virtualWorkspaceConfig()
	if err != nil {
		return nil, err
	}
	vwClient, err := newHTTPClient(vwCfg, http2)
	if err != nil {
		return nil, err
	}
	defer vwClient.CloseIdleConnections()
	vwHTTP1Client, err := newHTTPClient(vwCfg, http1)
	if err != nil {
		return nil, err
	}
	defer vwHTTP1Client.CloseIdleConnections()
	kcpClient, err := newHTTPClient(b.shardCfg, http2)
	if err != nil {
		return nil, err
	}
	defer kcpClient.CloseIdleConnections()
	identity, err := clients.TenancyIdentity(ctx, b.shardCfg)
	if err != nil {
		return nil, err
	}

	vwURL := b.plugin.VirtualWorkspaceURL + workspaceMountsAtWildcard
	workspacesURL := b.kcp.BaseURL + logicalcluster.Wildcard.RequestPath() + "/apis/" +
		tenancyv1alpha1.SchemeGroupVersion.String() + "/workspaces:" + identity
	l := t.layout
	vwList := listCase{name: "virtual workspace", client: vwClient, url: vwURL, accept: acceptJSON, proto: http2}
	if err := awaitVirtualWorkspace(ctx, vwList, l); err != nil {
		return nil, err
	}
	res.heap, res.heapErr = pluginHeap(ctx, b.plugin.MetricsURL)

	cases := []listCase{
		{name: "virtual workspace (JSON)", client: vwClient, url: vwURL, accept: acceptJSON, proto: http2},
		{name: "virtual workspace (JSON, gzip)", client: vwClient, url: vwURL, accept: acceptJSON, gzip: true, proto: http2},
		{name: "virtual workspace (JSON, HTTP/1.1)", client: vwHTTP1Client, url: vwURL, accept: acceptJSON, proto: http1},
		{name: "virtual workspace (Table)", client: vwClient, url: vwURL, accept: acceptTable, proto: http2},
		{name: "virtual workspace (Table, gzip)", client: vwClient, url: vwURL, accept: acceptTable, gzip: true, proto: http2},
		{name: "virtual workspace (kubectl get)", client: vwClient, url: vwURL, accept: acceptKubectlTable, gzip: true, proto: http2, pageSize: kubectlChunkSize},
		{name: "virtual workspace (kubectl -o json)", client: vwClient, url: vwURL, accept: acceptJSON, gzip: true, proto: http2, pageSize: kubectlChunkSize},
		{name: "kcp Workspaces (direct)", client: kcpClient, url: workspacesURL, accept: acceptJSON, proto: http2},
		{name: "kcp Workspaces (direct, gzip)", client: kcpClient, url: workspacesURL, accept: acceptJSON, gzip: true, proto: http2},
	}
	if res.lists, err = measureLists(ctx, cases, l, b.opts.listIterations); err != nil {
		return res, err
	}

	res.watch, err = b.measureWatchers(ctx, t, vwCfg, vwList)
	return res, err
}

// virtualWorkspaceConfig is how to reach the plugin's virtual workspace:
// its self-signed certificate as the CA, and kcp-admin's bearer token (the
// user of the root context of kcp's admin.kubeconfig), which kcp reviews.
func (b *bench) virtualWorkspaceConfig() (*rest.Config, error) {
	admin, err := b.kcp.Config("root")
	if err != nil {
		return nil, err
	}
	if admin.BearerToken == "" {
		return nil, fmt.Errorf("the root context of %s has no bearer token", b.kcp.KubeconfigPath)
	}
	return &rest.Config{
		Host:            b.plugin.VirtualWorkspaceURL,
		BearerToken:     admin.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: b.plugin.CAFile},
	}, nil
}

// The protocols of the clients, as http.Response.Proto names them.
const (
	http2 = "HTTP/2.0"
	http1 = "HTTP/1.1"
)

// newHTTPClient returns a plain net/http client with its own connections,
// with cfg's TLS configuration and bearer token, speaking proto (http2 or
// http1). It leaves compression to the caller: it neither asks for gzip nor
// decompresses.
func newHTTPClient(cfg *rest.Config, proto string) (*http.Client, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	t := &http.Transport{
		TLSClientConfig:   tlsConfig,
		ForceAttemptHTTP2: proto == http2,
		// Else the transport asks for gzip itself and hides what came over the wire.
		DisableCompression: true,
	}
	if proto != http2 {
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // no HTTP/2
	}
	var rt http.RoundTripper = t
	if cfg.BearerToken != "" {
		rt = transport.NewBearerAuthRoundTripper(cfg.BearerToken, rt)
	}
	return &http.Client{Transport: rt}, nil
}

// awaitVirtualWorkspace waits until the virtual workspace, whose cache may
// lag a little behind the benchmark's Workspace informer, serves every
// benchmark mount in phase Ready.
func awaitVirtualWorkspace(ctx context.Context, c listCase, l layout) error {
	logf("waiting for the virtual workspace to serve the %d WorkspaceMounts as Ready", l.mounts)
	deadline := time.Now().Add(vwReadyTimeout)
	for {
		r, err := c.fetch(ctx, l, 0)
		if err == nil && r.ready == l.mounts {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("%d of the %d benchmark WorkspaceMounts, %d Ready", r.benchItems, l.mounts, r.ready)
			}
			return fmt.Errorf("the virtual workspace did not serve every benchmark WorkspaceMount as Ready within %s: %w", vwReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(benchsetup.PollInterval):
		}
	}
}

// measureLists times iterations lists of each case after listWarmUps
// untimed rounds, one list after the other. The cases take turns, so that
// they share the ups and downs of the machine's load. Each list must hold
// every mounted Workspace of the benchmark.
func measureLists(ctx context.Context, cases []listCase, l layout, iterations int) ([]listStats, error) {
	logf("timing %d lists across all clusters of each of %d kinds, taking turns", iterations, len(cases))
	var round atomic.Int64
	defer every(progressInterval, func() {
		logf("timing lists: round %d of %d", round.Load(), listWarmUps+iterations)
	})()
	stats := make([]listStats, len(cases))
	sizeHints := make([]int64, len(cases))
	for i := range listWarmUps + iterations {
		round.Store(int64(i + 1))
		for j, c := range cases {
			r, err := c.fetch(ctx, l, sizeHints[j])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			if r.proto != c.proto {
				return nil, fmt.Errorf("%s: spoke %s, not %s", c.name, r.proto, c.proto)
			}
			if r.benchItems != l.mounts {
				return nil, fmt.Errorf("%s: %d of the %d benchmark mounts listed (%d items)", c.name, r.benchItems, l.mounts, r.items)
			}
			if r.wrongShard > 0 {
				return nil, fmt.Errorf("%s: %d of the %d benchmark mounts listed with another status.shard than theirs", c.name, r.wrongShard, l.mounts)
			}
			sizeHints[j] = r.bytes
			if i >= listWarmUps {
				stats[j].add(r)
			}
		}
	}
	for j := range stats {
		stats[j].name = cases[j].name
		for _, durations := range [][]time.Duration{stats[j].headers, stats[j].body, stats[j].total, stats[j].decode} {
			slices.Sort(durations)
		}
	}
	return stats, nil
}

// add records a timed list.
func (s *listStats) add(r listResponse) {
	s.last = r
	s.headers = append(s.headers, r.headers)
	s.body = append(s.body, r.body)
	s.total = append(s.total, r.total)
	s.decode = append(s.decode, r.decode)
}

// fetch lists once (every page, with pageSize): it reads each whole body
// (gunzipping it if compressed), decodes it into an objectList and counts
// the benchmark's mounts in all. sizeHint is the expected body size (of all
// pages), to read it without growing a buffer.
func (c listCase) fetch(ctx context.Context, l layout, sizeHint int64) (listResponse, error) {
	began := time.Now()
	var (
		r       listResponse
		objects []listedObject
		buf     bytes.Buffer
	)
	continueToken := ""
	for page := 0; ; page++ {
		u := c.url
		if c.pageSize > 0 {
			query := url.Values{"limit": {strconv.Itoa(c.pageSize)}}
			if continueToken != "" {
				query.Set("continue", continueToken)
			}
			u += "?" + query.Encode()
		}
		buf.Reset()
		if page == 0 {
			buf.Grow(int(sizeHint) + bytes.MinRead)
		}
		p, decodeBegan, err := c.fetchPage(ctx, u, &buf)
		if err != nil {
			return listResponse{}, err
		}
		if page == 0 {
			r.headers, r.encoding, r.proto = p.headers.Sub(began), p.encoding, p.proto
			r.resourceVersion = p.list.Metadata.ResourceVersion
		}
		r.bytes += p.bytes
		r.wire += p.wire
		r.decode += time.Since(decodeBegan)
		objects = append(objects, p.list.Items...)
		for _, row := range p.list.Rows {
			objects = append(objects, row.Object)
		}
		if continueToken = p.list.Metadata.Continue; c.pageSize == 0 || continueToken == "" {
			break
		}
	}
	r.items = len(objects)
	r.benchItems, r.ready, r.wrongShard = l.count(objects)
	r.total = time.Since(began)
	r.body = r.total - r.decode
	return r, nil
}

// fetchedPage is one response of a list, decoded.
type fetchedPage struct {
	list            objectList
	headers         time.Time
	encoding, proto string
	bytes, wire     int64
}

// fetchPage gets one page into buf and decodes it; decodeBegan is when the
// body was read.
func (c listCase) fetchPage(ctx context.Context, u string, buf *bytes.Buffer) (fetchedPage, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return fetchedPage{}, time.Time{}, err
	}
	req.Header.Set("Accept", c.accept)
	if c.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fetchedPage{}, time.Time{}, err
	}
	defer resp.Body.Close()
	p := fetchedPage{headers: time.Now(), encoding: resp.Header.Get("Content-Encoding"), proto: resp.Proto}
	if resp.StatusCode != http.StatusOK {
		message, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fetchedPage{}, time.Time{}, fmt.Errorf("GET %s: %s: %s", u, resp.Status, bytes.TrimSpace(message))
	}

	wire := &countingReader{reader: resp.Body}
	var body io.Reader = wire
	if p.encoding == "gzip" {
		gz, err := gzip.NewReader(wire)
		if err != nil {
			return fetchedPage{}, time.Time{}, fmt.Errorf("GET %s: %w", u, err)
		}
		body = gz
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return fetchedPage{}, time.Time{}, fmt.Errorf("GET %s: reading the body: %w", u, err)
	}
	decodeBegan := time.Now()
	p.bytes, p.wire = int64(buf.Len()), wire.count
	if err := json.Unmarshal(buf.Bytes(), &p.list); err != nil {
		return fetchedPage{}, time.Time{}, fmt.Errorf("GET %s: decoding: %w", u, err)
	}
	return p, decodeBegan, nil
}

// count returns how many of objects are the benchmark's mounted Workspaces
// (or their WorkspaceMounts), each counted once, how many of those are in
// phase Ready, and, with shards in the layout, how many of those that have a
// status (a Table's rows have only metadata) name another shard than theirs.
func (l layout) count(objects []listedObject) (bench, ready, wrongShard int) {
	seen := make([]bool, l.mounts)
	for _, o := range objects {
		i, ok := mountIndex(o.Metadata.Name)
		if !ok || i >= l.mounts || seen[i] || o.Metadata.Annotations.Cluster != l.cluster(i).String() {
			continue
		}
		seen[i] = true
		bench++
		if o.Status.Phase == string(mount.PhaseReady) {
			ready++
		}
		if len(l.shards) > 0 && o.Status.Phase != "" && o.Status.Shard != l.shard(i) {
			wrongShard++
		}
	}
	return bench, ready, wrongShard
}

// countingReader counts the bytes read through it.
type countingReader struct {
	reader io.Reader
	count  int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.reader.Read(p)
	r.count += int64(n)
	return n, err
}
