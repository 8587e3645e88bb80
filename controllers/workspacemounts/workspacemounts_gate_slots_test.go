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
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/tenant"
)

// testKeyTenant is the tenant of a test key: its cluster ("org-a|ws"), or
// "t" for a key without one.
func testKeyTenant(key string) tenant.Name {
	if cluster, _, found := strings.Cut(key, "|"); found {
		return tenant.Name(cluster)
	}
	return "t"
}

// gateHarness is an unavailableGate whose enqueued keys are recorded, and
// a kcp that has the conditions its writes leave.
type gateHarness struct {
	*unavailableGate
	lock     sync.Mutex
	enqueued []string
	// kcpFalse are the keys kcp has False with a slot.
	kcpFalse map[string]bool
}

func newGateHarness(t testing.TB, maxUnavailable string, mounted int) *gateHarness {
	t.Helper()
	v, err := ParseMaxUnavailable(maxUnavailable)
	require.NoError(t, err)
	h := &gateHarness{kcpFalse: map[string]bool{}}
	h.unavailableGate = newUnavailableGate(v, "test-"+t.Name(), func() int { return mounted }, testKeyTenant, func(key string) {
		h.lock.Lock()
		defer h.lock.Unlock()
		h.enqueued = append(h.enqueued, key)
	})
	return h
}

func (h *gateHarness) takeEnqueued() []string {
	h.lock.Lock()
	defer h.lock.Unlock()
	e := h.enqueued
	h.enqueued = nil
	return e
}

// reconcile is what Controller.processWorkspace does with the gate: key's
// condition is to be False (wantsFalse) or not; a False one is admitted or
// held; the write of it ends with err (kcp then keeps what it had). It
// tells whether the condition is False with a slot.
func (h *gateHarness) reconcile(key string, wantsFalse bool, err error) bool {
	slot := false
	if wantsFalse {
		slot = h.admit(key)
	} else {
		h.release(key)
	}
	if err == nil {
		h.lock.Lock()
		if slot {
			h.kcpFalse[key] = true
		} else {
			delete(h.kcpFalse, key)
		}
		h.lock.Unlock()
	}
	h.wrote(key, slot, err)
	return slot
}

func (h *gateHarness) admitted(keys ...string) []bool {
	got := make([]bool, 0, len(keys))
	for _, key := range keys {
		got = append(got, h.reconcile(key, true, nil))
	}
	return got
}

func (h *gateHarness) recovered(key string) { h.reconcile(key, false, nil) }

// len counts the Workspaces the gate remembers: False or held.
func (g *unavailableGate) len() int {
	if g == nil {
		return 0
	}
	g.lock.Lock()
	defer g.lock.Unlock()
	return len(g.entries)
}

func (g *unavailableGate) heldCount() int {
	g.lock.Lock()
	defer g.lock.Unlock()
	n := 0
	for _, e := range g.entries {
		if e.waiting() {
			n++
		}
	}
	return n
}

var errWrite = errors.New("the write failed")

// TestUnavailableGate: every rule of --max-unavailable.
func TestUnavailableGate(t *testing.T) {
	t.Parallel()

	t.Run("no limit admits all", func(t *testing.T) {
		t.Parallel()
		var g *unavailableGate
		require.True(t, g.admit("a"))
		g.release("a")
		g.wrote("a", true, nil)
		g.forget("a")
		g.seed(nil)
		g.stop()
	})

	t.Run("a number: the first take the slots, the others are held; a False one keeps its slot", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "2", 100)
		require.Equal(t, []bool{true, true, false, false}, h.admitted("a", "b", "c", "d"))
		require.Equal(t, []bool{true, true, false, false, true, true}, h.admitted("a", "b", "c", "d", "a", "b"), "no flapping: the same answer again")
		require.Equal(t, 2, h.heldCount())
		require.Empty(t, h.takeEnqueued())
	})

	t.Run("0: none False, all held", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "0", 100)
		require.Equal(t, []bool{false, false}, h.admitted("a", "b"))
		h.recovered("a")
		require.Empty(t, h.takeEnqueued(), "no slot to offer")
		require.Equal(t, 1, h.heldCount())
	})

	t.Run("a percentage of the mounted Workspaces, rounded down", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "10%", 25)
		require.Equal(t, []bool{true, true, false}, h.admitted("a", "b", "c"))
		h9 := newGateHarness(t, "10%", 9)
		require.Equal(t, []bool{false}, h9.admitted("a"), "10% of 9 is 0")
	})

	t.Run("the mounted Workspaces are counted at most once a second", func(t *testing.T) {
		t.Parallel()
		mounted, counts := 10, 0
		v := intstr.FromString("10%")
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		g := newUnavailableGate(&v, "test-"+t.Name(), func() int { counts++; return mounted }, testKeyTenant, func(string) {})
		g.now = func() time.Time { return now }
		require.True(t, g.admit("a"))
		require.False(t, g.admit("b"))
		mounted = 20
		require.False(t, g.admit("b"), "the count of a moment ago")
		require.Equal(t, 1, counts)
		now = now.Add(time.Second)
		require.True(t, g.admit("b"), "20 mounted now: 2 slots")
		require.Equal(t, 2, counts)
	})

	t.Run("a freed slot goes to the Workspace held longest, not to the one reconciled first", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "1", 100)
		require.Equal(t, []bool{true, false, false, false}, h.admitted("a", "c", "b", "d"))
		h.recovered("a")
		require.Equal(t, []string{"c"}, h.takeEnqueued(), "held first, granted first")
		require.Equal(t, []bool{false, false, true}, h.admitted("b", "d", "c"), "b and d reconciled before c do not take c's slot")
		require.Equal(t, 2, h.heldCount())

		t.Log("a held Workspace whose mount recovers leaves its turn; no slot is free, nothing is offered")
		h.recovered("b")
		require.Empty(t, h.takeEnqueued())
		require.Equal(t, 1, h.heldCount())

		t.Log("deleted (Controller.forget): the slot goes to the next held")
		h.forget("c")
		require.Equal(t, []string{"d"}, h.takeEnqueued())
		require.True(t, h.reconcile("d", true, nil))
		require.Zero(t, h.heldCount())
	})

	t.Run("a granted slot left unused goes to the next held", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "1", 100)
		require.Equal(t, []bool{true, false, false}, h.admitted("a", "b", "c"))
		h.recovered("a")
		require.Equal(t, []string{"b"}, h.takeEnqueued())
		h.recovered("b") // b recovered meanwhile
		require.Equal(t, []string{"c"}, h.takeEnqueued())
		require.True(t, h.reconcile("c", true, nil))
	})

	t.Run("a slot is kcp's only once written: a failed write gives it back, and its turn", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "1", 100)
		require.True(t, h.reconcile("padded", true, errWrite), "granted, but the write fails")
		require.Zero(t, h.len(), "the slot and the turn given back")
		require.Equal(t, []bool{true}, h.admitted("b"), "the slot is b's")
		require.False(t, h.reconcile("padded", true, errWrite), "its retry waits behind")
		require.Equal(t, 1, h.heldCount())
		h.recovered("b")
		require.Equal(t, []string{"padded"}, h.takeEnqueued())
	})

	t.Run("a slot given up frees once the write says so", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "1", 100)
		require.Equal(t, []bool{true, false}, h.admitted("a", "b"))
		h.release("a")
		h.wrote("a", false, errWrite)
		require.Empty(t, h.takeEnqueued(), "kcp still has a False")
		require.False(t, h.reconcile("b", true, nil))
		h.recovered("a")
		require.Equal(t, []string{"b"}, h.takeEnqueued())
	})

	t.Run("a tenant above its share gives back its slots taken last to one below", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "2", 100)
		require.Equal(t, []bool{true, true, false, false}, h.admitted("org-a|1", "org-a|2", "org-a|3", "org-a|4"), "a tenant alone takes every slot")
		require.False(t, h.reconcile("org-b|x", true, nil), "no slot free yet")
		require.Equal(t, []string{"org-a|2"}, h.takeEnqueued(), "org-a's slot taken last is taken back")
		require.False(t, h.reconcile("org-a|2", true, nil), "held again")
		require.Equal(t, []string{"org-b|x"}, h.takeEnqueued(), "the slot goes to org-b, though org-a's 3 and 4 were held longer")
		require.True(t, h.reconcile("org-b|x", true, nil))
		require.Equal(t, []bool{true, false, false, false}, h.admitted("org-a|1", "org-a|2", "org-a|3", "org-a|4"), "one each, stable")
		require.Empty(t, h.takeEnqueued())

		t.Log("org-b recovers: the slot goes back to org-a, to its Workspace wanting one longest")
		h.recovered("org-b|x")
		require.Equal(t, []string{"org-a|2"}, h.takeEnqueued())
	})

	t.Run("the slots that do not divide stay with their holders", func(t *testing.T) {
		t.Parallel()
		h := newGateHarness(t, "3", 100)
		require.Equal(t, []bool{true, true, true}, h.admitted("org-a|1", "org-a|2", "org-a|3"))
		require.False(t, h.reconcile("org-b|1", true, nil))
		require.Equal(t, []string{"org-a|3"}, h.takeEnqueued(), "2 and 1: org-a keeps the odd one")
		h.reconcile("org-a|3", true, nil)
		require.Equal(t, []string{"org-b|1"}, h.takeEnqueued())
		require.True(t, h.reconcile("org-b|1", true, nil))
		require.False(t, h.reconcile("org-c|1", true, nil))
		require.Equal(t, []string{"org-a|2"}, h.takeEnqueued(), "1 each")
	})
}

// TestUnavailableGateSeed: a new leader takes the slots and turns from the
// Workspaces; a False one whose mount was never ready takes none.
func TestUnavailableGateSeed(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t, "1", 100)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	workspace := func(name string, status corev1.ConditionStatus, reason string, minute int, everReady bool) *tenancyv1alpha1.Workspace {
		ws := mountedWorkspace(kubeClusterRef)
		ws.Name = name
		if status != "" {
			ws.Status.Conditions = conditionsv1alpha1.Conditions{{Type: mount.ConditionType, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(base.Add(time.Duration(minute) * time.Minute))}}
		}
		if everReady {
			setEverReady(ws)
		}
		return ws
	}
	h.seed([]*tenancyv1alpha1.Workspace{
		workspace("false-1", corev1.ConditionFalse, mount.ReasonMountNotReady, 0, true),
		workspace("false-2", corev1.ConditionFalse, mount.ReasonMountNotReady, 1, true), // beyond the limit: kept
		workspace("never-ready", corev1.ConditionFalse, mount.ReasonMountObjectNotFound, 0, false),
		workspace("held-later", corev1.ConditionUnknown, mount.ReasonGateHeld, 5, true),
		workspace("held", corev1.ConditionUnknown, mount.ReasonGateHeld, 3, true),
		workspace("delayed", corev1.ConditionUnknown, mount.ReasonGateDelayed, 0, true),
		workspace("ready", corev1.ConditionTrue, mount.ReasonMountReady, 0, true),
		workspace("none", "", "", 0, false),
	})
	require.Equal(t, 4, h.len(), "two False, two held")
	require.Equal(t, []bool{true, true, false}, h.admitted("root:org|false-1", "root:org|false-2", "root:org|new"))
	h.recovered("root:org|false-1")
	require.Empty(t, h.takeEnqueued(), "false-2 is still beyond the limit")
	h.recovered("root:org|false-2")
	require.Equal(t, []string{"root:org|held"}, h.takeEnqueued(), "held before the leader changed, first, in the order they were held")
}

// setEverReady gives ws a status annotation of a mount ready once, not
// ready now.
func setEverReady(ws *tenancyv1alpha1.Workspace) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	ready := mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady, LastTransitionTime: at}
	status := mount.Status{Phase: mount.PhaseConnecting, Reason: mount.ReasonMountNotReady}.WithHistory(&ready, metav1.NewTime(at.Add(time.Minute)))
	if ws.Annotations == nil {
		ws.Annotations = map[string]string{}
	}
	ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
}

// checkGate checks the invariants of g after an operation (unavailableGate):
// no grant beyond the limit; while a tenant waits, none holds more than the
// water level of the max-min shares, and no slot is left free while a
// tenant below its share waits.
func checkGate(t *testing.T, g *unavailableGate, limit, countedBefore int) (counted int) {
	t.Helper()
	g.lock.Lock()
	defer g.lock.Unlock()
	slots := map[tenant.Name]int{}
	demand := map[tenant.Name]int{}
	waiting := map[tenant.Name]bool{}
	for _, e := range g.entries {
		require.True(t, e.wants || e.counted(), "an entry neither wanted nor counted is dropped")
		require.False(t, e.slot && !e.wants, "a slot is wanted")
		if e.counted() {
			counted++
		}
		if e.wants {
			demand[e.tenant]++
		}
		if e.slot {
			slots[e.tenant]++
		}
		if e.waiting() {
			waiting[e.tenant] = true
		}
	}
	require.LessOrEqual(t, counted, max(limit, countedBefore), "no slot granted beyond the limit")
	if len(waiting) == 0 || counted > limit {
		return counted
	}
	// The water level: the least w with sum(min(demand, w)) >= min(limit, sum(demand)).
	total := 0
	for _, n := range demand {
		total += n
	}
	level := 0
	for sum := 0; sum < min(limit, total); {
		level++
		sum = 0
		for _, n := range demand {
			sum += min(n, level)
		}
	}
	for tn, n := range slots {
		require.LessOrEqual(t, n, max(level, 1), "tenant %s above its share while another waits (slots %v, demand %v)", tn, slots, demand)
	}
	if free := limit - counted; free > 0 {
		for tn := range waiting {
			require.GreaterOrEqual(t, slots[tn], min(level, demand[tn])-1, "a free slot left while tenant %s waits below its share", tn)
		}
	}
	return counted
}

// FuzzUnavailableGate drives a gate with random sequences of reconciles
// (want False or not, the write failing or not), deletes and leader
// changes (a new gate seeded from what kcp has) across tenants, and checks
// its invariants after each (checkGate), and that kcp never has more
// Workspaces False with a slot than the limit.
func FuzzUnavailableGate(f *testing.F) {
	f.Add(uint8(2), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(uint8(1), []byte{0x10, 0x11, 0x12, 0x21, 0x30, 0xf0, 0x41, 0x52})
	f.Add(uint8(3), []byte{0x00, 0x01, 0x02, 0x03, 0x24, 0x45, 0x66, 0x87, 0xe0, 0xc1, 0x13, 0x9a})
	f.Fuzz(func(t *testing.T, limitByte uint8, ops []byte) {
		limit := int(limitByte % 5)
		h := newGateHarness(t, fmt.Sprint(limit), 100)
		keyOf := func(b byte) string { return fmt.Sprintf("org-%d|ws-%d", b%3, (b/3)%4) }
		counted := 0
		for _, op := range ops {
			before := snapshotGate(h.unavailableGate)
			key := keyOf(op & 0x0f)
			switch op >> 4 {
			case 0, 1, 2, 3, 4: // wants False, written
				h.reconcile(key, true, nil)
			case 5, 6: // recovered, written
				h.reconcile(key, false, nil)
			case 7, 8: // wants False, the write fails
				h.reconcile(key, true, errWrite)
			case 9: // recovered, the write fails
				h.reconcile(key, false, errWrite)
			case 10, 11: // deleted
				h.forget(key)
				delete(h.kcpFalse, key)
			case 12, 13: // the enqueued Workspaces reconciled, their mounts still not ready
				for _, k := range h.takeEnqueued() {
					h.reconcile(k, true, nil)
				}
			default: // a leader change: a new gate seeded from kcp
				var all []*tenancyv1alpha1.Workspace
				for k := range h.kcpFalse {
					all = append(all, gateWorkspace(k, corev1.ConditionFalse, mount.ReasonMountNotReady))
				}
				h.unavailableGate.lock.Lock()
				for k, e := range h.entries {
					if e.waiting() && !h.kcpFalse[k] {
						all = append(all, gateWorkspace(k, corev1.ConditionUnknown, mount.ReasonGateHeld))
					}
				}
				h.unavailableGate.lock.Unlock()
				next := newGateHarness(t, fmt.Sprint(limit), 100)
				next.kcpFalse = h.kcpFalse
				next.seed(all)
				h = next
				counted = len(h.kcpFalse)
			}
			require.LessOrEqual(t, len(h.kcpFalse), max(limit, counted), "kcp has more False than the limit")
			counted = checkGate(t, h.unavailableGate, limit, counted)
			if op>>4 < 14 {
				checkOldestFirst(t, before, snapshotGate(h.unavailableGate))
			}
		}
	})
}

// snapshotGate copies the entries of g.
func snapshotGate(g *unavailableGate) map[string]gateEntry {
	g.lock.Lock()
	defer g.lock.Unlock()
	entries := make(map[string]gateEntry, len(g.entries))
	for key, e := range g.entries {
		entries[key] = *e
	}
	return entries
}

// checkOldestFirst checks that an operation granted no slot to a Workspace
// (one kcp did not have False still) while one of its tenant held longer
// waits.
func checkOldestFirst(t *testing.T, before, after map[string]gateEntry) {
	t.Helper()
	for key, e := range after {
		if was, found := before[key]; !e.slot || (found && (was.slot || was.counted())) {
			continue
		}
		for other, w := range after {
			if w.tenant == e.tenant && w.waiting() && w.turn < e.turn {
				t.Fatalf("%s granted a slot while %s of its tenant, held longer, waits", key, other)
			}
		}
	}
}

// gateWorkspace is the Workspace of a test key with the condition given,
// whose mount was ready once.
func gateWorkspace(key string, status corev1.ConditionStatus, reason string) *tenancyv1alpha1.Workspace {
	cluster, name, _ := strings.Cut(key, "|")
	ws := mountedWorkspace(kubeClusterRef)
	ws.Name = name
	ws.Annotations[logicalcluster.AnnotationKey] = cluster
	ws.Status.Conditions = conditionsv1alpha1.Conditions{{Type: mount.ConditionType, Status: status, Reason: reason}}
	setEverReady(ws)
	return ws
}

// TestUnavailableGateConcurrentLeaders: workers of successive leaders (each
// a new gate seeded from kcp) reconciling Workspaces of three tenants at
// once never leave kcp with more Workspaces False than the limit, and the
// gate's count agrees with kcp's when they are done (run with -race).
func TestUnavailableGateConcurrentLeaders(t *testing.T) {
	t.Parallel()
	const limit, leaders, workers, rounds = 4, 5, 8, 300
	var kcpLock sync.Mutex
	kcp := map[string]corev1.ConditionStatus{} // key: the condition kcp has
	falseNow, overshoot := 0, 0
	write := func(key string, status corev1.ConditionStatus) {
		kcpLock.Lock()
		defer kcpLock.Unlock()
		if kcp[key] == corev1.ConditionFalse {
			falseNow--
		}
		kcp[key] = status
		if status == corev1.ConditionFalse {
			falseNow++
			if falseNow > limit {
				overshoot++
			}
		}
	}
	for leader := range leaders {
		v := intstr.FromInt32(limit)
		g := newUnavailableGate(&v, "test-"+t.Name(), func() int { return 100 }, testKeyTenant, func(string) {})
		kcpLock.Lock()
		all := make([]*tenancyv1alpha1.Workspace, 0, len(kcp))
		for key, status := range kcp {
			reason := mount.ReasonMountNotReady
			if status == corev1.ConditionUnknown {
				reason = mount.ReasonGateHeld
			}
			all = append(all, gateWorkspace(key, status, reason))
		}
		kcpLock.Unlock()
		g.seed(all)
		// One worker per key at once, as the workqueue has it: each worker
		// owns the keys of its number.
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(leader+1), uint64(w+1))) //nolint:gosec // small, positive
				for range rounds {
					key := fmt.Sprintf("org-%d|ws-%d-%d", r.IntN(3), w, r.IntN(4))
					wantsFalse, fails := r.IntN(3) > 0, r.IntN(5) == 0
					slot := false
					if wantsFalse {
						slot = g.admit(key)
					} else {
						g.release(key)
					}
					var err error
					switch {
					case fails:
						err = errWrite
					case slot:
						write(key, corev1.ConditionFalse)
					case wantsFalse:
						write(key, corev1.ConditionUnknown)
					default:
						write(key, corev1.ConditionTrue)
					}
					g.wrote(key, slot, err)
				}
			}()
		}
		wg.Wait()
		g.lock.Lock()
		inKCP := 0
		for _, e := range g.entries {
			if e.inKCP {
				inKCP++
			}
		}
		g.lock.Unlock()
		kcpLock.Lock()
		require.Equal(t, falseNow, inKCP, "leader %d: the gate counts what kcp has False", leader)
		kcpLock.Unlock()
	}
	require.Zero(t, overshoot, "kcp had more than %d Workspaces False at once", limit)
}

func TestFairShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit         int
		demand, slots map[tenant.Name]int
		want          map[tenant.Name]int
	}{
		{limit: 2, demand: map[tenant.Name]int{"a": 4}, want: map[tenant.Name]int{"a": 2}},
		{limit: 2, demand: map[tenant.Name]int{"a": 4, "b": 1}, want: map[tenant.Name]int{"a": 1, "b": 1}},
		{limit: 10, demand: map[tenant.Name]int{"a": 1, "b": 1, "c": 10, "d": 10}, want: map[tenant.Name]int{"a": 1, "b": 1, "c": 4, "d": 4}},
		{limit: 5, demand: map[tenant.Name]int{"a": 9, "b": 9, "c": 9}, slots: map[tenant.Name]int{"c": 3}, want: map[tenant.Name]int{"a": 2, "b": 1, "c": 2}},
		{limit: 1, demand: map[tenant.Name]int{"a": 1, "b": 1}, slots: map[tenant.Name]int{"b": 1}, want: map[tenant.Name]int{"b": 1}},
		{limit: 0, demand: map[tenant.Name]int{"a": 1}, want: map[tenant.Name]int{}},
	} {
		got := fairShares(tc.limit, tc.demand, tc.slots)
		require.Equal(t, tc.want, got, "limit %d, demand %v, slots %v", tc.limit, tc.demand, tc.slots)
	}
}
