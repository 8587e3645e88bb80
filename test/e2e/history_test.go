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

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// TestTransitionsAndAvailability: a mount flipped three times (Connecting
// when first seen, Ready, Connecting, Ready) carries its four transitions
// and its ready seconds in the status annotation, and the virtual workspace
// serves them as status.transitions and status.availability (up to the
// current state), and the current state's age in the wide Table's SINCE column; a
// mount never flipped has neither.
func TestTransitionsAndAvailability(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "history")
	url := "https://history.example.io"
	ready := map[string]interface{}{"phase": "Ready", "URL": url}
	connecting := map[string]interface{}{"phase": "Connecting"}
	readyState := mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url}
	connectingState := mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}
	org.mountAll(t, []vwMount{
		{workspace: "flapper", object: "flapper", status: connecting, want: connectingState},
		{workspace: "steady", object: "steady", status: ready, want: readyState},
	})

	// The states last a second or more: the annotation counts whole seconds.
	for _, step := range []struct {
		status map[string]interface{}
		want   mountState
	}{{ready, readyState}, {connecting, connectingState}, {ready, readyState}} {
		time.Sleep(time.Second)
		c.setMountStatus(t, org.path, kubeClusters, "flapper", step.status)
		c.waitForMount(t, org.path, "flapper", step.want)
	}

	status := c.waitForMount(t, org.path, "flapper", readyState)
	transitions := status.Transitions()
	require.Len(t, transitions, 4)
	phases := make([]mount.Phase, 0, len(transitions))
	for _, tr := range transitions {
		phases = append(phases, tr.Phase)
	}
	require.Equal(t, []mount.Phase{mount.PhaseConnecting, mount.PhaseReady, mount.PhaseConnecting, mount.PhaseReady}, phases)
	require.Equal(t, transitions[0].Time.Unix(), status.FirstSeen().Unix(), "first seen Connecting")
	require.Equal(t, transitions[3].Time.Unix(), status.LastTransitionTime.Unix())
	readySpan := transitions[2].Time.Unix() - transitions[1].Time.Unix()
	require.Positive(t, readySpan)
	require.Equal(t, readySpan, status.ReadySeconds, "ready from the second transition to the third")
	steady := c.waitForMount(t, org.path, "steady", readyState)
	require.Empty(t, steady.History, "never flipped")
	require.Nil(t, steady.Since)

	k := newKubectl(t, vwRoute{name: "direct", base: virtualWorkspaceURL, kubeconfig: writeDirectKubeconfig(t)}, adminContext)
	var served wsmv1alpha1.WorkspaceMount
	k.eventually(org.cluster.String(), func(r kubectlResult) (bool, string) {
		if r.err != nil {
			return false, r.err.Error()
		}
		served = wsmv1alpha1.WorkspaceMount{}
		if err := json.Unmarshal([]byte(r.stdout), &served); err != nil {
			return false, err.Error()
		}
		return len(served.Status.Transitions) == 4 && served.Status.Ready, fmt.Sprintf("%d transitions, ready %t", len(served.Status.Transitions), served.Status.Ready)
	}, "get", "workspacemount", "flapper", "-o", "json")
	for i, tr := range transitions {
		got := served.Status.Transitions[i]
		require.Equal(t, []interface{}{string(tr.Phase), tr.Ready, tr.Reason, tr.Time.Unix()}, []interface{}{got.Phase, got.Ready, got.Reason, got.Time.Unix()}, "transition %d", i)
	}
	availability := served.Status.Availability
	require.NotNil(t, availability)
	require.Equal(t, status.FirstSeen().Unix(), availability.Since.Unix())
	require.Equal(t, status.ReadySeconds, availability.ReadySeconds)
	require.Equal(t, status.ObservedSeconds(), availability.ObservedSeconds)
	ratio, _ := availability.At(time.Now(), true)
	require.Regexp(t, `^0\.\d{4}$`, ratio, "not ready for a while: below 1")

	// The wide Table: SINCE, the current state's age, at the end.
	k.eventually(org.cluster.String(), func(r kubectlResult) (bool, string) {
		if r.err != nil {
			return false, r.err.Error()
		}
		rows := rowsByName(tableRows(t, r.stdout))
		since := regexp.MustCompile(`^\d+s$|^\d+m\d*s?$`)
		ok := since.MatchString(rows["flapper"]["SINCE"]) && since.MatchString(rows["steady"]["SINCE"])
		return ok && header(r.stdout)[len(header(r.stdout))-1] == "SINCE", r.stdout
	}, "get", "workspacemounts", "-o", "wide")

	var steadyServed wsmv1alpha1.WorkspaceMount
	require.NoError(t, json.Unmarshal([]byte(k.ok(org.cluster.String(), "get", "workspacemount", "steady", "-o", "json")), &steadyServed))
	require.Empty(t, steadyServed.Status.Transitions, "one state since first seen: lastTransitionTime says it")
	require.Nil(t, steadyServed.Status.Availability)
	require.NotNil(t, steadyServed.Status.LastTransitionTime)
	t.Logf("flapper: %d transitions, availability %+v", len(served.Status.Transitions), *availability)
}
