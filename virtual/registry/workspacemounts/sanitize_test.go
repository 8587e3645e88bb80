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
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// TestFromWorkspaceSpoofingCharacters: what a tenant wrote (an invalid
// reference on the Workspace, a status annotation of their own) reaches the
// WorkspaceMount, its JSON and its Table row without format characters
// (bidi controls, zero-width ones), each replaced by a space.
func TestFromWorkspaceSpoofingCharacters(t *testing.T) {
	t.Parallel()
	status := `{"phase":"Connecting","url":"https://x.example/` + "\u202e" + `gnp.exe","reason":"Mount` + "\u200b" + `NotReady",` +
		`"message":"ok ` + "\u202e" + `gnp.exe","mountRef":{"name":"` + "\u2066" + `x"},` +
		`"conditions":[{"type":"A` + "\u2060" + `B","status":"False","message":"ok ` + "\u202e" + `gnp.exe ` + "\u200b\u2066" + `x` + "\u2069\ufeff" + `"}]}`
	ws := &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "spoof",
			Annotations: map[string]string{logicalcluster.AnnotationKey: "c1", mount.StatusAnnotationKey: status},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
			APIVersion: "contrib.kcp.io/v1alpha1", Kind: "Kube\u200dCluster", Name: "evil\u202egnp.exe", Namespace: "\u2067ns",
		}}},
	}
	wsm := FromWorkspace(mount.Rule{}, ws, logicalcluster.NewPath("root:org"))
	require.NotNil(t, wsm)

	require.Equal(t, "evil gnp.exe", wsm.Spec.MountRef.Name)
	require.Equal(t, "Kube Cluster", wsm.Spec.MountRef.Kind)
	require.Equal(t, " ns", wsm.Spec.MountRef.Namespace)
	require.Equal(t, "https://x.example/ gnp.exe", wsm.Status.URL)
	require.Equal(t, "Mount NotReady", wsm.Status.Reason)
	require.Equal(t, "ok  gnp.exe", wsm.Status.Message)
	require.Len(t, wsm.Status.Conditions, 1)
	require.Equal(t, "A B", wsm.Status.Conditions[0].Type)
	require.Equal(t, "ok  gnp.exe   x  ", wsm.Status.Conditions[0].Message)

	data, err := json.Marshal(wsm)
	require.NoError(t, err)
	requireNoFormatCharacters(t, "the WorkspaceMount's JSON", string(data))

	table, err := tableConvertor{}.ConvertToTable(context.Background(), wsm, nil)
	require.NoError(t, err)
	require.Len(t, table.Rows, 1)
	cells := fmt.Sprint(table.Rows[0].Cells...)
	requireNoFormatCharacters(t, "the Table row", cells)
	require.Contains(t, cells, " ns/evil gnp.exe")
	require.Contains(t, cells, "https://x.example/ gnp.exe")
}

// requireNoFormatCharacters fails if s holds a rune of category Cf or Cc.
func requireNoFormatCharacters(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		require.False(t, unicode.In(r, unicode.Cf, unicode.Cc), "%s holds %U at byte %d: %+q", what, r, i, s)
	}
}
