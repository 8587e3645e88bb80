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
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"

	"github.com/kcp-dev/kcp/pkg/logging"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
)

func processNextWorkItem(ctx context.Context, q queue, process func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)

	logger := logging.WithQueueKey(klog.FromContext(ctx), key).WithValues("queue", q.name)
	ctx = klog.NewContext(ctx, logger)
	logger.V(4).Info("processing key")

	began := time.Now()
	if err := process(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			// Someone else (kcp itself, often) wrote the Workspace since our cache saw it.
			logger.V(2).Info("conflict, requeuing", "err", err)
			metrics.ObserveReconcile(q.name, metrics.ResultRequeue, began)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "failed to sync, requeuing", "queue", q.name, "key", key)
			metrics.ObserveReconcile(q.name, metrics.ResultError, began)
		}
		q.AddRateLimited(key)
		return true
	}
	metrics.ObserveReconcile(q.name, metrics.ResultSuccess, began)
	q.Forget(key)
	return true
}

// processWorkspace reconciles one Workspace and patches its annotations when they changed.
func (c *Controller) processWorkspace(ctx context.Context, key string) error {
	cluster, _, name, err := kcpcache.SplitMetaClusterNamespaceKey(key)
	if err != nil {
		klog.FromContext(ctx).Error(err, "dropping malformed workspace key")
		return nil
	}
	// No request to kcp may hold a key forever.
	ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	conflicted, _ := c.conflicted.take(key)
	ws, err := c.workspaceLister.Cluster(cluster).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil // deleted: nothing to write, nothing to remember
	}
	if err != nil {
		return err
	}
	if conflicted {
		// The last patch conflicted: retry from kcp's version, not the cache's.
		ws, err = c.getWorkspace(ctx, cluster, name)
		if err != nil {
			c.conflicted.put(key, true)
			return err
		}
	}
	if !ws.DeletionTimestamp.IsZero() {
		return nil // on its way out: a write would only race the deletion
	}
	ctx = klog.NewContext(ctx, logging.WithObject(klog.FromContext(ctx), ws))

	observedAt, observed := c.observed.take(key)
	state, err := c.workspaces.mountState(ctx, ws)
	if err != nil {
		if observed {
			c.putObserved(key, observedAt)
		}
		if errors.Is(err, errReadWaits) {
			return nil // the read under way enqueues it again
		}
		return err
	}
	c.gate(key, ws, &state)
	written, err := c.commitMetadataAndSpec(ctx, key, ws, state)
	var limited *repairLimitedError
	if errors.As(err, &limited) {
		klog.FromContext(ctx).V(4).Info("repair of the annotations rate limited", "retryIn", limited.retryIn)
		c.workspacesQueue.AddAfter(key, limited.retryIn)
		return nil
	}
	if err == nil {
		err = c.commitStatus(ctx, key, ws, written, conflicted, state)
	}
	c.unavailable.wrote(key, state.gate.slot, err)
	if err == nil {
		c.noteGate(klog.FromContext(ctx), ws, ownCondition(ws), state)
	}
	switch {
	case !observed:
	case written != nil: // the annotations are written, whatever became of the status
		metrics.StatusLatency.Observe(time.Since(observedAt).Seconds())
	case err != nil:
		c.putObserved(key, observedAt)
	}
	if err == nil && state.recheckAfter > 0 {
		// The delaying queue keeps one pending time per key, the earliest.
		c.workspacesQueue.AddAfter(key, state.recheckAfter)
	}
	var refused *urlRefusedError
	if errors.As(err, &refused) {
		// Remembered: the next reconcile reports it, and writes the rest.
		klog.FromContext(ctx).Info("kcp refused spec.URL, reporting MountURLInvalid without it", "url", refused.url, "err", refused.err, "recheckIn", URLRefusalRecheck)
		c.workspacesQueue.Add(key)
		return nil
	}
	return err
}

// reconcileTimeout bounds one reconcile of workspacemounts-workspaces, all its requests to kcp included (a read of the
// mount object and at most two patches, or a read of the Workspace).
const reconcileTimeout = time.Minute
