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

// Package shards keeps one runner going per kcp Shard in root, with the --shards-kubeconfig
// credentials sent to its [BaseURL]; a failed runner starts again, and a shard's new runner waits
// for its old one.
package shards

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
)

// Shard is one kcp shard as a runner sees it; Config reaches its BaseURL.
type Shard struct {
	Name    string
	BaseURL string
	Config  *rest.Config
}

// RunFunc runs one shard's work until ctx is done; an error restarts it.
type RunFunc func(ctx context.Context, shard Shard) error

type Runners struct {
	credentials *rest.Config
	run         RunFunc

	lock    sync.Mutex
	running map[string]*runner
	last    map[string]*runner // each shard's newest, until it returned
	wg      sync.WaitGroup
}

type runner struct {
	baseURL string
	cancel  context.CancelFunc
	done    chan struct{}
}

func New(credentials *rest.Config, run RunFunc) *Runners {
	return &Runners{
		credentials: credentials,
		run:         run,
		running:     map[string]*runner{},
		last:        map[string]*runner{},
	}
}

// Follow runs a runner per Shard of the informer until ctx is done.
func (r *Runners) Follow(ctx context.Context, shards cache.SharedIndexInformer) error {
	registration, err := shards.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { r.upsert(ctx, obj) },
		UpdateFunc: func(_, obj interface{}) { r.upsert(ctx, obj) },
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if shard, ok := obj.(*corev1alpha1.Shard); ok {
				r.stop(ctx, shard.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() {
		_ = shards.RemoveEventHandler(registration)
		r.lock.Lock()
		defer r.lock.Unlock()
		for _, running := range r.running {
			running.cancel()
		}
	})
	return nil
}

// Wait returns once every runner has returned.
func (r *Runners) Wait() { r.wg.Wait() }

func (r *Runners) Names() []string {
	r.lock.Lock()
	defer r.lock.Unlock()
	return slices.Collect(maps.Keys(r.running))
}

func (r *Runners) upsert(ctx context.Context, obj interface{}) {
	shard, ok := obj.(*corev1alpha1.Shard)
	if !ok {
		return
	}
	baseURL, err := BaseURL(shard)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Shard not reached", "shard", shard.Name)
		r.stop(ctx, shard.Name)
		return
	}
	r.Add(ctx, shard.Name, baseURL)
}

// BaseURL is a Shard's spec.baseURL, or why it is not reached: the credentials go only to
// https://host.
func BaseURL(shard *corev1alpha1.Shard) (string, error) {
	baseURL := strings.TrimSuffix(shard.Spec.BaseURL, "/")
	if baseURL == "" {
		return "", fmt.Errorf("no spec.baseURL in Shard %q: not reached until it has one", shard.Name)
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("spec.baseURL %q of Shard %q is not an https:// URL: not reached, since the shards' credentials are sent only over https", baseURL, shard.Name)
	}
	return baseURL, nil
}

// Add starts, or restarts at a new baseURL, a shard's runner until ctx is done; an empty baseURL
// stops it.
func (r *Runners) Add(ctx context.Context, name, baseURL string) {
	if ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(ctx).WithValues("shard", name)
	baseURL = strings.TrimSuffix(baseURL, "/")
	if baseURL == "" {
		logger.Info("Shard without spec.baseURL: not reached until it has one")
		r.stop(ctx, name)
		return
	}
	r.lock.Lock()
	defer r.lock.Unlock()
	if current := r.running[name]; current != nil {
		if current.baseURL == baseURL {
			return
		}
		logger.Info("the Shard's baseURL changed: restarting its runner", "from", current.baseURL, "to", baseURL)
		current.cancel()
	} else {
		logger.Info("a new Shard: starting its runner", "baseURL", baseURL)
	}
	previous := r.last[name]
	config := rest.CopyConfig(r.credentials)
	config.Host = baseURL
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	next := &runner{baseURL: baseURL, cancel: cancel, done: make(chan struct{})}
	r.running[name], r.last[name] = next, next
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.forget(name, next)
		defer close(next.done)
		defer cancel()
		if previous != nil {
			<-previous.done // one runner per shard at a time
		}
		r.runUntilDone(runCtx, Shard{Name: name, BaseURL: baseURL, Config: config})
	}()
}

// runUntilDone runs one shard's work, again after each failure, until ctx is done.
func (r *Runners) runUntilDone(ctx context.Context, shard Shard) {
	logger := klog.FromContext(ctx)
	_, _ = RetryUntil(ctx, func(ctx context.Context) error { return r.run(ctx, shard) }, func(err error, _ int, retryIn time.Duration) {
		logger.Error(err, "the shard's runner failed; starting it again", "retryIn", retryIn.Round(100*time.Millisecond))
	})
}

// RetryUntil calls try until it succeeds or ctx is done, waiting [Delays]
// between tries, and tells failed of each failure before the wait. It returns
// the number of tries and, unless one succeeded, ctx's error.
func RetryUntil(ctx context.Context, try func(context.Context) error, failed func(err error, attempts int, retryIn time.Duration)) (attempts int, err error) {
	var began time.Time
	var failure error
	delays := Delays(clock.RealClock{}, &began)
	err = wait.DelayFunc(func() time.Duration {
		retryIn := delays()
		failed(failure, attempts, retryIn)
		return retryIn
	}).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		attempts++
		began = time.Now()
		if failure = try(ctx); failure == nil {
			return true, nil
		}
		return false, ctx.Err()
	})
	return attempts, err
}

// Backoff is the waits between tries while a shard, or kcp, does not answer.
var Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}

// Delays are the waits of [Backoff] after the tries begun at *began; they
// start again after a try that lasted longer than their cap, a new failure
// rather than the same one.
func Delays(c clock.PassiveClock, began *time.Time) wait.DelayFunc {
	delays := Backoff.DelayFunc()
	return func() time.Duration {
		if c.Since(*began) > Backoff.Cap {
			delays = Backoff.DelayFunc()
		}
		return delays()
	}
}

func (r *Runners) forget(name string, done *runner) {
	r.lock.Lock()
	defer r.lock.Unlock()
	if r.last[name] == done {
		delete(r.last, name)
	}
}

func (r *Runners) stop(ctx context.Context, name string) {
	r.lock.Lock()
	defer r.lock.Unlock()
	if running, found := r.running[name]; found {
		klog.FromContext(ctx).Info("the Shard is gone: stopping its runner", "shard", name)
		running.cancel()
		delete(r.running, name)
	}
}
