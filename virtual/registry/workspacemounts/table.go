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
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// tableConvertor renders WorkspaceMounts for kubectl get: NAME, WORKSPACE
// (the path), KIND, MOUNT, PHASE, READY, KCP-PHASE, AGE, and with -o wide
// CLUSTER, SHARD, URL, REASON.
type tableConvertor struct {
	// shardCell renders status.shard; nil: as it is.
	shardCell ShardCell
}

// ShardCell renders a shard's name for the SHARD column, e.g. marked when
// the shard does not answer and its rows are the last known state.
type ShardCell func(shard string) string

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the Workspace."},
	{Name: "Workspace", Type: "string", Description: "Path of the Workspace (root:org:ws): unambiguous at *, where two rows may share a name."},
	{Name: "Kind", Type: "string", Description: "Kind of the mount object."},
	{Name: "Mount", Type: "string", Description: "Name of the mount object (namespace/name when namespaced)."},
	{Name: "Phase", Type: "string", Description: "Phase of the mount: Ready, Initializing, Connecting, Unknown, NotFound or Invalid."},
	{Name: "Ready", Type: "boolean", Description: "Whether traffic can flow to the mount."},
	{Name: "Kcp-Phase", Type: "string", Description: "kcp's own phase of the Workspace (Ready, Unavailable, Scheduling...): kcp's verdict, beside the mount's."},
	{Name: "Age", Type: "string", Description: "Age of the Workspace."},
	{Name: "Cluster", Type: "string", Priority: 1, Description: "Logical cluster holding the Workspace object."},
	{Name: "Shard", Type: "string", Priority: 1, Description: "kcp shard holding the Workspace object, marked (unreachable ...) while it does not answer: its rows are then the last known state."},
	{Name: "URL", Type: "string", Priority: 1, Description: "URL of the mount."},
	{Name: "Reason", Type: "string", Priority: 1, Description: "Why the mount is in its phase."},
}

// ConvertToTable implements rest.TableConvertor.
func (c tableConvertor) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if options, ok := tableOptions.(*metav1.TableOptions); !ok || !options.NoHeaders {
		table.ColumnDefinitions = columns
	}
	switch o := object.(type) {
	case *wsmv1alpha1.WorkspaceMount:
		table.ResourceVersion = o.ResourceVersion
		table.Rows = []metav1.TableRow{c.row(o)}
	case *encodedList:
		if includeObjectOf(tableOptions) == metav1.IncludeObject {
			// The handlers convert each row's object to the resource's
			// version in place: copies, not the store's objects.
			o.copyItems()
		}
		c.setListRows(table, &o.ListMeta, len(o.items), o.item)
		var version schema.GroupVersion
		if convert, _ := listAnswerFrom(ctx); convert != nil && convert.Kind == tableKind {
			version = convert.GroupVersion()
		}
		setEncodedObjects(table, o.encoded, includeObjectOf(tableOptions), version)
	case *wsmv1alpha1.WorkspaceMountList:
		c.setListRows(table, &o.ListMeta, len(o.Items), func(i int) *wsmv1alpha1.WorkspaceMount { return &o.Items[i] })
	default:
		return nil, fmt.Errorf("cannot render %T as a WorkspaceMount table", object)
	}
	return table, nil
}

// setListRows sets a list's Table: its list metadata, and a row for each of
// the n objects item returns.
func (c tableConvertor) setListRows(table *metav1.Table, listMeta *metav1.ListMeta, n int, item func(int) *wsmv1alpha1.WorkspaceMount) {
	table.ResourceVersion = listMeta.ResourceVersion
	table.Continue = listMeta.Continue
	table.RemainingItemCount = listMeta.RemainingItemCount
	table.Rows = make([]metav1.TableRow, 0, n)
	for i := range n {
		table.Rows = append(table.Rows, c.row(item(i)))
	}
}

// listAnswerKey is the context key of what a list request is answered with.
type listAnswerKey struct{}

// tableKind is the kind of meta.k8s.io a Table answer is converted to.
const tableKind = "Table"

// WithListAnswer tells List and ConvertToTable what the handlers will answer
// a list request with, as content negotiation decides it
// (negotiation.NegotiateOutputMediaType's Convert): nil for the list
// itself, else the meta.k8s.io kind and version it is converted to. A list
// answered as itself or as a Table is made without copies of the store's
// objects (encodedList), and the rows of a Table carry the object JSON the
// store keeps.
func WithListAnswer(ctx context.Context, convert *schema.GroupVersionKind) context.Context {
	return context.WithValue(ctx, listAnswerKey{}, convert)
}

// listAnswerFrom returns what WithListAnswer says of ctx's request, and
// whether it was told.
func listAnswerFrom(ctx context.Context) (convert *schema.GroupVersionKind, known bool) {
	convert, known = ctx.Value(listAnswerKey{}).(*schema.GroupVersionKind) // a nil one too: the list itself
	return convert, known
}

// includeObjectOf is a Table request's includeObject, Metadata by default.
func includeObjectOf(tableOptions runtime.Object) metav1.IncludeObjectPolicy {
	if options, ok := tableOptions.(*metav1.TableOptions); ok && options.IncludeObject != "" {
		return options.IncludeObject
	}
	return metav1.IncludeMetadata
}

// setEncodedObjects sets each row's object to the JSON the store keeps of
// what the handlers put there (handlers.asTable, which replaces
// Object.Object by the includeObject choice; an encoded RawExtension is its
// Raw whenever set): the object itself for includeObject=Object, its
// PartialObjectMetadata for Metadata (the default) in a Table of
// meta.k8s.io/v1 (version). Else (None, or a Table of another version, or
// one not known) the rows are left as they are.
func setEncodedObjects(table *metav1.Table, encoded []*encoding, includeObject metav1.IncludeObjectPolicy, version schema.GroupVersion) {
	if len(encoded) != len(table.Rows) {
		return
	}
	for i := range table.Rows {
		switch {
		case includeObject == metav1.IncludeObject:
			table.Rows[i].Object.Raw = encoded[i].object
		case includeObject == metav1.IncludeMetadata && version == metav1.SchemeGroupVersion:
			table.Rows[i].Object.Raw = encoded[i].partialMetadata()
		default:
			return
		}
	}
}

func (c tableConvertor) row(wsm *wsmv1alpha1.WorkspaceMount) metav1.TableRow {
	cells := objectCells(wsm)
	cells[ageColumn] = age(wsm.CreationTimestamp)
	cells[shardColumn] = c.shard(wsm.Status.Shard)
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: wsm}}
}

// The columns whose cells change while the object does not: AGE with time,
// SHARD with the shard's last contact (ShardCell).
const (
	ageColumn   = 7
	shardColumn = 9
)

// objectCells are a row's cells, those of ageColumn and shardColumn left nil.
func objectCells(wsm *wsmv1alpha1.WorkspaceMount) []interface{} {
	ref := wsm.Spec.MountRef
	mountName := ref.Name
	if ref.Namespace != "" {
		mountName = ref.Namespace + "/" + ref.Name
	}
	return []interface{}{
		wsm.Name, orNone(wsm.Status.WorkspacePath), ref.Kind, mountName, wsm.Status.Phase, wsm.Status.Ready, orNone(wsm.Status.WorkspacePhase),
		nil, logicalcluster.From(wsm).String(), nil, wsm.Status.URL, wsm.Status.Reason,
	}
}

// shard is the SHARD cell: <none> with a single shard (--kubeconfig).
func (c tableConvertor) shard(name string) interface{} {
	if name == "" {
		return nil
	}
	if c.shardCell != nil {
		return c.shardCell(name)
	}
	return name
}

// orNone is a cell kubectl prints as <none> when empty: kcp's phase before
// kcp has set one, the path before the cluster's is known.
func orNone(value string) interface{} {
	if value == "" {
		return nil
	}
	return value
}

func age(created metav1.Time) string {
	return ageAt(created, time.Now())
}

// ageAt is the AGE cell of an object created then, at now.
func ageAt(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created.Time))
}
