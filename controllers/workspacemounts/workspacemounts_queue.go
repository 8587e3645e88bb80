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
	"time"

	"golang.org/x/time/rate"

	"k8s.io/client-go/util/workqueue"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// QueueName is the one name of a queue of the controller of a shard: the workqueue's (its workqueue_* series), the
// queue of its log lines and the queue label of workspacemounts_reconcile_*.
func QueueName(queue, shard string) string {
	if shard == "" {
		return queue
	}
	return queue + "/" + shard
}

// queue is a work queue and its name.
type queue struct {
	workqueue.TypedRateLimitingInterface[string]
	name string
}

// newQueue is a work queue named name, in FIFO order, retrying with [retryRateLimiter]: workspacemounts-mounts, whose
// keys are kinds that any tenant may share.
func newQueue(name string) queue {
	return queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(retryRateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		name: name,
	}
}

// newTenantQueue is a work queue named name whose keys are handed out fair per tenant and retried with
// [tenantRetryRateLimiter].
func newTenantQueue(name string, tenantOf func(key string) tenant.Name) queue {
	fifo := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name, Queue: newFairQueue(tenantOf)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: name, Queue: fifo})
	return queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(tenantRetryRateLimiter(tenantOf),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, DelayingQueue: delaying}),
		name: name,
	}
}

// RetryBaseDelay is how long a key that failed once waits before its next try; each further failure doubles it, up to
// [MaxRetryDelay].
const RetryBaseDelay = 5 * time.Millisecond

// MaxRetryDelay caps how long a key that keeps failing waits before its next try. client-go's default goes to 1000s.
const MaxRetryDelay = 10 * time.Second

// retryRate and retryBurst are client-go's overall limit of retries.
const (
	retryRate  = rate.Limit(10)
	retryBurst = 100
)

// retryRateLimiter is client-go's default controller rate limiter with the per-key backoff capped at [MaxRetryDelay].
func retryRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](RetryBaseDelay, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(retryRate, retryBurst)},
	)
}

// tenantRetryRateLimiter is [retryRateLimiter] with client-go's overall bucket kept per tenant: a tenant whose keys keep
// failing spends its own retries, not every tenant's.
func tenantRetryRateLimiter(tenantOf func(key string) tenant.Name) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](RetryBaseDelay, MaxRetryDelay),
		&tenantBucketRateLimiter{tenantOf: tenantOf, buckets: tenant.NewLimiters[tenant.Name](retryRate, retryBurst, nil)},
	)
}
