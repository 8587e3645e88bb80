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

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// vwServer serves the WorkspaceMounts of root:org as the virtual workspace does, objects or Tables, and watches:
// watch i writes the events of watches[i], then closes unless it is the last, which stays open.
type vwServer struct {
	t       *testing.T
	mounts  []wsmv1alpha1.WorkspaceMount
	watches [][]wsmv1alpha1.WorkspaceMount
	mu      sync.Mutex
	asked   []string // each watch's resourceVersion
}

const vwPath = "/services/workspacemounts/clusters/root:org/apis/workspacemounts.io/v1alpha1/workspacemounts"

var getColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"}, {Name: "Workspace", Type: "string"}, {Name: "Kind", Type: "string"},
	{Name: "Mount", Type: "string"}, {Name: "Phase", Type: "string"}, {Name: "Ready", Type: "boolean"},
	{Name: "Kcp-Phase", Type: "string"}, {Name: "Shard", Type: "string", Priority: 1}, {Name: "URL", Type: "string", Priority: 1},
	{Name: "Reason", Type: "string", Priority: 1},
}

func row(m *wsmv1alpha1.WorkspaceMount) metav1.TableRow {
	s := m.Status
	return metav1.TableRow{Cells: []any{m.Name, s.WorkspacePath, m.Spec.MountRef.Kind, m.Spec.MountRef.Name, s.Phase, s.Ready, s.WorkspacePhase, s.Shard, s.URL, s.Reason}}
}

// watched is the resourceVersion of each watch asked for.
func (s *vwServer) watched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

func (s *vwServer) answer(w http.ResponseWriter, r *http.Request, obj any) {
	w.Header().Set("Content-Type", "application/json")
	assert.NoError(s.t, json.NewEncoder(w).Encode(obj))
}

// table is obj as a Table, when the request asks for one.
func table(r *http.Request, rv string, mounts ...wsmv1alpha1.WorkspaceMount) any {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ColumnDefinitions: getColumns, ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for i := range mounts {
		t.Rows = append(t.Rows, row(&mounts[i]))
	}
	return t
}

func (s *vwServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	asTable := strings.Contains(r.Header.Get("Accept"), "as=Table")
	q := r.URL.Query()
	switch {
	case r.URL.Path == vwPath && q.Get("watch") == "true":
		s.mu.Lock()
		i := len(s.asked)
		s.asked = append(s.asked, q.Get("resourceVersion"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		for _, m := range s.watches[min(i, len(s.watches)-1)] {
			var obj any = m
			if asTable {
				obj = table(r, m.ResourceVersion, m)
			}
			raw, err := json.Marshal(obj)
			assert.NoError(s.t, err)
			assert.NoError(s.t, json.NewEncoder(w).Encode(metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: raw}}))
		}
		w.(http.Flusher).Flush()
		if i >= len(s.watches)-1 {
			<-r.Context().Done()
		}
	case r.URL.Path == vwPath && asTable:
		s.answer(w, r, table(r, "10", s.mounts...))
	case r.URL.Path == vwPath:
		s.answer(w, r, &wsmv1alpha1.WorkspaceMountList{TypeMeta: metav1.TypeMeta{APIVersion: "workspacemounts.io/v1alpha1", Kind: "WorkspaceMountList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: s.mounts})
	case r.URL.Path == vwPath+"/ready":
		m := s.mounts[1]
		if asTable {
			s.answer(w, r, table(r, m.ResourceVersion, m))
			return
		}
		s.answer(w, r, m)
	default:
		http.NotFound(w, r)
	}
}

func getMount(name, phase, reason string, ready bool, rv string) wsmv1alpha1.WorkspaceMount {
	return wsmv1alpha1.WorkspaceMount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "workspacemounts.io/v1alpha1", Kind: "WorkspaceMount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Annotations: map[string]string{logicalcluster.AnnotationKey: "org"}},
		Spec:       wsmv1alpha1.WorkspaceMountSpec{MountRef: wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name + "-cluster"}},
		Status: wsmv1alpha1.WorkspaceMountStatus{Phase: phase, Reason: reason, Ready: ready, WorkspacePath: "root:org:" + name,
			WorkspacePhase: "Ready", Shard: "root", URL: "https://mount.example.com/" + name},
	}
}

// startVW starts a vwServer and writes a kubeconfig whose context is root:org at it.
func startVW(t *testing.T) (*vwServer, string) {
	s := &vwServer{t: t, mounts: []wsmv1alpha1.WorkspaceMount{
		getMount("connecting", "Connecting", "MountNotReady", false, "7"),
		getMount("ready", "Ready", "MountReady", true, "9"),
	}}
	server := httptest.NewServer(s)
	t.Cleanup(server.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kcp"] = &clientcmdapi.Cluster{Server: server.URL + "/clusters/root:org"}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["kcp"] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: "user"}
	cfg.CurrentContext = "kcp"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return s, path
}

// syncBuffer is a bytes.Buffer the command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runCommand runs kubectl-workspacemounts with args until it returns or until returns true of its output.
func runCommand(t *testing.T, kubeconfig string, until func(string) bool, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	cmd := NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	if until == nil {
		require.NoError(t, <-done, errOut.String())
		return out.String(), errOut.String()
	}
	for !until(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("the command ended: %v\n%s%s", err, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	require.NoError(t, <-done, errOut.String())
	return out.String(), errOut.String()
}

func TestGetGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		args []string
	}{
		{file: "get.golden", args: []string{"get"}},
		{file: "get-wide.golden", args: []string{"get", "-o", "wide"}},
		{file: "get-no-headers.golden", args: []string{"get", "--no-headers"}},
		{file: "get-name.golden", args: []string{"get", "-o", "name"}},
		{file: "get-yaml.golden", args: []string{"get", "-o", "yaml"}},
		{file: "get-one.golden", args: []string{"get", "ready"}},
		{file: "get-one-json.golden", args: []string{"get", "ready", "-o", "json"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			_, kubeconfig := startVW(t)
			stdout, _ := runCommand(t, kubeconfig, nil, tc.args...)
			golden(t, tc.file, stdout)
		})
	}
}

func TestGetEmpty(t *testing.T) {
	t.Parallel()
	s, kubeconfig := startVW(t)
	s.mounts = nil
	stdout, stderr := runCommand(t, kubeconfig, nil, "get")
	require.Empty(t, stdout)
	require.Equal(t, "No WorkspaceMounts at root:org.\n", stderr)
}

// TestGetWatchResumes: get -w resumes a watch the server closes, from the last resource version it saw.
func TestGetWatchResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file  string
		lines int
		args  []string
	}{
		{file: "get-watch.golden", lines: 5, args: []string{"get", "-w"}},
		{file: "get-watch-name.golden", lines: 4, args: []string{"get", "-w", "-o", "name"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			s, kubeconfig := startVW(t)
			s.watches = [][]wsmv1alpha1.WorkspaceMount{
				{getMount("connecting", "Ready", "MountReady", true, "11")},
				{getMount("connecting", "Connecting", "MountNotReady", false, "12")},
			}
			stdout, _ := runCommand(t, kubeconfig, func(out string) bool { return strings.Count(out, "\n") == tc.lines }, tc.args...)
			golden(t, tc.file, stdout)
			require.Equal(t, []string{"10", "11"}, s.watched()[:2], "the watch after the server closed the first resumes at its last event")
		})
	}
}

// TestWhyWatchResumes: why -w prints a report at each event, across a watch the server closes.
func TestWhyWatchResumes(t *testing.T) {
	t.Parallel()
	s, kubeconfig := startVW(t)
	s.watches = [][]wsmv1alpha1.WorkspaceMount{
		{getMount("connecting", "Ready", "MountReady", true, "11")},
		{getMount("connecting", "Connecting", "MountNotReady", false, "12")},
	}
	stdout, _ := runCommand(t, kubeconfig, func(out string) bool { return strings.Count(out, "\n--- ") == 2 }, "why", "connecting", "-w")
	require.Equal(t, 3, strings.Count(stdout, "Workspace:     root:org:connecting"), stdout)
	require.Equal(t, []string{"10", "11"}, s.watched()[:2])
}
