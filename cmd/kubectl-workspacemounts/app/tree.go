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
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Node is one Workspace of the tree: the root is the current workspace.
type Node struct {
	Name string
	Path logicalcluster.Path
	// Cluster is the logical cluster holding the Workspace object (its
	// parent's); with Name, the key of its WorkspaceMount.
	Cluster logicalcluster.Name
	// Mounted is true for a Workspace with spec.mount.
	Mounted bool
	// KCPPhase is the Workspace's status.phase.
	KCPPhase string
	// Mount is what the virtual workspace serves for a mounted Workspace;
	// nil while it serves nothing for it (or may not be read).
	Mount *wsmv1alpha1.WorkspaceMount
	// Note says why the children are not all there (not listed, cut, an
	// error); empty when they are.
	Note     string
	Children []*Node
}

// Problem is true for a mounted Workspace whose mount is not ready, or not
// served (yet) by the virtual workspace.
func (n *Node) Problem() bool {
	return n.Mounted && (n.Mount == nil || !n.Mount.Status.Ready)
}

// TreeBuilder lists Workspaces through kcp, one workspace at a time, as kcp's
// kubectl ws tree does, within its limits.
type TreeBuilder struct {
	// ListWorkspaces lists at most max child Workspaces of a workspace path,
	// in kcp's order (by name); more tells whether some were left.
	ListWorkspaces func(ctx context.Context, path logicalcluster.Path, max int) (workspaces []tenancyv1alpha1.Workspace, more bool, err error)
	// MaxDepth bounds the levels listed below the root; MaxWorkspaces the
	// Workspaces listed in all.
	MaxDepth, MaxWorkspaces int
}

// Build lists the tree under root, breadth first. It does not descend into
// a mounted Workspace (the mount serves what is inside) nor one kcp does not
// call Ready; a level past MaxDepth or a Workspace past MaxWorkspaces is
// left out with a note on the node where the listing stopped. The second
// result says whether anything was cut.
func (b TreeBuilder) Build(ctx context.Context, root logicalcluster.Path) (*Node, bool) {
	top := &Node{Name: root.Base(), Path: root}
	type item struct {
		node  *Node
		depth int
	}
	queue := []item{{top, 0}}
	listed, cut := 0, false
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if it.depth >= b.MaxDepth {
			it.node.Note = fmt.Sprintf("not listed: deeper than --max-depth=%d", b.MaxDepth)
			cut = true
			continue
		}
		if listed >= b.MaxWorkspaces {
			it.node.Note = fmt.Sprintf("not listed: --max-workspaces=%d reached", b.MaxWorkspaces)
			cut = true
			continue
		}
		children, more, err := b.ListWorkspaces(ctx, it.node.Path, b.MaxWorkspaces-listed)
		if err != nil {
			it.node.Note = "children not listed: " + listError(err)
			continue
		}
		sort.Slice(children, func(i, j int) bool { return children[i].Name < children[j].Name })
		if more {
			it.node.Note = fmt.Sprintf("more not listed: --max-workspaces=%d reached", b.MaxWorkspaces)
			cut = true
		}
		listed += len(children)
		for i := range children {
			ws := &children[i]
			child := &Node{
				Name:     ws.Name,
				Path:     it.node.Path.Join(ws.Name),
				Cluster:  logicalcluster.From(ws),
				Mounted:  ws.Spec.Mount != nil,
				KCPPhase: string(ws.Status.Phase),
			}
			it.node.Children = append(it.node.Children, child)
			if !child.Mounted && child.KCPPhase == string(corev1alpha1.LogicalClusterPhaseReady) {
				queue = append(queue, item{child, it.depth + 1})
			}
		}
	}
	return top, cut
}

// listError is a short reason for a listing that failed.
func listError(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsNotFound(err):
		return "not found"
	default:
		return shown(err.Error())
	}
}

// mountKey is a WorkspaceMount's identity: the cluster of the Workspace
// object (kcp.io/cluster) and its name.
func mountKey(cluster logicalcluster.Name, name string) string {
	return cluster.String() + "|" + name
}

// MountedNodes returns the mounted Workspaces of the tree, in tree order.
func MountedNodes(root *Node) []*Node {
	var out []*Node
	var walk func(*Node)
	walk = func(n *Node) {
		if n.Mounted {
			out = append(out, n)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	return out
}

// AttachMounts sets each mounted node's Mount from mounts (served by the
// virtual workspace at * or per cluster), matched by cluster and name;
// mounts of Workspaces outside the tree are ignored.
func AttachMounts(root *Node, mounts []wsmv1alpha1.WorkspaceMount) {
	index := newMountIndex(root)
	for i := range mounts {
		index.attach(&mounts[i])
	}
}

// mountIndex finds the tree's mounted nodes by their mount's key.
type mountIndex struct {
	byKey map[string]*Node
	// missing counts the nodes without a Mount yet.
	missing int
}

func newMountIndex(root *Node) *mountIndex {
	index := &mountIndex{byKey: map[string]*Node{}}
	for _, n := range MountedNodes(root) {
		index.byKey[mountKey(n.Cluster, n.Name)] = n
		if n.Mount == nil {
			index.missing++
		}
	}
	return index
}

// attach sets a copy of m as its node's Mount, if the tree has its
// Workspace; it returns true once every node has its Mount.
func (x *mountIndex) attach(m *wsmv1alpha1.WorkspaceMount) (all bool) {
	if n, ok := x.byKey[mountKey(logicalcluster.From(m), m.Name)]; ok {
		if n.Mount == nil {
			x.missing--
		}
		kept := *m
		n.Mount = &kept
	}
	return x.missing == 0
}

// Prune keeps, unless all, only the problems (Node.Problem) and the
// Workspaces leading to them; the root and the nodes with a note stay. It
// returns false when nothing under root was kept.
func Prune(root *Node, all bool) bool {
	if all {
		return true
	}
	var keep func(*Node) bool
	keep = func(n *Node) bool {
		kept := n.Children[:0]
		for _, c := range n.Children {
			if keep(c) {
				kept = append(kept, c)
			}
		}
		n.Children = kept
		return n.Problem() || n.Note != "" || len(kept) > 0
	}
	return keep(root)
}

// treeColumns are the tree's table columns; the Priority 1 ones with -o wide.
var treeColumns = []metav1.TableColumnDefinition{
	{Name: "Workspace", Type: "string", Description: "The Workspace, in the tree under the current workspace."},
	{Name: "Phase", Type: "string", Description: "The mount's phase."},
	{Name: "Ready", Type: "string", Description: "Whether traffic can flow to the mount."},
	{Name: "Reason", Type: "string", Description: "Why the mount is in its phase."},
	{Name: "Since", Type: "string", Description: "How long the mount has been in its phase (since its last transition)."},
	{Name: "Kcp-Phase", Type: "string", Priority: 1, Description: "kcp's phase of the Workspace."},
	{Name: "Message", Type: "string", Priority: 1, Description: "The mount's message."},
}

// TreeTable is the tree as a Table (one row per Workspace, the name column
// drawn as a tree), for cli-runtime's table printer.
func TreeTable(root *Node, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: treeColumns}
	var walk func(n *Node, prefix, branch string)
	walk = func(n *Node, prefix, branch string) {
		name := prefix + branch + n.Name
		if branch == "" {
			name = n.Path.String()
		}
		phase, ready, reason, since, message := "", "", "", "", ""
		if n.Mounted {
			// The virtual workspace serves nothing for it: the controller has
			// not reached it yet, or the user may not read its cluster.
			phase, ready, reason = "<unknown>", "false", "<not served>"
			if m := n.Mount; m != nil {
				phase, reason, message = m.Status.Phase, m.Status.Reason, m.Status.Message
				ready = fmt.Sprint(m.Status.Ready)
				if m.Status.LastTransitionTime != nil {
					since = duration.HumanDuration(now.Sub(m.Status.LastTransitionTime.Time))
				}
			}
		}
		if n.Note != "" {
			message = strings.TrimSpace(message + " (" + n.Note + ")")
			if !n.Mounted || n.Mount == nil {
				reason = "(" + n.Note + ")"
			}
		}
		cells := []interface{}{name, phase, ready, reason, since, shown(n.KCPPhase), message}
		for i, cell := range cells {
			cells[i] = clean(cell.(string))
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
		childPrefix := prefix
		switch branch {
		case "├── ":
			childPrefix += "│   "
		case "└── ":
			childPrefix += "    "
		}
		for i, c := range n.Children {
			b := "├── "
			if i == len(n.Children)-1 {
				b = "└── "
			}
			walk(c, childPrefix, b)
		}
	}
	walk(root, "", "")
	return t
}

// PrintTree prints the tree with cli-runtime's table printer, then a line
// counting the mounts (and, without all, saying that only problems show).
func PrintTree(out io.Writer, root *Node, all, wide, cut bool, now time.Time) error {
	mounted := MountedNodes(root)
	problems := 0
	for _, n := range mounted {
		if n.Problem() {
			problems++
		}
	}
	anything := Prune(root, all)
	if anything {
		if err := printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(TreeTable(root, now), out); err != nil {
			return err
		}
	}
	var summary string
	switch {
	case all:
		summary = fmt.Sprintf("%d mounted workspaces, %d not ready.", len(mounted), problems)
	case problems == 0:
		summary = fmt.Sprintf("%d mounted workspaces, all ready (-A shows them).", len(mounted))
	default:
		summary = fmt.Sprintf("%d of %d mounted workspaces not ready (-A shows all).", problems, len(mounted))
	}
	if cut {
		summary += " The tree was cut (see the notes): raise --max-depth, --max-workspaces or --max-mounts to see more."
	}
	_, err := fmt.Fprintln(out, summary)
	return err
}

type treeOptions struct {
	*Options
	AllMounts     bool
	Output        string
	MaxDepth      int
	MaxWorkspaces int
	MaxMounts     int
}

func newTreeCommand(o *Options) *cobra.Command {
	t := &treeOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "tree [PATH]",
		Short: "The workspace tree under the current workspace (or PATH), with the mounted Workspaces that are not ready (-A: every mounted Workspace)",
		Example: `  kubectl workspacemounts tree
  kubectl workspacemounts tree -A
  kubectl workspacemounts tree root:org -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return t.run(cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&t.AllMounts, "all-mounts", "A", false, "Show every mounted Workspace, not only those that are not ready.")
	cmd.Flags().StringVarP(&t.Output, "output", "o", "", "Output format: wide adds kcp's phase and the message.")
	cmd.Flags().IntVar(&t.MaxDepth, "max-depth", 10, "Levels of workspaces listed below the root.")
	cmd.Flags().IntVar(&t.MaxWorkspaces, "max-workspaces", 1000, "Workspaces listed in all.")
	cmd.Flags().IntVar(&t.MaxMounts, "max-mounts", 10000, "Mounts read from the virtual workspace in all, to find those of the tree's Workspaces (at *, every mount you may see).")
	return cmd
}

func (t *treeOptions) run(cmd *cobra.Command, args []string) error {
	if t.Output != "" && t.Output != "wide" {
		return fmt.Errorf("--output %q: tree prints a table, or -o wide", t.Output)
	}
	if t.MaxDepth < 1 || t.MaxWorkspaces < 1 || t.MaxMounts < 1 {
		return fmt.Errorf("--max-depth, --max-workspaces and --max-mounts must be at least 1")
	}
	ctx := contextOf(cmd)
	target, config, err := t.target()
	if err != nil {
		return err
	}
	if err := target.requireKCP(config); err != nil {
		return err
	}
	root := target.KCP.Path
	if len(args) == 1 {
		if root = logicalcluster.NewPath(args[0]); !root.IsValid() || root == logicalcluster.Wildcard {
			return fmt.Errorf("%q is not a workspace path (root:org:ws)", args[0])
		}
	}
	clients, err := newKCPClients(config, target)
	if err != nil {
		return err
	}
	builder := TreeBuilder{
		ListWorkspaces: func(ctx context.Context, path logicalcluster.Path, max int) ([]tenancyv1alpha1.Workspace, bool, error) {
			client := clients.kcp.Cluster(path).TenancyV1alpha1().Workspaces()
			var children []tenancyv1alpha1.Workspace
			more, err := listBounded(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return client.List(ctx, opts)
			}, metav1.ListOptions{}, max, func(obj runtime.Object) bool {
				if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok {
					children = append(children, *ws)
				}
				return false
			})
			return children, more, err
		},
		MaxDepth:      t.MaxDepth,
		MaxWorkspaces: t.MaxWorkspaces,
	}
	tree, cut := builder.Build(ctx, root)
	list := func(ctx context.Context, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) bool) (int, error) {
		return listMounts(ctx, config, target, cluster, max, each)
	}
	mountsCut, err := ReadMounts(ctx, tree, list, t.MaxMounts, t.ErrOut)
	if err != nil {
		return fmt.Errorf("listing the mounts at %s: %w", target.URL("*"), err)
	}
	cut = cut || mountsCut
	return PrintTree(t.Out, tree, t.AllMounts, t.Output == "wide", cut, time.Now())
}

// MountLister reads at most max WorkspaceMounts at one cluster segment of
// the virtual workspace, handing each to each until it says stop; n is how
// many were read.
type MountLister func(ctx context.Context, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) (stop bool)) (n int, err error)

// ReadMounts reads the mounts of the tree's mounted Workspaces with list:
// at * (what the user may see) until every mounted Workspace has its
// mount; where * is refused, at each parent workspace. At most maxMounts
// are read in all: a mounted Workspace whose mount was not reached by then
// gets a note, and cut is true. A parent that fails is a warning on warn.
func ReadMounts(ctx context.Context, tree *Node, list MountLister, maxMounts int, warn io.Writer) (cut bool, err error) {
	mounted := MountedNodes(tree)
	if len(mounted) == 0 {
		return false, nil
	}
	index := newMountIndex(tree)
	budget := maxMounts
	read := func(cluster string) error {
		n, err := list(ctx, cluster, budget, index.attach)
		budget -= n
		return err
	}
	err = read(logicalcluster.Wildcard.String())
	if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err != nil {
		parents := map[logicalcluster.Path]bool{}
		for _, n := range mounted {
			parent, _ := n.Path.Parent()
			if parents[parent] || budget == 0 || index.missing == 0 {
				continue
			}
			parents[parent] = true
			if err := read(parent.String()); err != nil {
				fmt.Fprintf(warn, "Warning: the mounts of %s: %v\n", parent, listError(err))
			}
		}
	}
	if budget > 0 || index.missing == 0 {
		return false, nil
	}
	for _, n := range mounted {
		if n.Mount == nil {
			n.Note = fmt.Sprintf("mount not read: --max-mounts=%d reached", maxMounts)
		}
	}
	return true, nil
}

// listMounts is the MountLister of the virtual workspace, paged.
func listMounts(ctx context.Context, config *rest.Config, target Target, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) (stop bool)) (n int, err error) {
	client, err := vwClient(config, target, cluster)
	if err != nil {
		return 0, err
	}
	_, err = listBounded(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		list := &wsmv1alpha1.WorkspaceMountList{}
		return list, client.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
	}, metav1.ListOptions{}, max, func(obj runtime.Object) bool {
		n++
		m, ok := obj.(*wsmv1alpha1.WorkspaceMount)
		return ok && each(m)
	})
	return n, err
}
