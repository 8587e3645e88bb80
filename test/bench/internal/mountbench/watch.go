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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

const (
	// watchTimeout bounds how long the watches may take to be established,
	// and then to receive the change.
	watchTimeout = 2 * time.Minute
	// flippedBackMount is the mount object whose change the watchers wait for.
	flippedBackMount = 0
	// maxFailures is how many failed watches are described.
	maxFailures = 5
)

// errWatchEnded marks a watch that ended before it received the change.
var errWatchEnded = errors.New("the watch ended before the change arrived")

// watchResult is what the watchers measured. Times are from T0, just before
// the write that set the mount object back to Connecting, unless said otherwise.
type watchResult struct {
	watchers int
	// resourceVersion is the list's from which every watch started.
	resourceVersion string
	// established is how long the watches took until each had its response
	// headers, from the first request.
	established time.Duration
	// written is when the write returned.
	written time.Duration
	// annotated is when the benchmark's own Workspace informer saw the
	// plugin's annotation show the change, or -1 if it did not.
	annotated time.Duration
	// received holds, sorted, when each watcher that got the change got it.
	received []time.Duration
	// failures are the first maxFailures reasons why watches ended early.
	failures []error
	// failed counts the watches that ended early.
	failed int
	proto  string
}

// watchEvent is a watch event whose object is decoded only when needed.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watcherReport is what a watcher tells the benchmark: that its watch is
// established, that it received the change, or that it failed.
type watcherReport struct {
	kind  watcherReportKind
	at    time.Time
	proto string
	err   error
}

type watcherReportKind int

const (
	watchEstablished watcherReportKind = iota
	watchReceived
	watchFailed
)

// watchTarget is the WorkspaceMount change the watchers wait for.
type watchTarget struct {
	name, cluster string
	phase         mount.Phase
}

func (t watchTarget) matches(o listedObject) bool {
	return o.Metadata.Name == t.name && o.Metadata.Annotations.Cluster == t.cluster && o.Status.Phase == string(t.phase)
}

// measureWatchers lists the WorkspaceMounts once, starts --watchers watches
// across all clusters from that list's resource version (as kubectl get -w
// does), each on a connection of its own, and waits until all are
// established. Then it sets one mount object back to Connecting and times
// until each watcher receives the MODIFIED event of its WorkspaceMount in
// phase Connecting. The watches are stopped before it returns.
func (b *bench) measureWatchers(ctx context.Context, t *tracker, cfg *rest.Config, list listCase) (*watchResult, error) {
	l, n := t.layout, b.opts.watchers
	listed, err := list.fetch(ctx, l, 0)
	if err != nil {
		return nil, err
	}
	res := &watchResult{watchers: n, resourceVersion: listed.resourceVersion, annotated: -1}
	watchURL := list.url + "?" + url.Values{
		"watch":               {"true"},
		"allowWatchBookmarks": {"true"},
		"resourceVersion":     {listed.resourceVersion},
	}.Encode()
	target := watchTarget{name: mountName(flippedBackMount), cluster: l.cluster(flippedBackMount).String(), phase: mount.PhaseConnecting}

	ctx, cancel := context.WithCancel(ctx)
	var watchers sync.WaitGroup
	defer func() {
		cancel()
		watchers.Wait()
	}()
	// Every watcher reports at most twice: established, then received or failed.
	reports := make(chan watcherReport, 2*n)
	logf("starting %d watches of the virtual workspace at resource version %s", n, listed.resourceVersion)
	began := time.Now()
	for range n {
		client, err := newHTTPClient(cfg, http2)
		if err != nil {
			return nil, err
		}
		watchers.Go(func() {
			defer client.CloseIdleConnections()
			watchFor(ctx, client, watchURL, target, reports)
		})
	}

	timeout := time.NewTimer(watchTimeout)
	defer timeout.Stop()
	for established := 0; established < n; {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timeout.C:
			return nil, fmt.Errorf("%d of %d watches established within %s", established, n, watchTimeout)
		case r := <-reports:
			switch r.kind {
			case watchEstablished:
				established++
				res.proto = r.proto
			case watchFailed:
				return nil, fmt.Errorf("starting a watch: %w", r.err)
			case watchReceived:
				return nil, fmt.Errorf("a watch received %s|%s in phase %s before it was written", target.cluster, target.name, target.phase)
			}
		}
	}
	res.established = time.Since(began)
	logf("%d watches established in %s; setting mount object %s back to %s", n, formatDuration(res.established), target.name, target.phase)

	t.begin(flippedBackStage)
	t0 := time.Now()
	if err := b.clients.setMountStatus(ctx, l, flippedBackMount, string(target.phase), afterURL(flippedBackMount)); err != nil {
		return nil, err
	}
	res.written = time.Since(t0)
	timeout.Reset(watchTimeout)
	for len(res.received)+res.failed < n {
		select {
		case <-ctx.Done():
			return res, context.Cause(ctx)
		case <-timeout.C:
			return res, fmt.Errorf("%d of %d watchers received the change within %s", len(res.received), n, watchTimeout)
		case r := <-reports:
			switch r.kind {
			case watchReceived:
				res.received = append(res.received, r.at.Sub(t0))
			case watchFailed:
				res.failed++
				if len(res.failures) < maxFailures {
					res.failures = append(res.failures, r.err)
				}
			case watchEstablished:
			}
		}
	}
	slices.Sort(res.received)
	if at, ok := t.pluginShownAt(flippedBackMount); ok {
		res.annotated = at.Sub(t0)
	}
	if res.failed > 0 {
		return res, fmt.Errorf("%d of %d watches ended before the change arrived", res.failed, n)
	}
	return res, nil
}

// watchFor watches at watchURL until ctx is done. It reports to reports
// when the watch is established, then when it receives the MODIFIED event of
// target or fails, whichever comes first; after the event, it reads and
// discards the rest of the watch until ctx is done, so that every watch stays
// open until all are stopped. A watch ended by ctx is no failure.
func watchFor(ctx context.Context, client *http.Client, watchURL string, target watchTarget, reports chan<- watcherReport) {
	failed := func(err error) {
		if ctx.Err() == nil {
			reports <- watcherReport{kind: watchFailed, err: err}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, watchURL, http.NoBody)
	if err != nil {
		failed(err)
		return
	}
	req.Header.Set("Accept", acceptJSON)
	resp, err := client.Do(req)
	if err != nil {
		failed(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		message, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		failed(fmt.Errorf("GET %s: %s: %s", watchURL, resp.Status, bytes.TrimSpace(message)))
		return
	}
	reports <- watcherReport{kind: watchEstablished, at: time.Now(), proto: resp.Proto}

	decoder := json.NewDecoder(resp.Body)
	for {
		var event watchEvent
		if err := decoder.Decode(&event); err != nil {
			failed(fmt.Errorf("%w: %w", errWatchEnded, err))
			return
		}
		at := time.Now()
		switch event.Type {
		case watch.Error:
			var status metav1.Status
			_ = json.Unmarshal(event.Object, &status)
			failed(fmt.Errorf("%w: ERROR event: %s", errWatchEnded, status.Message))
			return
		case watch.Modified:
			var object listedObject
			if err := json.Unmarshal(event.Object, &object); err != nil {
				failed(fmt.Errorf("decoding a watch event: %w", err))
				return
			}
			if target.matches(object) {
				reports <- watcherReport{kind: watchReceived, at: at}
				_, _ = io.Copy(io.Discard, resp.Body)
				return
			}
		case watch.Added, watch.Deleted, watch.Bookmark:
		}
	}
}
