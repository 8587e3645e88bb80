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
	"hash/fnv"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/restmapping"
)

// readVersion is what a Workspace's last read of its mount object found: which object (a hash of its [objectKey]),
// whether it existed, and its resourceVersion.
type readVersion struct {
	object          uint64
	found           bool
	resourceVersion uint64
}

// lastReads remembers, per Workspace key, the mount object version its last reconcile read, so that a cache behind it
// is never written over it.
type lastReads = keyed[readVersion]

// readMountObject reads the mount object namespace/name of resource in cluster, the Workspace's own, for the Workspace
// key wsKey: from a synced cache not behind the key's last read ([notOlder]), else with a GET. See "A cached read never
// goes back" in docs/design/controller-mount-informers.md.
func (r *workspacesReconciler) readMountObject(ctx context.Context, wsKey string, cluster logicalcluster.Name, resource restmapping.Resource,
	namespace, name string) (*unstructured.Unstructured, error) {
	object := objectHash(objectKey(cluster, resource.Group, resource.Kind, namespace, name))
	last, known := r.reads.get(wsKey)
	known = known && last.object == object
	if r.cachedMountObject != nil {
		obj, found, cached := r.cachedMountObject(cluster, resource, namespace, name)
		if cached {
			current := readVersion{object: object, found: found}
			if found {
				current.resourceVersion = parseResourceVersion(obj.GetResourceVersion())
			}
			if !known || notOlder(current, last) {
				r.reads.put(wsKey, current)
				if !found {
					return nil, apierrors.NewNotFound(schema.GroupResource{Group: resource.Group, Resource: resource.Resource}, name)
				}
				return obj, nil
			}
		}
	}
	pair := mountCacheKey(cluster, resource)
	var verdict breakerVerdict
	if r.breaker != nil {
		var after time.Duration
		switch verdict, after = r.breaker.admit(pair, wsKey); verdict {
		case readWaits:
			return nil, errReadWaits
		case readRefused:
			return nil, &breakerOpenError{retryIn: after}
		}
	}
	obj, err := r.getMountObject(ctx, cluster, resource, namespace, name)
	if r.breaker != nil {
		r.breaker.done(pair, verdict == readProbes, err)
		if notAnswering(err) && !errors.Is(ctx.Err(), context.Canceled) {
			return nil, &breakerOpenError{retryIn: r.breaker.initialBackoff, err: err}
		}
	}
	switch {
	case err == nil:
		r.reads.put(wsKey, readVersion{object: object, found: true, resourceVersion: parseResourceVersion(obj.GetResourceVersion())})
	case apierrors.IsNotFound(err):
		r.reads.put(wsKey, readVersion{object: object})
	}
	return obj, err
}

// errReadWaits: another read of the same pair is under way and decides for this one; the Workspace is enqueued again
// when it ends, and nothing is written now.
var errReadWaits = errors.New("waiting for another read of the same mount resource and cluster")

// breakerOpenError: the pair's breaker is open, or opened with this read: the Workspace is Unknown, reason
// [mount.ReasonMountKindNotAnswering], and is reconciled again in retryIn.
type breakerOpenError struct {
	retryIn time.Duration
	err     error
}

func (e *breakerOpenError) Error() string {
	if e.err != nil {
		return "kcp does not answer reads of the mount object: " + e.err.Error()
	}
	return "kcp did not answer reads of this mount resource in this cluster; not read before the backoff ends"
}

func (e *breakerOpenError) Unwrap() error { return e.err }

// notAnsweringFor tells whether err is a [breakerOpenError], and when to read again.
func notAnsweringFor(err error) (time.Duration, bool) {
	var open *breakerOpenError
	if errors.As(err, &open) {
		return open.retryIn, true
	}
	return 0, false
}

// notOlder tells whether a read from the cache may follow the last read: both found the object and the cache's is not
// older, or neither found it.
func notOlder(cached, last readVersion) bool {
	if !cached.found || !last.found {
		return !cached.found && !last.found
	}
	return cached.resourceVersion != 0 && cached.resourceVersion >= last.resourceVersion
}

// parseResourceVersion returns a resourceVersion as a number, 0 if it is none.
func parseResourceVersion(rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func objectHash(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}
