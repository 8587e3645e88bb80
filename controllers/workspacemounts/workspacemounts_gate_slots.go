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
	"cmp"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// unavailableGate bounds the Workspaces of one shard whose condition is False (--max-unavailable), fair between
// tenants, for workers reconciling at once; its invariants are in docs/design/controller-gate.md. A nil gate has no
// limit.
type unavailableGate struct {
	maxUnavailable intstr.IntOrString
	mounted        func() int
	enqueue        func(key string)
	tenantOf       func(key string) tenant.Name
	now            func() time.Time
	shard          string

	lock      sync.Mutex
	entries   map[string]*gateEntry
	nextTurn  uint64
	nextGrant uint64
	count     int
	countedAt time.Time
}

// gateEntry is what the gate knows of one Workspace.
type gateEntry struct {
	tenant tenant.Name
	// turn orders the Workspaces wanting a slot: the lowest, held longest, first. granted orders the slots.
	turn, granted uint64
	// wants: its condition is to be False; slot: the gate lets it be; pending: granted since its last write; inKCP: its
	// last write (or the informer, at seed) has it False with a slot.
	wants, slot, pending, inKCP bool
}

// counted tells whether the entry takes one of the limit.
func (e *gateEntry) counted() bool { return e.slot || e.pending || e.inKCP }

// waiting tells whether the entry is held.
func (e *gateEntry) waiting() bool { return e.wants && !e.slot }

func newUnavailableGate(maxUnavailable *intstr.IntOrString, shard string, mounted func() int, tenantOf func(key string) tenant.Name, enqueue func(key string)) *unavailableGate {
	if maxUnavailable == nil {
		return nil
	}
	return &unavailableGate{
		maxUnavailable: *maxUnavailable,
		mounted:        mounted,
		enqueue:        enqueue,
		tenantOf:       tenantOf,
		now:            time.Now,
		shard:          shard,
		entries:        map[string]*gateEntry{},
	}
}

// seed takes the Workspaces the informer holds at start (a new leader).
func (g *unavailableGate) seed(workspaces []*tenancyv1alpha1.Workspace) {
	if g == nil {
		return
	}
	type seeded struct {
		key   string
		since time.Time
		slot  bool
	}
	var found []seeded
	for _, ws := range workspaces {
		condition := ownCondition(ws)
		if condition == nil {
			continue
		}
		key, err := kcpcache.MetaClusterNamespaceKeyFunc(ws)
		if err != nil {
			continue
		}
		switch {
		case condition.Status == corev1.ConditionFalse && budgeted(ws):
			found = append(found, seeded{key: key, since: condition.LastTransitionTime.Time, slot: true})
		case condition.Status == corev1.ConditionUnknown && condition.Reason == mount.ReasonGateHeld:
			found = append(found, seeded{key: key, since: condition.LastTransitionTime.Time})
		}
	}
	slices.SortFunc(found, func(a, b seeded) int {
		return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.key, b.key))
	})
	g.lock.Lock()
	defer g.lock.Unlock()
	for _, s := range found {
		e := &gateEntry{tenant: g.tenantOf(s.key), turn: g.nextTurn, wants: true, slot: s.slot, inKCP: s.slot}
		g.nextTurn++
		if s.slot {
			e.granted = g.nextGrant
			g.nextGrant++
		}
		g.entries[s.key] = e
	}
	g.settleLocked("")
}

// admit tells whether the Workspace of key, whose condition is to be False, may have it False: it has a slot, or is
// granted one; else it is held.
func (g *unavailableGate) admit(key string) bool {
	if g == nil {
		return true
	}
	g.lock.Lock()
	defer g.lock.Unlock()
	e := g.entries[key]
	if e == nil {
		e = &gateEntry{tenant: g.tenantOf(key), turn: g.nextTurn}
		g.nextTurn++
		g.entries[key] = e
	}
	e.wants = true
	if !e.slot {
		g.settleLocked(key)
	}
	return e.slot
}

// release tells that the condition of the Workspace of key is not to be False (its mount recovered, it is no longer
// mounted, it is delayed, or False without a slot).
func (g *unavailableGate) release(key string) {
	if g == nil {
		return
	}
	g.lock.Lock()
	defer g.lock.Unlock()
	e := g.entries[key]
	if e == nil {
		return
	}
	e.wants, e.slot = false, false
	g.settleLocked(key)
}

// wrote tells how the writes of a reconcile of the Workspace of key ended, which had its condition False with a slot or
// not.
func (g *unavailableGate) wrote(key string, slot bool, err error) {
	if g == nil {
		return
	}
	g.lock.Lock()
	defer g.lock.Unlock()
	e := g.entries[key]
	if e == nil {
		return
	}
	switch {
	case err != nil && slot && !e.inKCP:
		delete(g.entries, key)
	case err != nil:
		return // kcp has what it had
	default:
		e.pending, e.inKCP = false, slot
	}
	g.settleLocked(key)
}

// forget drops the Workspace of key: its slot, if any, is free.
func (g *unavailableGate) forget(key string) {
	if g == nil {
		return
	}
	g.lock.Lock()
	defer g.lock.Unlock()
	if _, found := g.entries[key]; found {
		delete(g.entries, key)
		g.settleLocked("")
	}
}

// settleLocked restores the invariants after a change.
func (g *unavailableGate) settleLocked(current string) {
	defer g.publishLocked()
	counted := 0
	slots := map[tenant.Name]int{}
	demand := map[tenant.Name]int{}
	var held, granted []string
	for key, e := range g.entries {
		if !e.wants && !e.counted() {
			delete(g.entries, key)
			continue
		}
		if e.counted() {
			counted++
		}
		if e.wants {
			demand[e.tenant]++
		}
		if e.slot {
			slots[e.tenant]++
			granted = append(granted, key)
		}
		if e.waiting() {
			held = append(held, key)
		}
	}
	if len(held) == 0 {
		return
	}
	limit := g.limitLocked()
	share := fairShares(limit, demand, slots)
	short := func(t tenant.Name) bool { return slots[t] < share[t] && slots[t] < demand[t] }
	changed := map[string]bool{}

	// Take back the slots taken last of the tenants above their share.
	if slices.ContainsFunc(held, func(key string) bool { return short(g.entries[key].tenant) }) {
		slices.SortFunc(granted, func(a, b string) int { return cmp.Compare(g.entries[b].granted, g.entries[a].granted) })
		for _, key := range granted {
			if e := g.entries[key]; slots[e.tenant] > share[e.tenant] {
				e.slot = false
				slots[e.tenant]--
				held = append(held, key)
				changed[key] = !changed[key]
			}
		}
	}

	// Grant the free slots, the held longest first, within the shares.
	free := limit - counted
	if free <= 0 && !slices.ContainsFunc(held, func(key string) bool { return g.entries[key].counted() }) {
		held = nil // nothing to grant: no sort (a long outage holds many)
	}
	slices.SortFunc(held, func(a, b string) int { return cmp.Compare(g.entries[a].turn, g.entries[b].turn) })
	for _, key := range held {
		e := g.entries[key]
		if !short(e.tenant) || (free <= 0 && !e.counted()) {
			continue
		}
		if !e.counted() {
			free--
		}
		e.slot, e.pending, e.granted = true, true, g.nextGrant
		g.nextGrant++
		slots[e.tenant]++
		changed[key] = !changed[key]
	}
	for key, changed := range changed {
		if changed && key != current {
			g.enqueue(key)
		}
	}
}

// fairShares shares limit slots between the tenants wanting demand of them, max-min fair: each gets its demand or the
// water level, whichever is less.
func fairShares(limit int, demand, slots map[tenant.Name]int) map[tenant.Name]int {
	share := make(map[tenant.Name]int, len(demand))
	open := make([]tenant.Name, 0, len(demand))
	for t, n := range demand {
		if n > 0 {
			open = append(open, t)
		}
	}
	for remaining := limit; remaining > 0 && len(open) > 0; {
		each := remaining / len(open)
		if each == 0 {
			slices.SortFunc(open, func(a, b tenant.Name) int { return cmp.Or(cmp.Compare(slots[b], slots[a]), cmp.Compare(a, b)) })
			for _, t := range open[:remaining] {
				share[t]++
			}
			break
		}
		for _, t := range open {
			given := min(each, demand[t]-share[t])
			share[t] += given
			remaining -= given
		}
		open = slices.DeleteFunc(open, func(t tenant.Name) bool { return share[t] >= demand[t] })
	}
	return share
}

// limitLocked is the limit now: a number, or a percentage of the mounted Workspaces, counted again when the last count
// is a second old.
func (g *unavailableGate) limitLocked() int {
	if g.maxUnavailable.Type == intstr.Int {
		return g.maxUnavailable.IntValue()
	}
	if now := g.now(); g.countedAt.IsZero() || now.Sub(g.countedAt) >= time.Second {
		g.count, g.countedAt = g.mounted(), now
	}
	return unavailableLimit(g.maxUnavailable, g.count)
}

func (g *unavailableGate) publishLocked() {
	held := 0
	for _, e := range g.entries {
		if e.waiting() {
			held++
		}
	}
	metrics.SetGateHeld(g.shard, held)
}

// stop zeroes the gate's gauge: a replica that no longer leads holds none.
func (g *unavailableGate) stop() {
	if g != nil {
		metrics.SetGateHeld(g.shard, 0)
	}
}
