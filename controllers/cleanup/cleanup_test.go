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

package cleanup

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func lease(holder string, renewedAgo time.Duration, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(holder),
		RenewTime:            &metav1.MicroTime{Time: now.Add(-renewedAgo)},
		LeaseDurationSeconds: ptr.To(seconds),
	}}
}

func TestCheckLease(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		lease   *coordinationv1.Lease
		err     error
		refused string
	}{
		"held":     {lease: lease("plugin-1", 3*time.Second, 15), refused: "a plugin is running: plugin-1 holds the leader Lease root/default/workspacemounts"},
		"expired":  {lease: lease("plugin-1", 16*time.Second, 15)},
		"released": {lease: lease("", 0, 1)}, // what releaseLease writes: no holder, 1s
		"missing":  {err: apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "workspacemounts")},
		"unreadable": {err: errors.New("connection refused"),
			refused: "cannot read the leader Lease root/default/workspacemounts"},
		"no renew time": {lease: &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("plugin-1")}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := CheckLease(tc.lease, tc.err, now, "root/default/workspacemounts")
			if tc.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.refused)
			if name == "held" {
				require.ErrorContains(t, err, "kubectl scale deployment workspacemounts --replicas=0")
			}
		})
	}
}

func condition(t conditionsv1alpha1.ConditionType, s corev1.ConditionStatus) conditionsv1alpha1.Condition {
	return conditionsv1alpha1.Condition{Type: t, Status: s}
}

func workspace(name string, annotations map[string]string, phase corev1alpha1.LogicalClusterPhaseType, conditions ...conditionsv1alpha1.Condition) tenancyv1alpha1.Workspace {
	ws := tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "10", Annotations: map[string]string{logicalcluster.AnnotationKey: "c1"}},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{}, URL: "https://mount.example"},
		Status:     tenancyv1alpha1.WorkspaceStatus{Phase: phase, Conditions: conditions},
	}
	for k, v := range annotations {
		ws.Annotations[k] = v
	}
	return ws
}

// patch is one patch a test saw.
type patch struct {
	name, subresource, data string
}

func TestRun(t *testing.T) {
	t.Parallel()
	both := map[string]string{mount.PhaseAnnotationKey: "Connecting", mount.StatusAnnotationKey: "{}"}
	phaseOnly := map[string]string{mount.PhaseAnnotationKey: "Ready"}
	own := condition(mount.ConditionType, corev1.ConditionFalse)
	kcps := condition("WorkspaceScheduled", corev1.ConditionTrue)
	page1 := []tenancyv1alpha1.Workspace{
		workspace("unavailable", both, corev1alpha1.LogicalClusterPhaseUnavailable, kcps, own),
		workspace("plain", nil, corev1alpha1.LogicalClusterPhaseReady, kcps),
	}
	page2 := []tenancyv1alpha1.Workspace{
		workspace("annotated", phaseOnly, corev1alpha1.LogicalClusterPhaseReady),
		workspace("condition-only", nil, corev1alpha1.LogicalClusterPhaseUnavailable, own),
	}
	for name, tc := range map[string]struct {
		yes       bool
		lease     *coordinationv1.Lease
		failPatch string // the Workspace whose patches fail
		conflicts int    // status patches that conflict first
		wantErr   string
		want      []string
		patches   []patch
	}{
		"dry run writes nothing": {
			want: []string{
				"c1|unavailable  would remove annotations phase,status; condition WorkspaceMountAvailable (phase Unavailable -> Ready)",
				"c1|annotated  would remove annotations phase",
				"c1|condition-only  would remove condition WorkspaceMountAvailable (phase Unavailable -> Ready)",
				"3 Workspaces to change on 1 shards (dry run: nothing written; run with --yes)",
				"spec.URL of 3 mounted Workspaces is left as it is",
			},
		},
		"yes": {
			yes: true,
			want: []string{
				"c1|unavailable  removed annotations phase,status; condition WorkspaceMountAvailable (phase Unavailable -> Ready)",
				"c1|annotated  removed annotations phase",
				"c1|condition-only  removed condition WorkspaceMountAvailable (phase Unavailable -> Ready)",
				"3 Workspaces changed on 1 shards",
			},
			patches: []patch{
				{"unavailable", "", `{"metadata":{"annotations":{"workspacemounts.io/phase":null,"workspacemounts.io/status":null}}}`},
				{"unavailable", "status", `{"metadata":{"resourceVersion":"11","uid":""},"status":{"conditions":[{"type":"WorkspaceScheduled","status":"True","lastTransitionTime":null}],"phase":"Ready"}}`},
				{"annotated", "", `{"metadata":{"annotations":{"workspacemounts.io/phase":null,"workspacemounts.io/status":null}}}`},
				{"condition-only", "status", `{"metadata":{"resourceVersion":"10","uid":""},"status":{"conditions":null,"phase":"Ready"}}`},
			},
		},
		"a conflict is retried from a fresh read": {
			yes: true, conflicts: 1,
			want: []string{"3 Workspaces changed on 1 shards"},
			patches: []patch{
				{"unavailable", "", `{"metadata":{"annotations":{"workspacemounts.io/phase":null,"workspacemounts.io/status":null}}}`},
				{"unavailable", "status", `{"metadata":{"resourceVersion":"11","uid":""},"status":{"conditions":[{"type":"WorkspaceScheduled","status":"True","lastTransitionTime":null}],"phase":"Ready"}}`},
				{"unavailable", "status", `{"metadata":{"resourceVersion":"12","uid":""},"status":{"conditions":[{"type":"WorkspaceScheduled","status":"True","lastTransitionTime":null}],"phase":"Ready"}}`},
				{"annotated", "", `{"metadata":{"annotations":{"workspacemounts.io/phase":null,"workspacemounts.io/status":null}}}`},
				{"condition-only", "status", `{"metadata":{"resourceVersion":"10","uid":""},"status":{"conditions":null,"phase":"Ready"}}`},
			},
		},
		"one failing Workspace is reported, the others go on": {
			yes: true, failPatch: "unavailable",
			wantErr: "1 Workspaces could not be cleaned up",
			want: []string{
				"c1|unavailable  FAILED: removing the annotations: forbidden",
				"c1|annotated  removed annotations phase",
				"c1|condition-only  removed condition",
				"2 Workspaces changed on 1 shards, 1 failed",
			},
			patches: []patch{
				{"annotated", "", `{"metadata":{"annotations":{"workspacemounts.io/phase":null,"workspacemounts.io/status":null}}}`},
				{"condition-only", "status", `{"metadata":{"resourceVersion":"10","uid":""},"status":{"conditions":null,"phase":"Ready"}}`},
			},
		},
		"a held Lease refuses": {
			yes: true, lease: lease("plugin-1", time.Second, 15),
			wantErr: "a plugin is running",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			var patches []patch
			conflicts := tc.conflicts
			listed := 0
			shard := Shard{
				ListWorkspaces: func(_ context.Context, opts metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
					require.EqualValues(t, PageSize, opts.Limit)
					listed++
					if opts.Continue == "" {
						return &tenancyv1alpha1.WorkspaceList{ListMeta: metav1.ListMeta{Continue: "page2"}, Items: deepCopy(page1)}, nil
					}
					require.Equal(t, "page2", opts.Continue)
					return &tenancyv1alpha1.WorkspaceList{Items: deepCopy(page2)}, nil
				},
				GetWorkspace: func(_ context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
					require.Equal(t, "c1", cluster.String())
					ws := page1[0].DeepCopy()
					delete(ws.Annotations, mount.PhaseAnnotationKey)
					delete(ws.Annotations, mount.StatusAnnotationKey)
					ws.ResourceVersion = "12"
					return ws, nil
				},
				PatchWorkspace: func(_ context.Context, cluster logicalcluster.Name, name string, data []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
					require.True(t, tc.yes, "a dry run patched %s", name)
					if name == tc.failPatch {
						return nil, apierrors.NewForbidden(schema.GroupResource{}, name, errors.New("forbidden"))
					}
					patches = append(patches, patch{name, strings.Join(subresources, ","), string(data)})
					if len(subresources) > 0 && conflicts > 0 {
						conflicts--
						return nil, apierrors.NewConflict(schema.GroupResource{}, name, errors.New("changed"))
					}
					for _, ws := range append(deepCopy(page1), deepCopy(page2)...) {
						if ws.Name == name {
							delete(ws.Annotations, mount.PhaseAnnotationKey)
							delete(ws.Annotations, mount.StatusAnnotationKey)
							ws.ResourceVersion = "11"
							return &ws, nil
						}
					}
					return nil, apierrors.NewNotFound(schema.GroupResource{}, name)
				},
			}
			c := &Cleanup{
				GetLease: func(context.Context) (*coordinationv1.Lease, error) {
					if tc.lease == nil {
						return nil, apierrors.NewNotFound(schema.GroupResource{}, "workspacemounts")
					}
					return tc.lease, nil
				},
				LeaseName: "root/default/workspacemounts",
				Hold:      holdNow,
				Shards:    func(context.Context) ([]Shard, error) { return []Shard{shard}, nil },
				Now:       func() time.Time { return now },
				Out:       &out,
				Yes:       tc.yes,
			}
			_, err := c.Run(context.Background())
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			for _, line := range tc.want {
				require.Contains(t, out.String(), line)
			}
			require.Equal(t, tc.patches, patches)
			if tc.lease != nil {
				require.Zero(t, listed, "listed Workspaces with a held Lease")
			}
			require.NotContains(t, out.String(), "c1|plain", "a Workspace without anything of the plugin")
		})
	}
}

func deepCopy(items []tenancyv1alpha1.Workspace) []tenancyv1alpha1.Workspace {
	copied := make([]tenancyv1alpha1.Workspace, len(items))
	for i := range items {
		items[i].DeepCopyInto(&copied[i])
	}
	return copied
}

// TestRunShardUnreachable: a shard whose Workspaces cannot be listed is
// reported by name, and the other shards are cleaned all the same.
func TestRunShardUnreachable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var patched []string
	reachable := Shard{
		Name: "root",
		ListWorkspaces: func(context.Context, metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
			own := condition(mount.ConditionType, corev1.ConditionFalse)
			return &tenancyv1alpha1.WorkspaceList{Items: []tenancyv1alpha1.Workspace{
				workspace("condition-only", nil, corev1alpha1.LogicalClusterPhaseUnavailable, own),
			}}, nil
		},
		PatchWorkspace: func(_ context.Context, _ logicalcluster.Name, name string, _ []byte, _ ...string) (*tenancyv1alpha1.Workspace, error) {
			patched = append(patched, name)
			ws := workspace(name, nil, corev1alpha1.LogicalClusterPhaseReady)
			return &ws, nil
		},
	}
	down := Shard{
		Name: "shard-2",
		ListWorkspaces: func(context.Context, metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		},
	}
	c := &Cleanup{
		GetLease: func(context.Context) (*coordinationv1.Lease, error) {
			return nil, apierrors.NewNotFound(schema.GroupResource{}, "workspacemounts")
		},
		LeaseName: "root/default/workspacemounts",
		Hold:      holdNow,
		Shards:    func(context.Context) ([]Shard, error) { return []Shard{down, reachable}, nil },
		Now:       func() time.Time { return now },
		Out:       &out,
		Yes:       true,
	}
	result, err := c.Run(context.Background())
	require.ErrorContains(t, err, "shard shard-2: ")
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, []string{"condition-only"}, patched, "the reachable shard is cleaned")
	require.Equal(t, 1, result.Changed)
	require.Contains(t, out.String(), "1 Workspaces changed on 2 shards")
}

// TestRunKCPCondition: kcp's WorkspaceMountReady, which --workspace-url
// keeps, is removed with the plugin's condition on a shard without kcp's
// in-tree mounts controller, and left alone (it is kcp's) on a shard where
// that controller runs.
func TestRunKCPCondition(t *testing.T) {
	t.Parallel()
	both := []conditionsv1alpha1.Condition{
		condition(mount.ConditionType, corev1.ConditionFalse),
		condition(tenancyv1alpha1.MountConditionReady, corev1.ConditionFalse),
	}
	var out bytes.Buffer
	patches := map[string][]string{}
	shard := func(name string, inTree bool) Shard {
		return Shard{
			Name:                   name,
			InTreeMountsController: inTree,
			ListWorkspaces: func(context.Context, metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
				ws := workspace("level-3", nil, corev1alpha1.LogicalClusterPhaseUnavailable, both...)
				return &tenancyv1alpha1.WorkspaceList{Items: []tenancyv1alpha1.Workspace{ws}}, nil
			},
			PatchWorkspace: func(_ context.Context, _ logicalcluster.Name, _ string, data []byte, _ ...string) (*tenancyv1alpha1.Workspace, error) {
				patches[name] = append(patches[name], string(data))
				return nil, nil
			},
		}
	}
	c := &Cleanup{
		GetLease: func(context.Context) (*coordinationv1.Lease, error) {
			return nil, apierrors.NewNotFound(schema.GroupResource{}, "workspacemounts")
		},
		LeaseName: "root/default/workspacemounts",
		Hold:      holdNow,
		Shards: func(context.Context) ([]Shard, error) {
			return []Shard{shard("gate-off", false), shard("gate-on", true)}, nil
		},
		Now: func() time.Time { return now },
		Out: &out,
		Yes: true,
	}
	_, err := c.Run(context.Background())
	require.NoError(t, err)
	require.Contains(t, out.String(), "c1|level-3  removed condition WorkspaceMountAvailable,WorkspaceMountReady (phase Unavailable -> Ready)")
	require.Contains(t, out.String(), "c1|level-3  removed condition WorkspaceMountAvailable\n", "kcp's condition stays where kcp's controller runs")
	require.Equal(t, map[string][]string{
		"gate-off": {`{"metadata":{"resourceVersion":"10","uid":""},"status":{"conditions":null,"phase":"Ready"}}`},
		"gate-on":  {`{"metadata":{"resourceVersion":"10","uid":""},"status":{"conditions":[{"type":"WorkspaceMountReady","status":"False","lastTransitionTime":null}]}}`},
	}, patches)
}

// holdNow is a Lease taken at once and never lost.
func holdNow(ctx context.Context, clean func(context.Context) error) error { return clean(ctx) }

// TestRunHoldsTheLease: the run happens inside Hold, and nothing is listed
// or written when the Lease cannot be taken (a plugin took it after the
// check).
func TestRunHoldsTheLease(t *testing.T) {
	t.Parallel()
	own := condition(mount.ConditionType, corev1.ConditionFalse)
	holding := false
	var listedWhileHeld, listedUnheld int
	shard := Shard{
		ListWorkspaces: func(context.Context, metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
			if holding {
				listedWhileHeld++
			} else {
				listedUnheld++
			}
			return &tenancyv1alpha1.WorkspaceList{Items: []tenancyv1alpha1.Workspace{
				workspace("condition-only", nil, corev1alpha1.LogicalClusterPhaseUnavailable, own),
			}}, nil
		},
		PatchWorkspace: func(_ context.Context, _ logicalcluster.Name, name string, _ []byte, _ ...string) (*tenancyv1alpha1.Workspace, error) {
			require.True(t, holding, "a patch without the Lease")
			ws := workspace(name, nil, corev1alpha1.LogicalClusterPhaseReady)
			return &ws, nil
		},
	}
	var out bytes.Buffer
	c := &Cleanup{
		GetLease: func(context.Context) (*coordinationv1.Lease, error) {
			return nil, apierrors.NewNotFound(schema.GroupResource{}, "workspacemounts")
		},
		LeaseName: "root/default/workspacemounts",
		Hold: func(ctx context.Context, clean func(context.Context) error) error {
			holding = true
			defer func() { holding = false }()
			return clean(ctx)
		},
		Shards: func(context.Context) ([]Shard, error) { return []Shard{shard}, nil },
		Now:    func() time.Time { return now },
		Out:    &out,
		Yes:    true,
	}
	result, err := c.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, result.Changed)
	require.Equal(t, 1, listedWhileHeld)

	c.Hold = func(context.Context, func(context.Context) error) error {
		return errors.New("the leader Lease root/default/workspacemounts was not acquired within 19s: a plugin leads; stop it first")
	}
	_, err = c.Run(context.Background())
	require.ErrorContains(t, err, "a plugin leads")
	require.Zero(t, listedUnheld, "listed without the Lease")
}

// TestRunInterrupted: when the run's context ends (a signal, or the Lease
// lost), the run stops before the next Workspace, and the summary says what
// was changed and what was not reached, shard by shard.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	own := condition(mount.ConditionType, corev1.ConditionFalse)
	for name, tc := range map[string]struct {
		stopAfter int // patches before the context ends
		want      string
	}{
		"between two Workspaces": {
			stopAfter: 1,
			want: "interrupted (the leader Lease could not be renewed): 1 Workspaces changed on 1 shards; " +
				"not done: shard root from Workspace c1|second on, shard shard-2; run again",
		},
		"at the end of a page": {
			stopAfter: 2,
			want: "interrupted (the leader Lease could not be renewed): 2 Workspaces changed on 1 shards; " +
				"not done: shard root from the next page on, shard shard-2; run again",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			patched := 0
			shard := func(name string) Shard {
				return Shard{
					Name: name,
					ListWorkspaces: func(_ context.Context, opts metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
						require.Empty(t, opts.Continue, "a page listed after the interruption")
						return &tenancyv1alpha1.WorkspaceList{ListMeta: metav1.ListMeta{Continue: "page2"}, Items: []tenancyv1alpha1.Workspace{
							workspace("first", nil, corev1alpha1.LogicalClusterPhaseUnavailable, own),
							workspace("second", nil, corev1alpha1.LogicalClusterPhaseUnavailable, own),
						}}, nil
					},
					PatchWorkspace: func(_ context.Context, _ logicalcluster.Name, name string, _ []byte, _ ...string) (*tenancyv1alpha1.Workspace, error) {
						require.Less(t, patched, tc.stopAfter, "a patch after the interruption")
						patched++
						if patched == tc.stopAfter {
							cancel(errors.New("the leader Lease could not be renewed"))
						}
						ws := workspace(name, nil, corev1alpha1.LogicalClusterPhaseReady)
						return &ws, nil
					},
				}
			}
			var out bytes.Buffer
			c := &Cleanup{
				GetLease: func(context.Context) (*coordinationv1.Lease, error) {
					return nil, apierrors.NewNotFound(schema.GroupResource{}, "workspacemounts")
				},
				LeaseName: "root/default/workspacemounts",
				Hold:      holdNow,
				Shards:    func(context.Context) ([]Shard, error) { return []Shard{shard("root"), shard("shard-2")}, nil },
				Now:       func() time.Time { return now },
				Out:       &out,
				Yes:       true,
			}
			result, err := c.Run(ctx)
			require.ErrorContains(t, err, "interrupted (the leader Lease could not be renewed) before the end; run again")
			require.Contains(t, out.String(), tc.want+"\n")
			require.Equal(t, tc.stopAfter, result.Changed)
			require.Equal(t, "the leader Lease could not be renewed", result.Interrupted)
		})
	}
}
