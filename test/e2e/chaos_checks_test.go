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

// This file holds the soak's checks: every Workspace converges to what its
// mount object says, stays so, and carries a history of states that
// existed; and the requests each replica spent.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfence"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// chaosConvergeTimeout bounds how long after the churn stopped the
// Workspaces take to agree with their mount objects.
const chaosConvergeTimeout = 5 * time.Minute

// chaosUnsure are the reasons of a state the plugin gives a Workspace when
// it cannot tell the mount object's, not one the object had.
var chaosUnsure = []string{mount.ReasonMountKindNotAnswering, mount.ReasonMountInformerLimitReached, mount.ReasonPending}

// converge waits until every Workspace agrees with its mount object as kcp
// holds it now (chaosWrong, chaosGateWrong), logs how long that took, and
// returns each Workspace's expected status.
func (e *chaosEnv) converge(t *testing.T) map[string]mount.Status {
	began := time.Now()
	logged := began
	var want map[string]mount.Status
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		var wrong []string
		var err error
		want, wrong, err = e.wrong(t.Context())
		if err != nil {
			return false, err.Error()
		}
		if len(wrong) > 0 && time.Since(logged) > 30*time.Second {
			logged = time.Now()
			t.Logf("after %s, %d Workspaces disagree, e.g. %s", time.Since(began).Round(time.Second), len(wrong), wrong[0])
		}
		return len(wrong) == 0, fmt.Sprintf("%d disagree: %s", len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "; "))
	}, chaosConvergeTimeout, 500*time.Millisecond, "the Workspaces agree with their mount objects")
	took := time.Since(began)
	e.timeline.addf("converged: %d Workspaces agree with their mount objects", len(want))
	t.Logf("time to converge: %s after the churn stopped", took.Round(100*time.Millisecond))
	return want
}

// wrong reads the mount objects and the Workspaces, and returns the
// expected status of each and what disagrees.
func (e *chaosEnv) wrong(ctx context.Context) (map[string]mount.Status, []string, error) {
	objects, err := e.c.dynamic.Cluster(e.org).Resource(kubeClusters.gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	want := map[string]mount.Status{}
	for _, name := range e.names {
		want[name] = chaosExpected(name, nil)
	}
	for i := range objects.Items {
		want[objects.Items[i].GetName()] = chaosExpected(objects.Items[i].GetName(), &objects.Items[i])
	}
	list, err := e.c.kcp.Cluster(e.org).TenancyV1alpha1().Workspaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	workspaces := map[string]*tenancyv1alpha1.Workspace{}
	var wrong []string
	for i := range list.Items {
		ws := &list.Items[i]
		workspaces[ws.Name] = ws
		if w := chaosWrong(ws, want[ws.Name]); w != "" {
			wrong = append(wrong, ws.Name+": "+w)
		}
	}
	if w := e.gateWrong(workspaces); w != "" {
		wrong = append(wrong, w)
	}
	sort.Strings(wrong)
	return want, wrong, nil
}

// chaosWrong tells how ws disagrees with want, its mount's status by the
// contract: the annotations, the condition (True when ready, else False or
// held by the gate), kcp's WorkspaceMountReady, spec.URL and kcp's phase.
func chaosWrong(ws *tenancyv1alpha1.Workspace, want mount.Status) string {
	got, found := mount.StatusOf(ws.Annotations)
	switch {
	case !found:
		return "no readable status annotation"
	case ws.Annotations[mount.PhaseAnnotationKey] != string(got.Phase):
		return fmt.Sprintf("%s %q, the status says %s", mount.PhaseAnnotationKey, ws.Annotations[mount.PhaseAnnotationKey], got.Phase)
	case got.Phase != want.Phase || got.Ready != want.Ready || got.Reason != want.Reason || got.URL != want.URL:
		return fmt.Sprintf("status %s/%t/%s %q, want %s/%t/%s %q", got.Phase, got.Ready, got.Reason, got.URL, want.Phase, want.Ready, want.Reason, want.URL)
	case want.Phase != mount.PhaseNotFound && got.Message != want.Message:
		return fmt.Sprintf("message %q, want %q", got.Message, want.Message)
	}
	own, kcpOwn := chaosCondition(ws, mount.ConditionType), chaosCondition(ws, tenancyv1alpha1.MountConditionReady)
	if own == nil || kcpOwn == nil {
		return fmt.Sprintf("conditions %s: %v, %s: %v", mount.ConditionType, own, tenancyv1alpha1.MountConditionReady, kcpOwn)
	}
	held := own.Status == corev1.ConditionUnknown && own.Reason == mount.ReasonGateHeld
	switch {
	case want.Ready && (own.Status != corev1.ConditionTrue || own.Reason != want.Reason):
		return fmt.Sprintf("condition %s %s, want True %s", own.Status, own.Reason, want.Reason)
	case !want.Ready && !held && (own.Status != corev1.ConditionFalse || own.Reason != want.Reason):
		return fmt.Sprintf("condition %s %s, want False %s (or Unknown %s)", own.Status, own.Reason, want.Reason, mount.ReasonGateHeld)
	}
	kcpWant := corev1.ConditionFalse
	switch {
	case want.Phase == mount.PhaseReady && want.URL != "" && (mount.URLRule{}).Check(want.URL) == nil:
		kcpWant = corev1.ConditionTrue // kcp's https form; else MountObjectInvalidURL
	case held:
		kcpWant = corev1.ConditionUnknown
	}
	if kcpOwn.Status != kcpWant {
		return fmt.Sprintf("%s %s %s, want %s", tenancyv1alpha1.MountConditionReady, kcpOwn.Status, kcpOwn.Reason, kcpWant)
	}
	if want.URL != "" && chaosURLs.Check(want.URL) == nil && ws.Spec.URL != want.URL {
		return fmt.Sprintf("spec.URL %q, want %q", ws.Spec.URL, want.URL)
	}
	unavailable := slices.ContainsFunc(ws.Status.Conditions, func(c conditionsv1alpha1.Condition) bool {
		return c.Status == corev1.ConditionFalse && strings.HasPrefix(string(c.Type), "Workspace")
	})
	phase := ws.Status.Phase
	switch {
	case (phase == "" || phase == corev1alpha1.LogicalClusterPhaseScheduling) && !want.Ready:
		// Never ready since it was created: kcp has not made it Ready yet.
	case unavailable && phase != corev1alpha1.LogicalClusterPhaseUnavailable,
		!unavailable && phase != corev1alpha1.LogicalClusterPhaseReady:
		return fmt.Sprintf("kcp's phase %s, with a Workspace* condition False: %t", phase, unavailable)
	}
	return ""
}

// gateWrong tells how the gate's verdicts disagree with --max-unavailable:
// more conditions False with a slot than it allows (a mount never ready
// takes none: its status tells of no ready state), or a Workspace held
// while a slot is free.
func (e *chaosEnv) gateWrong(workspaces map[string]*tenancyv1alpha1.Workspace) string {
	limit := max(1, e.size.workspaces/5)
	var unavailable, held int
	for _, ws := range workspaces {
		if c := chaosCondition(ws, mount.ConditionType); c != nil {
			status, _ := mount.StatusOf(ws.Annotations)
			switch {
			case c.Status == corev1.ConditionFalse && status.EverReady():
				unavailable++
			case c.Status == corev1.ConditionUnknown && c.Reason == mount.ReasonGateHeld:
				held++
			}
		}
	}
	switch {
	case unavailable > limit:
		return fmt.Sprintf("the gate: %d conditions False of mounts once ready, --max-unavailable=%d", unavailable, limit)
	case held > 0 && unavailable < limit:
		return fmt.Sprintf("the gate: %d held while only %d of %d slots are taken", held, unavailable, limit)
	}
	return ""
}

func chaosCondition(ws *tenancyv1alpha1.Workspace, conditionType conditionsv1alpha1.ConditionType) *conditionsv1alpha1.Condition {
	for i := range ws.Status.Conditions {
		if ws.Status.Conditions[i].Type == conditionType {
			return &ws.Status.Conditions[i]
		}
	}
	return nil
}

// stay watches the Workspaces for size.stay, past a Lease, and fails on any
// write that takes one away from want (a replica writing old state after it
// lost the Lease), or that moves a status's last transition back.
func (e *chaosEnv) stay(t *testing.T, want map[string]mount.Status) {
	list, err := e.c.kcp.Cluster(e.org).TenancyV1alpha1().Workspaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	workspaces := map[string]*tenancyv1alpha1.Workspace{}
	for i := range list.Items {
		workspaces[list.Items[i].Name] = &list.Items[i]
	}
	ctx, cancel := context.WithTimeout(t.Context(), e.size.stay)
	defer cancel()
	w, err := e.c.kcp.Cluster(e.org).TenancyV1alpha1().Workspaces().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	began := time.Now()
	events := 0
	for event := range w.ResultChan() {
		ws, ok := event.Object.(*tenancyv1alpha1.Workspace)
		if !ok || event.Type != watch.Modified {
			require.NotEqual(t, watch.Error, event.Type, "watching the Workspaces: %v", event.Object)
			continue
		}
		events++
		before := workspaces[ws.Name]
		workspaces[ws.Name] = ws
		at := time.Since(began).Round(100 * time.Millisecond)
		if wrong := chaosWrong(ws, want[ws.Name]); wrong != "" {
			t.Errorf("+%s after convergence, a write took %s away from the agreed state: %s", at, ws.Name, wrong)
		}
		if wrong := e.gateWrong(workspaces); wrong != "" {
			t.Errorf("+%s after convergence: %s", at, wrong)
		}
		old, _ := mount.StatusOf(before.Annotations)
		now, _ := mount.StatusOf(ws.Annotations)
		if now.LastTransitionTime.Before(&old.LastTransitionTime) {
			t.Errorf("+%s: %s's last transition went back from %s to %s", at, ws.Name, old.LastTransitionTime, now.LastTransitionTime)
		}
	}
	require.GreaterOrEqual(t, time.Since(began), e.size.stay-time.Second, "the watch ended early")
	e.timeline.addf("stayed: %d Workspace writes in %s after convergence, none away from the agreed state", events, e.size.stay)
	leader := e.waitLeader(t, nil)
	t.Logf("after %s of watching: %d writes of Workspaces, %s leads", e.size.stay, events, e.replicas[leader].Name)
}

// checkHistory checks the transitions each Workspace's status records:
// each a state its mount object may have had (or one the plugin gives
// when it cannot tell, chaosUnsure), each a change from the one before,
// their times never going back, none before the soak or after now.
func (e *chaosEnv) checkHistory(t *testing.T, churn *chaosChurn) {
	list, err := e.c.kcp.Cluster(e.org).TenancyV1alpha1().Workspaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	now := time.Now().Add(time.Second)
	notBefore := e.timeline.began.Add(-time.Second)
	transitions, unsure := 0, map[string]int{}
	for _, ws := range list.Items {
		status, found := mount.StatusOf(ws.Annotations)
		require.True(t, found, "%s: no status annotation", ws.Name)
		existed := churn.existedStates(ws.Name)
		history := status.Transitions()
		for i, tr := range history {
			transitions++
			state := chaosState{phase: tr.Phase, ready: tr.Ready, reason: tr.Reason}
			switch {
			case slices.Contains(chaosUnsure, tr.Reason):
				unsure[tr.Reason]++
			case !existed[state]:
				t.Errorf("%s: transition %d to %s, a state its mount object never had (it had %v)", ws.Name, i, state, existed)
			}
			if tr.Time.Before(&metav1.Time{Time: notBefore}) || tr.Time.After(now) {
				t.Errorf("%s: transition %d at %s, outside the soak (%s to %s)", ws.Name, i, tr.Time, notBefore, now)
			}
			if i == 0 {
				continue
			}
			if prev := history[i-1]; tr.Time.Before(&prev.Time) {
				t.Errorf("%s: transition %d at %s, before transition %d at %s", ws.Name, i, tr.Time, i-1, prev.Time)
			} else if prev.Phase == tr.Phase && prev.Ready == tr.Ready {
				t.Errorf("%s: transition %d to %s/%t is none: transition %d was the same", ws.Name, i, tr.Phase, tr.Ready, i-1)
			}
		}
		if first := status.FirstSeen(); history[0].Time.Before(&first) {
			t.Errorf("%s: first seen %s, after its first transition %s", ws.Name, first, history[0].Time)
		}
	}
	t.Logf("history: %d transitions of %d Workspaces checked; states of a plugin that could not tell: %v", transitions, len(list.Items), unsure)
}

// restRequests is the replica's rest_client_requests_total by verb.
func restRequests(ctx context.Context, p *framework.Plugin) (map[string]float64, error) {
	m, err := p.ScrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	byVerb := map[string]float64{}
	for verb := range m.LabelValues("rest_client_requests_total", "method") {
		byVerb[verb] = m.Value("rest_client_requests_total", map[string]string{"method": verb})
	}
	return byVerb, nil
}

// keepRequests adds replica i's requests so far to those of its earlier
// lives, before it is killed.
func (e *chaosEnv) keepRequests(t *testing.T, i int) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	byVerb, err := restRequests(ctx, e.replicas[i])
	if err != nil {
		t.Logf("%s's requests before it is killed: %v (not counted)", e.replicas[i].Name, err)
		return
	}
	for verb, n := range byVerb {
		e.requests[i][verb] += n
	}
}

// reportFenced logs how many writes each replica's fence refused
// (leaderfence.ErrFenced in its log, over all its lives).
func (e *chaosEnv) reportFenced(t *testing.T) {
	counts := make([]string, 0, len(e.replicas))
	for _, p := range e.replicas {
		data, err := os.ReadFile(p.LogPath)
		require.NoError(t, err)
		counts = append(counts, fmt.Sprintf("%s %d", p.Name, strings.Count(string(data), leaderfence.ErrFenced.Error())))
	}
	t.Logf("writes refused by the fence (a replica past its renew deadline): %s", strings.Join(counts, ", "))
}

// reportRequests logs the requests each replica spent, by verb, over all its lives.
func (e *chaosEnv) reportRequests(t *testing.T) {
	lines := make([]string, 0, len(e.replicas))
	var total float64
	for i, p := range e.replicas {
		byVerb, err := restRequests(t.Context(), p)
		require.NoError(t, err, "%s's metrics", p.Name)
		for verb, n := range e.requests[i] {
			byVerb[verb] += n
		}
		verbs := make([]string, 0, len(byVerb))
		var sum float64
		for verb, n := range byVerb {
			verbs = append(verbs, fmt.Sprintf("%s %.0f", verb, n))
			sum += n
		}
		sort.Strings(verbs)
		total += sum
		lines = append(lines, fmt.Sprintf("  %s: %.0f (%s)", p.Name, sum, strings.Join(verbs, ", ")))
	}
	t.Logf("requests to kcp (rest_client_requests_total), %.0f in all:\n%s", total, strings.Join(lines, "\n"))
}
