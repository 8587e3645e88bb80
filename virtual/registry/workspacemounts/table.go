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
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// tableConvertor renders WorkspaceMounts for kubectl get, in [columns].
type tableConvertor struct {
	shards ShardContacts // nil: every shard answers
}

// column is one column of the Table: its definition, and its cell in a row.
type column struct {
	metav1.TableColumnDefinition
	cell func(s *summary, row *rowContext) cell
}

var columns = []column{
	{metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the Workspace."},
		func(s *summary, _ *rowContext) cell { return s.text(s.name) }},
	{metav1.TableColumnDefinition{Name: "Workspace", Type: "string", Description: "Path of the Workspace (root:org:ws): unambiguous at *, where two rows may share a name."},
		func(s *summary, _ *rowContext) cell { return s.orNone(s.workspacePath) }},
	{metav1.TableColumnDefinition{Name: "Kind", Type: "string", Description: "Kind of the mount object."},
		func(s *summary, _ *rowContext) cell { return s.text(s.mountKind) }},
	{metav1.TableColumnDefinition{Name: "Mount", Type: "string", Description: "Name of the mount object (namespace/name when namespaced)."},
		func(s *summary, _ *rowContext) cell {
			if s.mountNamespace != "" {
				return s.text(s.mountNamespace + "/" + s.mountName)
			}
			return s.text(s.mountName)
		}},
	{metav1.TableColumnDefinition{Name: "Phase", Type: "string", Description: "Phase of the mount: Ready, Initializing, Connecting, Unknown, NotFound or Invalid."},
		func(s *summary, _ *rowContext) cell { return s.text(s.phase) }},
	{metav1.TableColumnDefinition{Name: "Ready", Type: "boolean", Description: "Whether traffic can flow to the mount."},
		func(s *summary, _ *rowContext) cell { return boolean(s.ready) }},
	{metav1.TableColumnDefinition{Name: "Kcp-Phase", Type: "string", Description: "kcp's own phase of the Workspace (Ready, Unavailable, Scheduling...): kcp's verdict, beside the mount's."},
		func(s *summary, _ *rowContext) cell { return s.orNone(s.workspacePhase) }},
	{metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "Age of the Workspace."},
		func(s *summary, row *rowContext) cell { return text(row.age(s.created)) }},
	{metav1.TableColumnDefinition{Name: "Cluster", Type: "string", Priority: 1, Description: "Logical cluster holding the Workspace object."},
		func(s *summary, _ *rowContext) cell { return s.text(s.cluster.String()) }},
	{metav1.TableColumnDefinition{Name: "Shard", Type: "string", Priority: 1, Description: "kcp shard holding the Workspace object, marked (unreachable ...) while it does not answer: its rows are then the last known state."},
		func(s *summary, row *rowContext) cell { return row.shard(s.shard) }},
	{metav1.TableColumnDefinition{Name: "URL", Type: "string", Priority: 1, Description: "URL of the mount."},
		func(s *summary, _ *rowContext) cell { return s.text(s.url) }},
	{metav1.TableColumnDefinition{Name: "Reason", Type: "string", Priority: 1, Description: "Why the mount is in its phase."},
		func(s *summary, _ *rowContext) cell { return s.text(s.reason) }},
	{metav1.TableColumnDefinition{Name: "Since", Type: "string", Priority: 1, Description: "How long the mount has been in its phase and readiness: the age of status.lastTransitionTime."},
		func(s *summary, row *rowContext) cell { return row.since(s.lastTransition) }},
}

var columnDefinitions = func() []metav1.TableColumnDefinition {
	definitions := make([]metav1.TableColumnDefinition, 0, len(columns))
	for _, c := range columns {
		definitions = append(definitions, c.TableColumnDefinition)
	}
	return definitions
}()

// cell is one cell of a row: a string, a boolean, or none (null).
type cell struct {
	kind     cellKind
	text     string
	flag     bool
	verbatim bool
}

type cellKind uint8

const (
	noneCell cellKind = iota
	stringCell
	boolCell
)

func text(s string) cell { return cell{kind: stringCell, text: s} }

func boolean(b bool) cell { return cell{kind: boolCell, flag: b} }

func (s *summary) text(str string) cell {
	return cell{kind: stringCell, text: str, verbatim: s.verbatim}
}

func (s *summary) orNone(str string) cell {
	if str == "" {
		return cell{}
	}
	return s.text(str)
}

func (c cell) value() interface{} {
	switch c.kind {
	case stringCell:
		return c.text
	case boolCell:
		return c.flag
	}
	return nil
}

// appendJSON appends the cell as encoding/json writes its value.
func (c cell) appendJSON(b []byte, escaped map[string][]byte) []byte {
	switch c.kind {
	case stringCell:
		if c.verbatim {
			return append(append(append(b, '"'), c.text...), '"')
		}
		return appendJSONString(b, c.text, escaped)
	case boolCell:
		return strconv.AppendBool(b, c.flag)
	}
	return append(b, "null"...)
}

// appendJSONString appends s as encoding/json writes a string; escaped, if
// not nil, keeps the strings that needed escaping, for a Table's cells repeat.
func appendJSONString(b []byte, s string, escaped map[string][]byte) []byte {
	for i := range len(s) {
		if !jsonVerbatim[s[i]] {
			encoded, found := escaped[s]
			if !found {
				var err error
				if encoded, err = json.Marshal(s); err != nil { // a string always encodes
					break
				}
				if escaped != nil {
					escaped[s] = encoded
				}
			}
			return append(b, encoded...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonVerbatim are the bytes encoding/json writes as they are in a string.
var jsonVerbatim = func() (verbatim [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		verbatim[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return verbatim
}()

// rowContext is what every row's cells read besides the object: the time
// of the Table, for AGE and SINCE, and the shards' last contacts.
type rowContext struct {
	now        time.Time
	shards     ShardContacts
	shardCells map[string]cell
}

func newRowContext(shards ShardContacts) *rowContext {
	return &rowContext{now: time.Now(), shards: shards, shardCells: map[string]cell{}}
}

func (c *rowContext) age(created int64) string {
	if created == noTime {
		return "<unknown>"
	}
	return duration.HumanDuration(c.now.Sub(time.Unix(created, 0)))
}

// since is the SINCE cell of a state that began then, in Unix seconds.
func (c *rowContext) since(began int64) cell {
	if began == 0 {
		return cell{}
	}
	return text(duration.HumanDuration(max(0, c.now.Sub(time.Unix(began, 0)))))
}

// shard is the SHARD cell, marked while the shard does not answer.
func (c *rowContext) shard(name string) cell {
	if name == "" {
		return cell{}
	}
	if made, found := c.shardCells[name]; found {
		return made
	}
	made := text(name)
	if since, unreachable := UnreachableShard(c.shards, name); unreachable && since == 0 {
		made = text(name + " (unreachable)")
	} else if unreachable {
		made = text(name + " (unreachable " + since.String() + ")")
	}
	c.shardCells[name] = made
	return made
}

func (c *rowContext) row(wsm *wsmv1alpha1.WorkspaceMount) metav1.TableRow {
	s := summarize(wsm)
	cells := make([]interface{}, len(columns))
	for i := range columns {
		cells[i] = columns[i].cell(&s, c).value()
	}
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: wsm}}
}

// ConvertToTable implements rest.TableConvertor.
func (c tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if options, ok := tableOptions.(*metav1.TableOptions); !ok || !options.NoHeaders {
		table.ColumnDefinitions = columnDefinitions
	}
	row := newRowContext(c.shards)
	var items []wsmv1alpha1.WorkspaceMount
	switch o := object.(type) {
	case *wsmv1alpha1.WorkspaceMount:
		table.ResourceVersion = o.ResourceVersion
		table.Rows = []metav1.TableRow{row.row(o)}
		return table, nil
	case *listAnswer:
		table.ListMeta, items = o.ListMeta, o.items()
	case *wsmv1alpha1.WorkspaceMountList:
		table.ListMeta, items = o.ListMeta, o.Items
	default:
		return nil, fmt.Errorf("cannot render %T as a WorkspaceMount table", object)
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for i := range items {
		table.Rows = append(table.Rows, row.row(&items[i]))
	}
	return table, nil
}

// WritesTableJSON tells whether [tableConvertor.WriteTableJSON] writes the
// Table options ask for: rows of metadata, what kubectl get asks for.
func WritesTableJSON(options *metav1.TableOptions) bool {
	return options.IncludeObject == "" || options.IncludeObject == metav1.IncludeMetadata
}

// partialObjectMetadataV1 is a PartialObjectMetadata's JSON around its metadata.
var partialObjectMetadataV1 = [2]string{`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`, `}`}

var errNotWritable = errors.New("WriteTableJSON writes a Table of List's answer, with rows of metadata (WritesTableJSON)")

// WriteTableJSON writes the meta.k8s.io/v1 Table of a [listAnswer], byte
// for byte as the API server's list handler would, from the entries' JSON
// and summaries; see docs/design/registry-answers.md.
func (c tableConvertor) WriteTableJSON(w io.Writer, list runtime.Object, options *metav1.TableOptions) error {
	l, ok := list.(*listAnswer)
	if !ok || l.replaced || !WritesTableJSON(options) {
		return errNotWritable
	}
	table := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: metav1.SchemeGroupVersion.String()},
		ListMeta: l.ListMeta,
		Rows:     []metav1.TableRow{},
	}
	if !options.NoHeaders {
		table.ColumnDefinitions = columnDefinitions
	}
	header, err := json.Marshal(table)
	if err != nil {
		return err
	}
	const emptyRows = `[]}`
	out := newChunkedWriter(w)
	out.chunk = append(append(out.chunk, header[1:len(header)-len(emptyRows)]...), '[')
	row, escaped := newRowContext(c.shards), map[string][]byte{}
	for i, e := range l.entries {
		if i > 0 {
			out.chunk = append(out.chunk, ',')
		}
		out.chunk = append(out.chunk, `{"cells":[`...)
		for j := range columns {
			if j > 0 {
				out.chunk = append(out.chunk, ',')
			}
			out.chunk = columns[j].cell(&e.summary, row).appendJSON(out.chunk, escaped)
		}
		out.chunk = append(out.chunk, `],"object":`...)
		out.chunk = append(out.chunk, partialObjectMetadataV1[0]...)
		out.chunk = append(out.chunk, e.json[e.metadata.start:e.metadata.end]...)
		out.chunk = append(out.chunk, partialObjectMetadataV1[1]...)
		out.chunk = append(out.chunk, '}')
		if err := out.next(); err != nil {
			return err
		}
	}
	return out.close("]}\n")
}

// ShardContacts tells when each shard of a sharded kcp last answered.
type ShardContacts interface {
	Names() []string // sorted
	// LastContact is how long ago the shard last answered (false: never).
	LastContact(shard string) (since time.Duration, answered bool)
}

// StaleAfter is how long kcp or a shard may be silent before what is served
// of it is said to be the last known state.
const StaleAfter = 30 * time.Second

// UnreachableShard tells whether a shard has not answered for [StaleAfter],
// and since when, to the second: 0 if it never answered.
func UnreachableShard(shards ShardContacts, name string) (since time.Duration, unreachable bool) {
	if shards == nil {
		return 0, false
	}
	since, answered := shards.LastContact(name)
	switch {
	case !answered:
		return 0, true
	case since >= StaleAfter:
		return since.Round(time.Second), true
	}
	return 0, false
}
