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

// Package kcpcontact tells when kcp last answered this process, any client's answer below 500 or a
// probe's, and logs when it stops and starts answering.
package kcpcontact

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

// Tracker remembers the last answer of kcp, or of one shard.
type Tracker struct {
	last  atomic.Int64 // unix nanoseconds; 0 until the first answer
	now   func() time.Time
	gauge interface{ Set(float64) }
	what  string
}

func New() *Tracker {
	return &Tracker{now: time.Now, gauge: metrics.KCPLastContact, what: "kcp"}
}

func NewForShard(shard string) *Tracker {
	return &Tracker{now: time.Now, gauge: metrics.ShardLastContact.WithLabelValues(shard), what: "the shard"}
}

// LastContact is when kcp last answered; the zero time if it never did.
func (t *Tracker) LastContact() time.Time {
	if last := t.last.Load(); last != 0 {
		return time.Unix(0, last)
	}
	return time.Time{}
}

func (t *Tracker) Since() (time.Duration, bool) {
	last := t.LastContact()
	if last.IsZero() {
		return 0, false
	}
	return t.now().Sub(last), true
}

func (t *Tracker) observe(at time.Time) {
	t.last.Store(at.UnixNano())
	t.gauge.Set(float64(at.UnixNano()) / 1e9)
}

// Wrap records every answer that goes through rt, for rest.Config.Wrap.
func (t *Tracker) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode < http.StatusInternalServerError {
			t.observe(t.now())
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Run probes kcp whenever it has not answered for interval, until ctx is done.
func (t *Tracker) Run(ctx context.Context, interval time.Duration, probe func(context.Context) error) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var downSince time.Time // when a probe first failed, zero while kcp answers
	for {
		if since, ok := t.Since(); !ok || since >= interval {
			probeCtx, cancel := context.WithTimeout(ctx, interval)
			err := probe(probeCtx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			switch {
			case err == nil:
				t.observe(t.now())
			case downSince.IsZero():
				downSince = t.now()
				last := "never"
				if since, ok := t.Since(); ok {
					last = since.Round(time.Second).String() + " ago"
				}
				logger.Error(err, t.what+" does not answer: the virtual workspace serves what it last knew, and the controller writes again once it answers",
					"lastContact", last)
			}
		}
		if since, ok := t.Since(); !downSince.IsZero() && ok && since < interval {
			logger.Info(t.what+" answers again", "unreachableFor", t.now().Sub(downSince).Round(time.Second))
			downSince = time.Time{}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
