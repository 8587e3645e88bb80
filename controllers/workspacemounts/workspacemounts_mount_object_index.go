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
	"sync"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// MountObjectIndex finds the Workspaces whose reference names a mount object, for its events. A client-go index keeps
// a set per object, several hundred bytes per mounted Workspace (test/bench/scale); this keeps the object's
// [objectHash] and the Workspace's name (its cluster is the object's), candidates [MountObjectIndex.Workspaces] checks
// in the cache. The
// Workspace handler updates it before it enqueues the Workspace, so an event it misses is one the Workspace's
// reconcile reads.
type MountObjectIndex struct {
	rule mount.Rule
	lock sync.RWMutex
	// first and more hold names the cached Workspaces hold; more the further Workspaces of a hash: objects mounted
	// twice, and collisions.
	first map[uint64]string
	more  map[uint64][]string
}

// NewMountObjectIndex is an empty index of the Workspaces rule says are mounted.
func NewMountObjectIndex(rule mount.Rule) *MountObjectIndex {
	return &MountObjectIndex{rule: rule, first: map[uint64]string{}, more: map[uint64][]string{}}
}

// hashOf is the hash of the object ws mounts, false if none, or not validly.
func (x *MountObjectIndex) hashOf(ws *tenancyv1alpha1.Workspace) (uint64, string, bool) {
	if ws == nil {
		return 0, "", false
	}
	ws, ref, gvk, ok := validReference(x.rule, ws)
	if !ok {
		return 0, "", false
	}
	return objectHash(objectKey(logicalcluster.From(ws), gvk.Group, gvk.Kind, ref.Namespace, ref.Name)), ws.Name, true
}

// Update moves a Workspace from what it mounted as oldWS to what it mounts as newWS; either may be nil.
func (x *MountObjectIndex) Update(oldWS, newWS *tenancyv1alpha1.Workspace) {
	oldHash, oldName, hadOne := x.hashOf(oldWS)
	newHash, newName, hasOne := x.hashOf(newWS)
	if !hadOne && !hasOne {
		return
	}
	x.lock.Lock()
	defer x.lock.Unlock()
	if hadOne {
		x.removeLocked(oldHash, oldName)
	}
	if hasOne {
		x.addLocked(newHash, newName)
	}
}

func (x *MountObjectIndex) addLocked(hash uint64, name string) {
	if _, taken := x.first[hash]; !taken {
		x.first[hash] = name
		return
	}
	x.more[hash] = append(x.more[hash], name)
}

func (x *MountObjectIndex) removeLocked(hash uint64, name string) {
	more := x.more[hash]
	if first, found := x.first[hash]; found && first == name {
		if len(more) == 0 {
			delete(x.first, hash)
			return
		}
		x.first[hash], more = more[len(more)-1], more[:len(more)-1]
	} else {
		for i, other := range more {
			if other == name {
				more = append(more[:i], more[i+1:]...)
				break
			}
		}
	}
	if len(more) == 0 {
		delete(x.more, hash)
	} else {
		x.more[hash] = more
	}
}

// Workspaces are the cached Workspaces that mount the object named by cluster, group, kind, namespace and name.
func (x *MountObjectIndex) Workspaces(get func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.Workspace,
	cluster logicalcluster.Name, group, kind, namespace, name string) []*tenancyv1alpha1.Workspace {
	hash := objectHash(objectKey(cluster, group, kind, namespace, name))
	x.lock.RLock()
	candidates := append([]string(nil), x.more[hash]...)
	if first, found := x.first[hash]; found {
		candidates = append(candidates, first)
	}
	x.lock.RUnlock()
	var found []*tenancyv1alpha1.Workspace
	for _, candidate := range candidates {
		ws := get(cluster, candidate)
		if ws == nil {
			continue
		}
		if ws, ref, gvk, ok := validReference(x.rule, ws); ok && logicalcluster.From(ws) == cluster &&
			gvk.Group == group && gvk.Kind == kind && ref.Namespace == namespace && ref.Name == name {
			found = append(found, ws)
		}
	}
	return found
}
