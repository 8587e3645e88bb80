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
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

func tableObject(cluster, name string, age time.Duration) *wsmv1alpha1.WorkspaceMount {
	wsm := &wsmv1alpha1.WorkspaceMount{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, ResourceVersion: "17",
			Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
		},
		Spec: wsmv1alpha1.WorkspaceMountSpec{MountRef: wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "kc"}},
		Status: wsmv1alpha1.WorkspaceMountStatus{
			Phase: "Ready", Ready: true, URL: "https://kc.example.io", Reason: "MountReady", WorkspacePhase: "Unavailable",
			WorkspacePath: "root:org:" + name,
		},
	}
	if age > 0 {
		wsm.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
		// Ready for the last third of its life.
		wsm.Status.LastTransitionTime = &metav1.Time{Time: time.Now().Add(-age / 3)}
	}
	return wsm
}

// lastContacts is a ShardContacts of fixed answers: how long ago each
// shard answered, negative if never.
type lastContacts map[string]time.Duration

func (c lastContacts) Names() []string { return slices.Sorted(maps.Keys(c)) }

func (c lastContacts) LastContact(shard string) (time.Duration, bool) {
	since, found := c[shard]
	return since, found && since >= 0
}

func TestConvertToTable(t *testing.T) {
	t.Parallel()
	var convertor tableConvertor

	t.Run("columns", func(t *testing.T) {
		t.Parallel()
		table, err := convertor.ConvertToTable(context.Background(), tableObject("c1", "a", time.Hour), nil)
		require.NoError(t, err)
		names := make([]string, 0, len(table.ColumnDefinitions))
		wide := map[string]bool{}
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
			wide[c.Name] = c.Priority == 1
			require.NotEmpty(t, c.Description, c.Name)
			require.Contains(t, []string{"string", "boolean"}, c.Type, c.Name)
		}
		require.Equal(t, []string{"Name", "Workspace", "Kind", "Mount", "Phase", "Ready", "Kcp-Phase", "Age", "Cluster", "Shard", "URL", "Reason", "Since"}, names)
		for _, name := range []string{"Cluster", "Shard", "URL", "Reason", "Since"} {
			require.True(t, wide[name], "%s is a wide column", name)
		}
		for _, name := range []string{"Name", "Workspace", "Kind", "Mount", "Phase", "Ready", "Kcp-Phase", "Age"} {
			require.False(t, wide[name], "%s is a default column", name)
		}
		require.Equal(t, "name", table.ColumnDefinitions[0].Format)
	})

	t.Run("object", func(t *testing.T) {
		t.Parallel()
		wsm := tableObject("c1", "a", 3*time.Hour)
		table, err := convertor.ConvertToTable(context.Background(), wsm, &metav1.TableOptions{})
		require.NoError(t, err)
		require.Equal(t, "17", table.ResourceVersion)
		require.Len(t, table.Rows, 1)
		require.Equal(t, []interface{}{"a", "root:org:a", "KubeCluster", "kc", "Ready", true, "Unavailable", "3h", "c1", nil, "https://kc.example.io", "MountReady", "60m"}, table.Rows[0].Cells)
		require.Same(t, wsm, table.Rows[0].Object.Object)
		require.Len(t, table.Rows[0].Cells, len(table.ColumnDefinitions))
	})

	t.Run("namespaced mount object and unknown age", func(t *testing.T) {
		t.Parallel()
		wsm := tableObject("c2", "b", 0)
		wsm.Spec.MountRef.Namespace = "ns"
		wsm.Status = wsmv1alpha1.WorkspaceMountStatus{Phase: "Unknown", Reason: ReasonPending}
		table, err := convertor.ConvertToTable(context.Background(), wsm, nil)
		require.NoError(t, err)
		require.Equal(t, []interface{}{"b", nil, "KubeCluster", "ns/kc", "Unknown", false, nil, "<unknown>", "c2", nil, "", "Pending", nil}, table.Rows[0].Cells, "no lastTransitionTime: SINCE <none>")
	})

	t.Run("no headers", func(t *testing.T) {
		t.Parallel()
		table, err := convertor.ConvertToTable(context.Background(), tableObject("c1", "a", time.Minute), &metav1.TableOptions{NoHeaders: true})
		require.NoError(t, err)
		require.Empty(t, table.ColumnDefinitions)
		require.Len(t, table.Rows, 1)
		require.Len(t, table.Rows[0].Cells, 13)
	})

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		remaining := int64(4)
		list := &wsmv1alpha1.WorkspaceMountList{
			ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "token", RemainingItemCount: &remaining},
			Items:    []wsmv1alpha1.WorkspaceMount{*tableObject("c1", "a", time.Hour), *tableObject("c2", "b", 2*time.Minute)},
		}
		table, err := convertor.ConvertToTable(context.Background(), list, &metav1.TableOptions{})
		require.NoError(t, err)
		require.Equal(t, "99", table.ResourceVersion)
		require.Equal(t, "token", table.Continue)
		require.Equal(t, &remaining, table.RemainingItemCount)
		require.Len(t, table.ColumnDefinitions, 13)
		require.Len(t, table.Rows, 2)
		require.Equal(t, "a", table.Rows[0].Cells[0])
		require.Equal(t, "60m", table.Rows[0].Cells[7])
		require.Equal(t, "b", table.Rows[1].Cells[0])
		require.Equal(t, "root:org:b", table.Rows[1].Cells[1])
		require.Equal(t, "c2", table.Rows[1].Cells[8])
		require.Equal(t, "2m", table.Rows[1].Cells[7])
		require.Equal(t, "20m", table.Rows[0].Cells[12])
		require.Equal(t, "40s", table.Rows[1].Cells[12])
		require.Same(t, &list.Items[1], table.Rows[1].Object.Object)
	})

	t.Run("empty list", func(t *testing.T) {
		t.Parallel()
		table, err := convertor.ConvertToTable(context.Background(), &wsmv1alpha1.WorkspaceMountList{}, nil)
		require.NoError(t, err)
		require.NotNil(t, table.Rows)
		require.Empty(t, table.Rows)
		require.Empty(t, table.Continue)
		require.Nil(t, table.RemainingItemCount)
	})

	t.Run("other object", func(t *testing.T) {
		t.Parallel()
		_, err := convertor.ConvertToTable(context.Background(), &metav1.Status{}, nil)
		require.ErrorContains(t, err, "cannot render")
	})

	t.Run("shard, marked by the REST's cell", func(t *testing.T) {
		t.Parallel()
		wsm := tableObject("c1", "a", time.Hour)
		wsm.Status.Shard = "shard-2"
		table, err := convertor.ConvertToTable(context.Background(), wsm, nil)
		require.NoError(t, err)
		require.Equal(t, "shard-2", table.Rows[0].Cells[9], "no cell function: the name")
		r := NewREST(newUnstartedHarness(t).store, allVisible).WithShards(lastContacts{"shard-2": 45 * time.Second, "shard-3": -1, "root": time.Second})
		shard3, root := tableObject("c3", "c", time.Hour), tableObject("c4", "d", time.Hour)
		shard3.Status.Shard, root.Status.Shard = "shard-3", "root"
		table, err = r.ConvertToTable(context.Background(), &wsmv1alpha1.WorkspaceMountList{Items: []wsmv1alpha1.WorkspaceMount{*wsm, *tableObject("c2", "b", time.Hour), *shard3, *root}}, nil)
		require.NoError(t, err)
		require.Equal(t, "shard-2 (unreachable 45s)", table.Rows[0].Cells[9])
		require.Nil(t, table.Rows[1].Cells[9], "no shard (--kubeconfig): <none>")
		require.Equal(t, "shard-3 (unreachable)", table.Rows[2].Cells[9], "never answered")
		require.Equal(t, "root", table.Rows[3].Cells[9], "answers")
	})

	t.Run("through REST", func(t *testing.T) {
		t.Parallel()
		r := NewREST(newUnstartedHarness(t).store, allVisible)
		var obj runtime.Object = tableObject("c1", "a", time.Hour)
		table, err := r.ConvertToTable(context.Background(), obj, nil)
		require.NoError(t, err)
		require.Len(t, table.Rows, 1)
	})
}
