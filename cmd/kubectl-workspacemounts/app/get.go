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

	"github.com/spf13/cobra"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// tableAccept asks for the server's v1 Table, as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// GetOptions are get's: the WorkspaceMounts as kubectl get prints them, from the virtual workspace.
type GetOptions struct {
	*Options
	PrintFlags    *genericclioptions.PrintFlags
	Watch         bool
	NoHeaders     bool
	LabelSelector string
	FieldSelector string

	name    string
	printer printers.ResourcePrinter
	table   bool
}

func newGetCommand(o *Options) *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "get [NAME]",
		Short: "The mounted Workspaces of the current workspace (--all: of every workspace you may see), as kubectl get workspacemounts shows them",
		Example: `  kubectl workspacemounts get
  kubectl workspacemounts get --all -o wide
  kubectl workspacemounts get team-a -o yaml
  kubectl workspacemounts get --all --field-selector status.ready=false -w`,
		Args: cobra.MaximumNArgs(1),
	}, &GetOptions{Options: o, PrintFlags: genericclioptions.NewPrintFlags("")})
}

// BindFlags binds get's flags to cmd.
func (o *GetOptions) BindFlags(cmd *cobra.Command) {
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "After listing, watch for changes.")
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "Do not print the table's headers.")
	cmd.Flags().StringVarP(&o.LabelSelector, "selector", "l", "", "Label selector (the Workspaces' labels).")
	cmd.Flags().StringVar(&o.FieldSelector, "field-selector", "", "Field selector: metadata.name, status.phase, status.ready, status.workspacePath, status.shard.")
}

// Complete takes NAME and resolves the target.
func (o *GetOptions) Complete(args []string) error {
	if len(args) == 1 {
		o.name = args[0]
	}
	return o.Options.Complete()
}

// Validate checks the output format.
func (o *GetOptions) Validate() (err error) {
	o.printer, o.table, err = printerFor(o.PrintFlags, o.NoHeaders)
	return err
}

// Run lists, or gets NAME, and with --watch prints every change after.
func (o *GetOptions) Run(ctx context.Context) error {
	client, err := o.vwClient(o.Target.Cluster, true)
	if err != nil {
		return err
	}
	accept := "application/json"
	if o.table {
		accept = tableAccept
	}
	opts := metav1.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector}
	if o.name != "" {
		opts.FieldSelector = joinSelectors(opts.FieldSelector, "metadata.name="+o.name)
	}
	list := func(opts metav1.ListOptions) *rest.Request {
		return client.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", accept)
	}
	request := list(opts)
	if o.name != "" && !o.Watch {
		request = client.Get().Resource(wsmv1alpha1.Resource).Name(o.name).SetHeader("Accept", accept)
	}
	answer, err := request.Do(ctx).Get()
	if err != nil {
		return err
	}
	obj, err := o.printable(answer)
	if err != nil {
		return err
	}
	if t, ok := obj.(*metav1.Table); ok && len(t.Rows) == 0 && !o.Watch {
		_, err := fmt.Fprintf(o.ErrOut, "No WorkspaceMounts at %s.\n", o.Target.Cluster)
		return err
	}
	if err := o.printer.PrintObj(obj, o.Out); err != nil || !o.Watch {
		return err
	}
	rv := ""
	if l, ok := answer.(interface{ GetResourceVersion() string }); ok {
		rv = l.GetResourceVersion()
	}
	return watchFrom(ctx, rv, func(ctx context.Context, w metav1.ListOptions) (watch.Interface, error) {
		// A Table watch asks for no bookmarks, as kubectl get -w: the server would make a Table of each.
		opts.Watch, opts.ResourceVersion, opts.AllowWatchBookmarks = true, w.ResourceVersion, w.AllowWatchBookmarks && !o.table
		return list(opts).Watch(ctx)
	}, func(e watch.Event) error {
		obj, err := o.printable(e.Object)
		if err != nil {
			return err
		}
		return o.printer.PrintObj(obj, o.Out)
	})
}

// printable is what the server answered, or the cleaned Table of it for the table printer.
func (o *GetOptions) printable(obj runtime.Object) (runtime.Object, error) {
	if !o.table {
		return obj, nil
	}
	return decodeTable(obj)
}

// printerFor is f's printer or, with no -o and -o wide, cli-runtime's table printer of a Table; table says which.
func printerFor(f *genericclioptions.PrintFlags, noHeaders bool) (p printers.ResourcePrinter, table bool, err error) {
	if format := ptr.Deref(f.OutputFormat, ""); format == "" || format == "wide" {
		return printers.NewTablePrinter(printers.PrintOptions{Wide: format == "wide", NoHeaders: noHeaders}), true, nil
	}
	p, err = f.ToPrinter()
	return p, false, err
}

// decodeTable is the v1 Table of an unstructured answer, cleaned with [cleanTable].
func decodeTable(obj runtime.Object) (*metav1.Table, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetKind() != "Table" {
		return nil, fmt.Errorf("the virtual workspace answered a %q, not a Table", shown(obj.GetObjectKind().GroupVersionKind().Kind))
	}
	t := &metav1.Table{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return nil, fmt.Errorf("decoding the virtual workspace's table: %w", err)
	}
	cleanTable(t)
	return t, nil
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
