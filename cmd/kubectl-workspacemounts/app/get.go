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
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// tableAccept asks for the server's v1 Table, what kubectl get asks for.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

type getOptions struct {
	*Options
	PrintFlags    *genericclioptions.PrintFlags
	Watch         bool
	NoHeaders     bool
	LabelSelector string
	FieldSelector string
}

func newGetCommand(o *Options) *cobra.Command {
	g := &getOptions{Options: o, PrintFlags: genericclioptions.NewPrintFlags("")}
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "The mounted Workspaces of the current workspace (--all: of every workspace you may see), as kubectl get workspacemounts shows them",
		Example: `  kubectl workspacemounts get
  kubectl workspacemounts get --all -o wide
  kubectl workspacemounts get team-a -o yaml
  kubectl workspacemounts get --all --field-selector status.ready=false -w`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return g.run(cmd, name)
		},
	}
	g.PrintFlags.AddFlags(cmd)
	cmd.Flags().BoolVarP(&g.Watch, "watch", "w", false, "After listing, watch for changes.")
	cmd.Flags().BoolVar(&g.NoHeaders, "no-headers", false, "Do not print the table's headers.")
	cmd.Flags().StringVarP(&g.LabelSelector, "selector", "l", "", "Label selector (the Workspaces' labels).")
	cmd.Flags().StringVar(&g.FieldSelector, "field-selector", "", "Field selector: metadata.name, status.phase, status.ready, status.workspacePath, status.shard.")
	return cmd
}

func (g *getOptions) run(cmd *cobra.Command, name string) error {
	ctx := contextOf(cmd)
	t, config, err := g.target()
	if err != nil {
		return err
	}
	client, err := vwClient(config, t, t.Cluster)
	if err != nil {
		return err
	}
	printer, table, err := g.printer()
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{LabelSelector: g.LabelSelector, FieldSelector: g.FieldSelector}
	if name != "" {
		opts.FieldSelector = joinSelectors(opts.FieldSelector, "metadata.name="+name)
	}
	accept := "application/json"
	if table {
		accept = tableAccept
	}
	var resourceVersion string
	if name != "" && !g.Watch {
		raw, err := client.Get().Resource(wsmv1alpha1.Resource).Name(name).SetHeader("Accept", accept).DoRaw(ctx)
		if err != nil {
			return err
		}
		obj, _, err := decode(raw, table)
		if err != nil {
			return err
		}
		return printer.PrintObj(obj, g.Out)
	}
	raw, err := client.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", accept).DoRaw(ctx)
	if err != nil {
		return err
	}
	obj, rv, err := decode(raw, table)
	if err != nil {
		return err
	}
	resourceVersion = rv
	if table && isEmptyTable(obj) && !g.Watch {
		_, err := fmt.Fprintf(g.ErrOut, "No WorkspaceMounts at %s.\n", t.Cluster)
		return err
	}
	if err := printer.PrintObj(obj, g.Out); err != nil {
		return err
	}
	if !g.Watch {
		return nil
	}
	opts.Watch = true
	opts.ResourceVersion = resourceVersion
	opts.AllowWatchBookmarks = false
	stream, err := client.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", accept).Stream(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	return printEvents(stream, table, printer, g.Out)
}

// printer is PrintFlags' printer for json, yaml, name, templates, and else
// (table, wide) cli-runtime's table printer of the server's Table.
func (g *getOptions) printer() (p printers.ResourcePrinter, table bool, err error) {
	format := ""
	if g.PrintFlags.OutputFormat != nil {
		format = *g.PrintFlags.OutputFormat
	}
	if format == "" || format == "wide" {
		return printers.NewTablePrinter(printers.PrintOptions{Wide: format == "wide", NoHeaders: g.NoHeaders}), true, nil
	}
	p, err = g.PrintFlags.ToPrinter()
	return p, false, err
}

// decode decodes an answer: a v1 Table, cleaned (cleanTable), or objects
// (unstructured, as served: a list's items get the list's apiVersion and
// kind, for -o name; JSON and YAML escape their control characters).
func decode(raw []byte, table bool) (runtime.Object, string, error) {
	if table {
		var t metav1.Table
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, "", fmt.Errorf("decoding the virtual workspace's table: %w", err)
		}
		if t.Kind != "Table" {
			return nil, "", fmt.Errorf("the virtual workspace answered a %q, not a Table", shown(t.Kind))
		}
		cleanTable(&t)
		return &t, t.ResourceVersion, nil
	}
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
	if err != nil {
		return nil, "", fmt.Errorf("decoding the virtual workspace's answer: %w", err)
	}
	rv := ""
	if list, ok := obj.(*unstructured.UnstructuredList); ok {
		rv = list.GetResourceVersion()
	}
	return obj, rv, nil
}

func isEmptyTable(obj runtime.Object) bool {
	t, ok := obj.(*metav1.Table)
	return ok && len(t.Rows) == 0
}

// printEvents prints the events of a watch stream (JSON watch events, one
// object each: a Table of the changed row, or the object) until it ends.
func printEvents(stream io.Reader, table bool, printer printers.ResourcePrinter, out io.Writer) error {
	decoder := json.NewDecoder(stream)
	for {
		var event metav1.WatchEvent
		if err := decoder.Decode(&event); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading the watch: %w", err)
		}
		switch watch.EventType(event.Type) {
		case watch.Bookmark:
			continue
		case watch.Error:
			status := &metav1.Status{}
			if err := json.Unmarshal(event.Object.Raw, status); err == nil && status.Message != "" {
				return fmt.Errorf("the watch ended: %s", status.Message)
			}
			return errors.New("the watch ended with an error")
		}
		obj, _, err := decode(event.Object.Raw, table)
		if err != nil {
			return err
		}
		// The table printer prints the header once: a watch event's Table has the list's columns.
		if err := printer.PrintObj(obj, out); err != nil {
			return err
		}
	}
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}
