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
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// TestAnswersAtOneResourceVersion: a WorkspaceMount is a function of its
// resourceVersion. A mount with a history (transitions and availability)
// is read by GET, LIST and WATCH, seconds apart, and every answer holds the
// same JSON of it, byte for byte, while its resourceVersion stays.
func TestAnswersAtOneResourceVersion(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "rv-answers")
	url := "https://rv-answers.example.io"
	readyState := mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url}
	org.mountAll(t, []vwMount{{workspace: "flipped", object: "flipped", status: map[string]interface{}{"phase": "Connecting"},
		want: mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady}}})
	time.Sleep(time.Second) // the annotation counts whole seconds
	c.setMountStatus(t, org.path, kubeClusters, "flipped", map[string]interface{}{"phase": "Ready", "URL": url})
	c.waitForMount(t, org.path, "flipped", readyState)

	route := vwRoute{name: "direct", base: virtualWorkspaceURL}
	client := rawClient(t, route, adminContext)
	collection := route.server(org.cluster.String()) + vwResourcePath
	get := func() []byte {
		r := do(t, client, http.MethodGet, collection+"/flipped", "", "")
		require.Equal(t, http.StatusOK, r.code, r.body)
		return []byte(strings.TrimSuffix(r.body, "\n"))
	}
	list := func() []byte {
		r := do(t, client, http.MethodGet, collection+"?fieldSelector=metadata.name%3Dflipped", "", "")
		require.Equal(t, http.StatusOK, r.code, r.body)
		var l struct{ Items []json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(r.body), &l), r.body)
		require.Len(t, l.Items, 1, r.body)
		return l.Items[0]
	}
	watch := func() []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, collection+"?watch=true&fieldSelector=metadata.name%3Dflipped", http.NoBody)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
		require.NoError(t, err)
		var event struct {
			Type   string
			Object json.RawMessage
		}
		require.NoError(t, json.Unmarshal(line, &event), string(line))
		require.Equal(t, "ADDED", event.Type, string(line))
		return event.Object
	}

	deadline := time.Now().Add(vwConvergeTimeout)
	for {
		var served wsmv1alpha1.WorkspaceMount
		require.NoError(t, json.Unmarshal(get(), &served))
		if served.Status.Ready && served.Status.Availability != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the flipped mount is not served with its availability")
		time.Sleep(200 * time.Millisecond)
	}

	// A round reads the object five ways, two seconds apart; a round in
	// which the Workspace changed (another resourceVersion) is read again.
	for round := 1; ; round++ {
		answers := map[string][]byte{}
		for _, read := range []struct {
			name string
			read func() []byte
		}{{"get", get}, {"list", list}, {"watch", watch}, {"get again", get}, {"list again", list}} {
			answers[read.name] = read.read()
			time.Sleep(2 * time.Second)
		}
		versions := map[string]bool{}
		for _, answer := range answers {
			var wsm wsmv1alpha1.WorkspaceMount
			require.NoError(t, json.Unmarshal(answer, &wsm), string(answer))
			require.NotNil(t, wsm.Status.Availability, string(answer))
			versions[wsm.ResourceVersion] = true
		}
		if len(versions) > 1 {
			require.Less(t, round, 5, "the Workspace changed during every round")
			t.Logf("the Workspace changed during round %d (%v): reading again", round, versions)
			continue
		}
		for name, answer := range answers {
			require.Equal(t, string(answers["get"]), string(answer), "%s answers another object at one resourceVersion", name)
		}
		return
	}
}
