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
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// hostile holds what a string others wrote may carry to a terminal: CSI
// and OSC escapes (a hyperlink), a C1 CSI, a bell, a carriage return and new
// lines, bidi overrides and isolates, zero-width characters, a line
// separator and an invalid byte.
const hostile = "a\x1b[2J\x1b]8;;http://evil\x07link\x1b]8;;\x07\u009b31m\r\nb\u202egnp.exe\u2066c\u2069\u200bd\u2028e\xff"

// requireClean fails unless out is plain lines of text: no control
// character but tab and new line, no format character, no line separator,
// valid UTF-8.
func requireClean(t testing.TB, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("the output is not UTF-8:\n%+q", out)
	}
	for _, r := range out {
		if r == '\t' || r == '\n' {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Fatalf("the output keeps %U:\n%+q", r, out)
		}
	}
}

// hostileReport is a report each string of which, what kcp and the
// virtual workspace serve, is s.
func hostileReport(s string) WhyReport {
	m := flapping()
	m.Spec.MountRef = wsmv1alpha1.MountReference{APIVersion: s, Kind: s, Namespace: s, Name: s}
	st := &m.Status
	st.Phase, st.Reason, st.Message, st.URL, st.Shard, st.WorkspacePhase = s, s, s, s, s, s
	st.Conditions = []wsmv1alpha1.MountCondition{{Type: s, Status: s, Reason: s, Message: s}}
	st.Transitions = append(st.Transitions, wsmv1alpha1.MountTransition{Phase: s, Reason: s, Time: at(time.Minute)})
	ws := kcpWorkspace(true)
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseType(s)
	ws.Status.Conditions = append(ws.Status.Conditions, conditionsv1alpha1.Condition{
		Type: conditionsv1alpha1.ConditionType(s), Status: corev1.ConditionStatus(s), Severity: conditionsv1alpha1.ConditionSeverity(s),
		Reason: s, Message: s, LastTransitionTime: at(time.Minute),
	})
	e := events()[0]
	e.Type, e.Reason, e.Message, e.ReportingController = s, s, s, s
	return WhyReport{Path: logicalcluster.NewPath("root:org:team-a"), Mount: m, Workspace: ws, Events: []corev1.Event{e}}
}

// TestRenderWhyHostile: every field why prints, the mount's and kcp's (a
// Workspace condition's status and severity among them), is cleaned.
func TestRenderWhyHostile(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, RenderWhy(&out, hostileReport(hostile), now))
	requireClean(t, out.String())
	var benign bytes.Buffer
	require.NoError(t, RenderWhy(&benign, hostileReport("x"), now))
	require.Equal(t, strings.Count(benign.String(), "\n"), strings.Count(out.String(), "\n"), "no line added:\n%s", out.String())
	require.Contains(t, out.String(), "gnp.exe c")

	// Errors shown are cleaned too.
	out.Reset()
	require.NoError(t, RenderWhy(&out, WhyReport{MountErr: errString(hostile), WorkspaceErr: errString(hostile), EventsErr: errString(hostile)}, now))
	requireClean(t, out.String())
}

type errString string

func (e errString) Error() string { return string(e) }

// TestTreeHostile: the tree's cells, what the virtual workspace serves and
// kcp's phase, are cleaned.
func TestTreeHostile(t *testing.T) {
	t.Parallel()
	m := wsMount("org", "broken", hostile, hostile, false, time.Minute)
	m.Status.Message = hostile
	root := &Node{Name: "org", Path: logicalcluster.NewPath("root:org"), Children: []*Node{
		{Name: "broken", Path: logicalcluster.NewPath("root:org:broken"), Mounted: true, KCPPhase: hostile, Mount: &m},
		{Name: "other", Path: logicalcluster.NewPath("root:org:other"), KCPPhase: hostile, Note: "children not listed: " + shown(hostile)},
	}}
	var out bytes.Buffer
	require.NoError(t, PrintTree(&out, &out, tablePrinter(true), root, true, false, now))
	requireClean(t, out.String())
	require.Equal(t, 5, strings.Count(out.String(), "\n"), out.String()) // header, 3 rows, summary
}

// TestGetTableHostile: get cleans the Table the virtual workspace serves
// (decodeTable), which cli-runtime's printer only escapes ESC and CR of.
func TestGetTableHostile(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name" + hostile, Type: "string"}, {Name: "Ready", Type: "boolean"}, {Name: "N", Type: "integer"}, {Name: "Obj", Type: "string"}},
		Rows:              []metav1.TableRow{{Cells: []interface{}{hostile, true, 3, map[string]string{"k": hostile}}}},
	})
	require.NoError(t, err)
	answer, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
	require.NoError(t, err)
	obj, err := decodeTable(answer)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(obj, &out))
	requireClean(t, out.String())
	require.Equal(t, 2, strings.Count(out.String(), "\n"), out.String())
	require.Contains(t, out.String(), "true")
}

// FuzzRenderWhy: whatever a string kcp or the virtual workspace serves,
// why's output is plain text, with the lines of a benign report.
func FuzzRenderWhy(f *testing.F) {
	f.Add(hostile)
	f.Add("\x1b]52;c;aGk=\x07")
	f.Add("\u202e\u2067\xc2")
	var benign bytes.Buffer
	if err := RenderWhy(&benign, hostileReport("x"), now); err != nil {
		f.Fatal(err)
	}
	lines := strings.Count(benign.String(), "\n")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // no Shard line: one line fewer
		}
		var out bytes.Buffer
		if err := RenderWhy(&out, hostileReport(s), now); err != nil {
			t.Fatal(err)
		}
		requireClean(t, out.String())
		if got := strings.Count(out.String(), "\n"); got != lines {
			t.Fatalf("%d lines, want %d:\n%s", got, lines, out.String())
		}
	})
}
