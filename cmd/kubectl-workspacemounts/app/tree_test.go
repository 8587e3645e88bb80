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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/<name>, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to write it")
	require.Equal(t, string(want), got, "%s (go test -update rewrites it)", path)
}

// AttachMounts sets each mounted node's Mount from mounts, by cluster and name; other mounts are ignored.
func AttachMounts(root *Node, mounts []wsmv1alpha1.WorkspaceMount) {
	index := newMountIndex(root)
	for i := range mounts {
		index.attach(&mounts[i])
	}
}

// tablePrinter is tree's printer without -o, or with -o wide.
func tablePrinter(wide bool) printers.ResourcePrinter {
	return printers.NewTablePrinter(printers.PrintOptions{Wide: wide})
}

// now is the tests' fixed present.
var now = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

// workspace is a Workspace in cluster, mounted when mounted, in kcp's phase.
func workspace(cluster, name string, mounted bool, phase corev1alpha1.LogicalClusterPhaseType) tenancyv1alpha1.Workspace {
	ws := tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}},
		Status:     tenancyv1alpha1.WorkspaceStatus{Phase: phase},
	}
	if mounted {
		ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name + "-cluster"}}
	}
	return ws
}

// wsMount is what the virtual workspace serves for a mounted Workspace.
func wsMount(cluster, name, phase, reason string, ready bool, since time.Duration) wsmv1alpha1.WorkspaceMount {
	t := metav1.NewTime(now.Add(-since))
	return wsmv1alpha1.WorkspaceMount{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}},
		Spec:       wsmv1alpha1.WorkspaceMountSpec{MountRef: wsmv1alpha1.MountReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name + "-cluster"}},
		Status:     wsmv1alpha1.WorkspaceMountStatus{Phase: phase, Reason: reason, Ready: ready, LastTransitionTime: &t, Message: "the mount of " + name},
	}
}

// hierarchy is root:org with two teams; team-b's cluster refuses listing.
//
//	root:org (cluster org)
//	├── ready       mounted, Ready
//	├── broken      mounted, Connecting
//	├── team-a      (cluster team-a)
//	│   ├── deep    (cluster deep)
//	│   │   └── pending   mounted, not served
//	│   └── fine    mounted, Ready
//	├── team-b      (forbidden)
//	└── init        Initializing (not listed)
var hierarchy = map[string][]tenancyv1alpha1.Workspace{
	"root:org": {
		workspace("org", "team-b", false, corev1alpha1.LogicalClusterPhaseReady),
		workspace("org", "ready", true, corev1alpha1.LogicalClusterPhaseReady),
		workspace("org", "broken", true, "Unavailable"),
		workspace("org", "team-a", false, corev1alpha1.LogicalClusterPhaseReady),
		workspace("org", "init", false, corev1alpha1.LogicalClusterPhaseInitializing),
	},
	"root:org:team-a": {
		workspace("team-a", "fine", true, corev1alpha1.LogicalClusterPhaseReady),
		workspace("team-a", "deep", false, corev1alpha1.LogicalClusterPhaseReady),
	},
	"root:org:team-a:deep": {
		workspace("deep", "pending", true, corev1alpha1.LogicalClusterPhaseReady),
	},
}

var hierarchyMounts = []wsmv1alpha1.WorkspaceMount{
	wsMount("org", "ready", "Ready", "MountReady", true, 3*time.Hour),
	wsMount("org", "broken", "Connecting", "MountNotReady", false, 5*time.Minute),
	wsMount("team-a", "fine", "Ready", "MountReady", true, 26*time.Hour),
	// Outside the tree: ignored.
	wsMount("elsewhere", "broken", "Invalid", "MountReferenceInvalid", false, time.Minute),
}

func hierarchyBuilder(maxDepth, maxWorkspaces int, listed *[]string) TreeBuilder {
	return TreeBuilder{
		ListWorkspaces: func(_ context.Context, path logicalcluster.Path, max int) ([]tenancyv1alpha1.Workspace, bool, error) {
			if listed != nil {
				*listed = append(*listed, path.String())
			}
			if path.String() == "root:org:team-b" {
				return nil, false, apierrors.NewForbidden(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, "", errors.New("no"))
			}
			if path.String() == "root:org:init" || path.String() == "root:org:broken" || path.String() == "root:org:ready" {
				return nil, false, fmt.Errorf("%s must not be listed", path)
			}
			// kcp lists a cluster's Workspaces by name.
			children := append([]tenancyv1alpha1.Workspace(nil), hierarchy[path.String()]...)
			sort.Slice(children, func(i, j int) bool { return children[i].Name < children[j].Name })
			if len(children) > max {
				return children[:max], true, nil
			}
			return children, false, nil
		},
		MaxDepth:      maxDepth,
		MaxWorkspaces: maxWorkspaces,
	}
}

// treeOutput builds, attaches and prints the hierarchy as tree does.
func treeOutput(t *testing.T, b TreeBuilder, all, wide bool) string {
	t.Helper()
	root, cut := b.Build(context.Background(), logicalcluster.NewPath("root:org"))
	AttachMounts(root, hierarchyMounts)
	var out bytes.Buffer
	require.NoError(t, PrintTree(&out, &out, tablePrinter(wide), root, all, cut, now))
	return out.String()
}

func TestTreeBuild(t *testing.T) {
	t.Parallel()
	var listed []string
	root, cut := hierarchyBuilder(10, 100, &listed).Build(context.Background(), logicalcluster.NewPath("root:org"))
	require.False(t, cut)
	// Breadth first; never into a mounted Workspace or one kcp does not call Ready.
	require.Equal(t, []string{"root:org", "root:org:team-a", "root:org:team-b", "root:org:team-a:deep"}, listed)
	names := make([]string, 0, len(root.Children))
	for _, c := range root.Children {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"broken", "init", "ready", "team-a", "team-b"}, names)
	require.Equal(t, "children not listed: forbidden", root.Children[4].Note)
	deep := root.Children[3].Children[0]
	require.Equal(t, "root:org:team-a:deep", deep.Path.String())
	require.Equal(t, logicalcluster.Name("deep"), deep.Children[0].Cluster)

	AttachMounts(root, hierarchyMounts)
	var problems []string
	for _, n := range MountedNodes(root) {
		if n.Problem() {
			problems = append(problems, n.Path.String())
		}
	}
	// broken is not ready; pending is not served; elsewhere|broken is no node's.
	require.Equal(t, []string{"root:org:broken", "root:org:team-a:deep:pending"}, problems)
}

func TestTreeLimits(t *testing.T) {
	t.Parallel()
	root, cut := hierarchyBuilder(1, 100, nil).Build(context.Background(), logicalcluster.NewPath("root:org"))
	require.True(t, cut)
	require.Equal(t, "not listed: deeper than --max-depth=1", root.Children[3].Note)

	root, cut = hierarchyBuilder(10, 3, nil).Build(context.Background(), logicalcluster.NewPath("root:org"))
	require.True(t, cut)
	require.Equal(t, "more not listed: --max-workspaces=3 reached", root.Note)
	require.Len(t, root.Children, 3)
	require.Equal(t, 3, countNodes(root)-1)
}

func countNodes(n *Node) int {
	c := 1
	for _, child := range n.Children {
		c += countNodes(child)
	}
	return c
}

func TestPrune(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		all       bool
		mounts    []wsmv1alpha1.WorkspaceMount
		wantPaths []string
		wantAny   bool
	}{
		{name: "problems and their ancestors, and notes", mounts: hierarchyMounts, wantAny: true,
			wantPaths: []string{"root:org", "root:org:broken", "root:org:team-a", "root:org:team-a:deep", "root:org:team-a:deep:pending", "root:org:team-b"}},
		{name: "all", all: true, mounts: hierarchyMounts, wantAny: true,
			wantPaths: []string{"root:org", "root:org:broken", "root:org:init", "root:org:ready", "root:org:team-a", "root:org:team-a:deep", "root:org:team-a:deep:pending", "root:org:team-a:fine", "root:org:team-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, _ := hierarchyBuilder(10, 100, nil).Build(context.Background(), logicalcluster.NewPath("root:org"))
			AttachMounts(root, tc.mounts)
			require.Equal(t, tc.wantAny, Prune(root, tc.all))
			var paths []string
			var walk func(*Node)
			walk = func(n *Node) {
				paths = append(paths, n.Path.String())
				for _, c := range n.Children {
					walk(c)
				}
			}
			walk(root)
			require.ElementsMatch(t, tc.wantPaths, paths)
		})
	}
}

func TestPruneNothingLeft(t *testing.T) {
	t.Parallel()
	b := TreeBuilder{
		ListWorkspaces: func(_ context.Context, path logicalcluster.Path, _ int) ([]tenancyv1alpha1.Workspace, bool, error) {
			if path.String() == "root:org" {
				return []tenancyv1alpha1.Workspace{workspace("org", "ready", true, corev1alpha1.LogicalClusterPhaseReady)}, false, nil
			}
			return nil, false, nil
		},
		MaxDepth: 3, MaxWorkspaces: 10,
	}
	root, _ := b.Build(context.Background(), logicalcluster.NewPath("root:org"))
	AttachMounts(root, hierarchyMounts)
	require.False(t, Prune(root, false))
	root, cut := b.Build(context.Background(), logicalcluster.NewPath("root:org"))
	AttachMounts(root, hierarchyMounts)
	var out bytes.Buffer
	require.NoError(t, PrintTree(&out, &out, tablePrinter(false), root, false, cut, now))
	require.Equal(t, "1 mounted workspaces, all ready (-A shows them).\n", out.String())
}

func TestTreeGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file          string
		all, wide     bool
		maxDepth, max int
	}{
		{file: "tree-problems.golden", maxDepth: 10, max: 100},
		{file: "tree-all.golden", all: true, maxDepth: 10, max: 100},
		{file: "tree-all-wide.golden", all: true, wide: true, maxDepth: 10, max: 100},
		{file: "tree-cut.golden", all: true, maxDepth: 1, max: 100},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			golden(t, tc.file, treeOutput(t, hierarchyBuilder(tc.maxDepth, tc.max, nil), tc.all, tc.wide))
		})
	}
}

// fakeMounts serves mounts at * (unless forbidden) and per parent path.
type fakeMounts struct {
	all       []wsmv1alpha1.WorkspaceMount
	perParent map[string][]wsmv1alpha1.WorkspaceMount
	forbidden bool
	asked     []string
	read      int
}

func (f *fakeMounts) list(_ context.Context, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) bool) (int, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s max %d", cluster, max))
	mounts := f.perParent[cluster]
	if cluster == "*" {
		if f.forbidden {
			return 0, apierrors.NewForbidden(schema.GroupResource{Group: "workspacemounts.io", Resource: "workspacemounts"}, "", errors.New("no"))
		}
		mounts = f.all
	}
	n := 0
	for i := range mounts {
		if n == max {
			break
		}
		n++
		if each(&mounts[i]) {
			break
		}
	}
	f.read += n
	return n, nil
}

// TestReadMounts: the mounts are read until every mounted Workspace of the
// tree has its own, and no further than --max-mounts.
func TestReadMounts(t *testing.T) {
	t.Parallel()
	// Mounts of other workspaces the user may see come first at *.
	others := make([]wsmv1alpha1.WorkspaceMount, 0, 20)
	for i := range 20 {
		others = append(others, wsMount("elsewhere", fmt.Sprint("m", i), "Ready", "MountReady", true, time.Hour))
	}
	tree := func() *Node {
		root, _ := hierarchyBuilder(10, 100, nil).Build(context.Background(), logicalcluster.NewPath("root:org"))
		return root
	}
	found := func(root *Node) (names []string) {
		for _, n := range MountedNodes(root) {
			if n.Mount != nil {
				names = append(names, n.Name)
			}
		}
		return names
	}
	pending := wsMount("deep", "pending", "Connecting", "MountNotReady", false, time.Minute)
	all := append(append(append([]wsmv1alpha1.WorkspaceMount(nil), others...), hierarchyMounts[:3]...), pending)
	all = append(all, others...)

	f := &fakeMounts{all: all}
	root := tree()
	cut, err := ReadMounts(context.Background(), root, f.list, 1000, io.Discard)
	require.NoError(t, err)
	require.False(t, cut)
	require.ElementsMatch(t, []string{"ready", "broken", "fine", "pending"}, found(root))
	require.Equal(t, 24, f.read, "stopped once every mount of the tree was read")

	f = &fakeMounts{all: all}
	root = tree()
	cut, err = ReadMounts(context.Background(), root, f.list, 22, io.Discard)
	require.NoError(t, err)
	require.True(t, cut)
	require.ElementsMatch(t, []string{"ready", "broken"}, found(root))
	mounted := MountedNodes(root)
	notes := make([]string, 0, len(mounted))
	for _, n := range mounted {
		notes = append(notes, n.Note)
	}
	require.ElementsMatch(t, []string{"", "", "mount not read: --max-mounts=22 reached", "mount not read: --max-mounts=22 reached"}, notes)
	var out bytes.Buffer
	require.NoError(t, PrintTree(&out, &out, tablePrinter(false), root, true, cut, now))
	require.Contains(t, out.String(), "(mount not read: --max-mounts=22 reached)")
	require.Contains(t, out.String(), "--max-mounts to see more")

	// * refused: each parent once, within what is left of the bound.
	f = &fakeMounts{forbidden: true, perParent: map[string][]wsmv1alpha1.WorkspaceMount{
		"root:org":             append(append([]wsmv1alpha1.WorkspaceMount(nil), others[:5]...), hierarchyMounts[:2]...),
		"root:org:team-a":      hierarchyMounts[2:3],
		"root:org:team-a:deep": {pending},
	}}
	root = tree()
	cut, err = ReadMounts(context.Background(), root, f.list, 9, io.Discard)
	require.NoError(t, err)
	require.False(t, cut)
	require.ElementsMatch(t, []string{"ready", "broken", "fine", "pending"}, found(root))
	require.Equal(t, []string{"* max 9", "root:org max 9", "root:org:team-a:deep max 2", "root:org:team-a max 1"}, f.asked)
}

// TestTreeOutput: tree -o takes cli-runtime's PrintFlags formats; the summary goes to its own writer.
func TestTreeOutput(t *testing.T) {
	t.Parallel()
	root, cut := hierarchyBuilder(10, 100, nil).Build(context.Background(), logicalcluster.NewPath("root:org"))
	AttachMounts(root, hierarchyMounts)
	flags := genericclioptions.NewPrintFlags("")
	flags.OutputFormat = ptr.To(`jsonpath={range .rows[*]}{.cells[0]} {.cells[1]}{"\n"}{end}`)
	p, table, err := printerFor(flags, false)
	require.NoError(t, err)
	require.False(t, table)
	var out, summary bytes.Buffer
	require.NoError(t, PrintTree(&out, &summary, p, root, true, cut, now))
	golden(t, "tree-jsonpath.golden", out.String())
	require.Equal(t, "4 mounted workspaces, 2 not ready.\n", summary.String())
}
