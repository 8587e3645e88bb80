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

import "sync"

// keyed is a map by key guarded by a lock: what the controller remembers of a Workspace between reconciles (workers
// reconcile different Workspaces at once), its mount object caches.
type keyed[V any] struct {
	lock  sync.Mutex
	byKey map[string]V
}

func (k *keyed[V]) get(key string) (V, bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	v, found := k.byKey[key]
	return v, found
}

func (k *keyed[V]) put(key string, v V) { k.putUnless(key, v, nil) }

// putUnless sets key's value to v, unless keep (if not nil) says the current one stays.
func (k *keyed[V]) putUnless(key string, v V, keep func(current V) bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	if current, found := k.byKey[key]; found && keep != nil && keep(current) {
		return
	}
	if k.byKey == nil {
		k.byKey = map[string]V{}
	}
	k.byKey[key] = v
}

// take returns key's value, and forgets it.
func (k *keyed[V]) take(key string) (V, bool) {
	k.lock.Lock()
	defer k.lock.Unlock()
	v, found := k.byKey[key]
	delete(k.byKey, key)
	return v, found
}

func (k *keyed[V]) forget(key string) { k.take(key) }
