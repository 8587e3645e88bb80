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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Node is one Workspace of the tree. Cluster, the logical cluster of its parent, and Name key its WorkspaceMount;
// Mount is nil while the virtual workspace serves none for it, and Note says why children are missing.
type Node struct {
	Name     string
	Path     logicalcluster.Path
	Cluster  logicalcluster.Name
	Mounted  bool
	KCPPhase string
	Mount    *wsmv1alpha1.WorkspaceMount
	Note     string
	Children []*Node
}

// Problem is true for a mounted Workspace whose mount is not ready, or not served.
func (n *Node) Problem() bool {
	return n.Mounted && (n.Mount == nil || !n.Mount.Status.Ready)
}

// TreeBuilder lists Workspaces through kcp, one workspace at a time, as kcp's kubectl ws tree does: ListWorkspaces
// lists at most max children of a path, by name, and says whether more were left.
type TreeBuilder struct {
	ListWorkspaces          func(ctx context.Context, path logicalcluster.Path, max int) (workspaces []tenancyv1alpha1.Workspace, more bool, err error)
	MaxDepth, MaxWorkspaces int
}

// Build lists the tree under root breadth first, not into a mounted Workspace nor one kcp does not call Ready; what
// is past MaxDepth or MaxWorkspaces is left out with a note, and cut says so.
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
			it.node.Note, cut = fmt.Sprintf("not listed: deeper than --max-depth=%d", b.MaxDepth), true
			continue
		}
		if listed >= b.MaxWorkspaces {
			it.node.Note, cut = fmt.Sprintf("not listed: --max-workspaces=%d reached", b.MaxWorkspaces), true
			continue
		}
		children, more, err := b.ListWorkspaces(ctx, it.node.Path, b.MaxWorkspaces-listed)
		if err != nil {
			it.node.Note = "children not listed: " + shortError(err)
			continue
		}
		sort.Slice(children, func(i, j int) bool { return children[i].Name < children[j].Name })
		if more {
			it.node.Note, cut = fmt.Sprintf("more not listed: --max-workspaces=%d reached", b.MaxWorkspaces), true
		}
		listed += len(children)
		for i := range children {
			ws := &children[i]
			child := &Node{Name: ws.Name, Path: it.node.Path.Join(ws.Name), Cluster: logicalcluster.From(ws),
				Mounted: ws.Spec.Mount != nil, KCPPhase: string(ws.Status.Phase)}
			it.node.Children = append(it.node.Children, child)
			if !child.Mounted && child.KCPPhase == string(corev1alpha1.LogicalClusterPhaseReady) {
				queue = append(queue, item{child, it.depth + 1})
			}
		}
	}
	return top, cut
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

// Prune keeps, unless all, only the problems and the Workspaces leading to them; the root and the nodes with a note
// stay. It returns false when nothing under root was kept.
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

// TreeTable is the tree as a Table, one row per Workspace, the name column drawn as a tree.
func TreeTable(root *Node, now time.Time) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ColumnDefinitions: treeColumns}
	var walk func(n *Node, prefix, branch string)
	walk = func(n *Node, prefix, branch string) {
		name := prefix + branch + n.Name
		if branch == "" {
			name = n.Path.String()
		}
		phase, ready, reason, since, message := "", "", "", "", ""
		if n.Mounted {
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

// PrintTree prints the tree with p, then on summary a line counting the mounts (and, without all, saying that only
// problems show).
func PrintTree(out, summary io.Writer, p printers.ResourcePrinter, root *Node, all, cut bool, now time.Time) error {
	mounted := MountedNodes(root)
	problems := 0
	for _, n := range mounted {
		if n.Problem() {
			problems++
		}
	}
	if Prune(root, all) {
		if err := p.PrintObj(TreeTable(root, now), out); err != nil {
			return err
		}
	}
	var line string
	switch {
	case all:
		line = fmt.Sprintf("%d mounted workspaces, %d not ready.", len(mounted), problems)
	case problems == 0:
		line = fmt.Sprintf("%d mounted workspaces, all ready (-A shows them).", len(mounted))
	default:
		line = fmt.Sprintf("%d of %d mounted workspaces not ready (-A shows all).", problems, len(mounted))
	}
	if cut {
		line += " The tree was cut (see the notes): raise --max-depth, --max-workspaces or --max-mounts to see more."
	}
	_, err := fmt.Fprintln(summary, line)
	return err
}

// TreeOptions are tree's: the workspace tree under the current workspace, or PATH, with its mounts.
type TreeOptions struct {
	*Options
	PrintFlags    *genericclioptions.PrintFlags
	AllMounts     bool
	MaxDepth      int
	MaxWorkspaces int
	MaxMounts     int

	root    logicalcluster.Path
	printer printers.ResourcePrinter
	table   bool
}

func newTreeCommand(o *Options) *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "tree [PATH]",
		Short: "The workspace tree under the current workspace (or PATH), with the mounted Workspaces that are not ready (-A: every mounted Workspace)",
		Example: `  kubectl workspacemounts tree
  kubectl workspacemounts tree -A
  kubectl workspacemounts tree root:org -o wide`,
		Args: cobra.MaximumNArgs(1),
	}, &TreeOptions{Options: o, PrintFlags: genericclioptions.NewPrintFlags("")})
}

// BindFlags binds tree's flags to cmd.
func (o *TreeOptions) BindFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&o.AllMounts, "all-mounts", "A", false, "Show every mounted Workspace, not only those that are not ready.")
	cmd.Flags().IntVar(&o.MaxDepth, "max-depth", 10, "Levels of workspaces listed below the root.")
	cmd.Flags().IntVar(&o.MaxWorkspaces, "max-workspaces", 1000, "Workspaces listed in all.")
	cmd.Flags().IntVar(&o.MaxMounts, "max-mounts", 10000, "Mounts read from the virtual workspace in all, to find those of the tree's Workspaces (at *, every mount you may see).")
}

// Complete resolves the target, which must be kcp's, and the root: PATH or the current workspace.
func (o *TreeOptions) Complete(args []string) error {
	if err := o.Options.Complete(); err != nil {
		return err
	}
	if err := o.requireKCP(); err != nil {
		return err
	}
	o.root = o.Target.KCP.Path
	if len(args) == 1 {
		o.root = logicalcluster.NewPath(args[0])
	}
	return nil
}

// Validate checks PATH, the bounds and the output format.
func (o *TreeOptions) Validate() (err error) {
	if !o.root.IsValid() || o.root == logicalcluster.Wildcard {
		return fmt.Errorf("%q is not a workspace path (root:org:ws)", o.root)
	}
	if o.MaxDepth < 1 || o.MaxWorkspaces < 1 || o.MaxMounts < 1 {
		return fmt.Errorf("--max-depth, --max-workspaces and --max-mounts must be at least 1")
	}
	o.printer, o.table, err = printerFor(o.PrintFlags, false)
	return err
}

// Run lists the tree through kcp, reads its mounts from the virtual workspace and prints them.
func (o *TreeOptions) Run(ctx context.Context) error {
	clients, err := o.kcpClients()
	if err != nil {
		return err
	}
	builder := TreeBuilder{MaxDepth: o.MaxDepth, MaxWorkspaces: o.MaxWorkspaces,
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
		}}
	tree, cut := builder.Build(ctx, o.root)
	mountsCut, err := ReadMounts(ctx, tree, o.listMounts, o.MaxMounts, o.ErrOut)
	if err != nil {
		return fmt.Errorf("listing the mounts at %s: %w", o.Target.URL("*"), err)
	}
	summary := o.Out
	if !o.table {
		summary = o.ErrOut
	}
	return PrintTree(o.Out, summary, o.printer, tree, o.AllMounts, cut || mountsCut, time.Now())
}
