//go:build e2e

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

package e2e

// This file holds the soak's fault schedule: kcp paused and stopped, the
// leader killed, the new leader frozen past its Lease, in an order and with
// gaps the seed draws, and the timeline of what happened when.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// chaosLeaderTimeout bounds the wait for a leader: kcp back (its informers
// after a restart), a Lease expired, a retry period.
const chaosLeaderTimeout = 3 * time.Minute

// chaosTimeline is what happened when, from its start.
type chaosTimeline struct {
	began time.Time
	lock  sync.Mutex
	lines []string
}

func newChaosTimeline() *chaosTimeline { return &chaosTimeline{began: time.Now()} }

func (tl *chaosTimeline) addf(format string, args ...any) {
	tl.lock.Lock()
	defer tl.lock.Unlock()
	tl.lines = append(tl.lines, fmt.Sprintf("  +%7s  %s", time.Since(tl.began).Round(100*time.Millisecond), fmt.Sprintf(format, args...)))
}

func (tl *chaosTimeline) String() string {
	tl.lock.Lock()
	defer tl.lock.Unlock()
	return strings.Join(tl.lines, "\n")
}

// runFaults runs size.rounds rounds of the three faults, each round in an
// order drawn from seed, with gaps of up to size.gap between them. The last
// fault is always a freeze, and its replica is left frozen (returned): it
// resumes once the Workspaces converged without it (resume).
func (e *chaosEnv) runFaults(t *testing.T, seed int64) *framework.Plugin {
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	gap := func() {
		d := time.Duration(rng.Int64N(int64(e.size.gap))) + time.Second
		time.Sleep(d)
	}
	type fault struct {
		name string
		run  func(t *testing.T)
	}
	var frozen *framework.Plugin
	faults := []fault{
		{"kcp paused", func(t *testing.T) {
			d := e.size.pause/2 + time.Duration(rng.Int64N(int64(e.size.pause/2)))
			e.timeline.addf("kcp paused (SIGSTOP) for %s", d.Round(time.Second))
			require.NoError(t, e.kcp.Pause())
			time.Sleep(d)
			require.NoError(t, e.kcp.Resume())
			e.timeline.addf("kcp resumed (SIGCONT)")
		}},
		{"kcp stopped", func(t *testing.T) {
			d := e.size.down/2 + time.Duration(rng.Int64N(int64(e.size.down/2)))
			e.timeline.addf("kcp stopped (SIGTERM), down for %s", d.Round(time.Second))
			require.NoError(t, e.kcp.StopProcess())
			time.Sleep(d)
			require.NoError(t, e.kcp.StartAgain(t.Context()))
			e.timeline.addf("kcp started again, ready after %s", e.kcp.ReadyAfter.Round(100*time.Millisecond))
		}},
		{"leader killed, the new one frozen", func(t *testing.T) {
			if frozen != nil { // an earlier round's: resumed now, while the other leads
				e.resume(t, frozen)
			}
			frozen = e.killAndFreeze(t, rng)
		}},
	}
	for round := range e.size.rounds {
		rng.Shuffle(len(faults)-1, func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		for _, f := range faults {
			gap()
			e.timeline.addf("round %d: %s", round+1, f.name)
			f.run(t)
		}
	}
	return frozen
}

// killAndFreeze kills the leader (SIGKILL); once the other replica leads,
// starts the first again and freezes the other (SIGSTOP) past its Lease,
// until the first leads again. The frozen replica is returned, still
// frozen. (Started again at once, the killed replica may take the Lease
// itself once it expires.)
func (e *chaosEnv) killAndFreeze(t *testing.T, rng *rand.Rand) *framework.Plugin {
	leader := e.waitLeader(t, nil)
	killed, other := e.replicas[leader], e.replicas[1-leader]
	e.keepRequests(t, leader)
	require.NoError(t, killed.Kill(), "killing %s", killed.Name)
	e.timeline.addf("%s (the leader) killed (SIGKILL)", killed.Name)
	e.waitLeader(t, other)
	e.timeline.addf("%s leads", other.Name)
	time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Second))))
	require.NoError(t, killed.StartAgain(), "starting %s again", killed.Name)
	e.timeline.addf("%s started again, pid %d", killed.Name, killed.Pid())
	require.NoError(t, killed.WaitReady(t.Context(), 2*time.Minute), "%s ready again", killed.Name)
	require.NoError(t, other.Pause(), "freezing %s", other.Name)
	frozenAt := time.Now()
	e.timeline.addf("%s (the leader) frozen (SIGSTOP)", other.Name)
	e.waitLeader(t, killed)
	if wait := chaosLeaseDuration + chaosRetryPeriod - time.Since(frozenAt); wait > 0 {
		time.Sleep(wait)
	}
	e.timeline.addf("%s leads; %s frozen for %s, past its Lease (%s)", killed.Name, other.Name, time.Since(frozenAt).Round(100*time.Millisecond), chaosLeaseDuration)
	return other
}

// resume resumes the frozen replica (SIGCONT) while the other one leads,
// and waits until it no longer says it leads: it finds the Lease another's.
func (e *chaosEnv) resume(t *testing.T, frozen *framework.Plugin) {
	if frozen == nil {
		return
	}
	require.NoError(t, frozen.Resume(), "resuming %s", frozen.Name)
	resumed := time.Now()
	e.timeline.addf("%s resumed (SIGCONT)", frozen.Name)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		m, err := frozen.ScrapeMetrics(t.Context())
		if err != nil {
			return false, err.Error()
		}
		v, _ := m.Sum(resilienceLeaderMetric, nil)
		return v == 0, fmt.Sprintf("%s is %v", resilienceLeaderMetric, v)
	}, chaosLeaderTimeout, 100*time.Millisecond, "%s no longer leads once resumed", frozen.Name)
	e.timeline.addf("%s no longer says it leads, %s after it resumed", frozen.Name, time.Since(resumed).Round(100*time.Millisecond))
}

// waitLeader waits until want (nil: either replica) says it leads
// (workspacemounts_leader 1), and returns its index. A frozen or dead
// replica does not answer, and does not lead.
func (e *chaosEnv) waitLeader(t *testing.T, want *framework.Plugin) int {
	t.Helper()
	leader := -1
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		var states []string
		for i, p := range e.replicas {
			if want != nil && p != want {
				continue
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			m, err := p.ScrapeMetrics(ctx)
			cancel()
			if err != nil {
				states = append(states, p.Name+": "+err.Error())
				continue
			}
			if v, _ := m.Sum(resilienceLeaderMetric, nil); v == 1 {
				leader = i
				return true, ""
			}
			states = append(states, p.Name+": not the leader")
		}
		return false, strings.Join(states, "; ")
	}, chaosLeaderTimeout, 250*time.Millisecond, "a leader")
	return leader
}
