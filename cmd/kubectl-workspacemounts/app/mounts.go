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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// mountIndex finds the tree's mounted nodes by their mount's key; missing counts those without a Mount.
type mountIndex struct {
	byKey   map[string]*Node
	missing int
}

func mountKey(cluster logicalcluster.Name, name string) string {
	return cluster.String() + "|" + name
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

// attach sets a copy of m as its node's Mount; it returns true once every node has its Mount.
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

// MountLister reads at most max WorkspaceMounts at one cluster segment, handing each to each until it says stop;
// n is how many were read.
type MountLister func(ctx context.Context, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) (stop bool)) (n int, err error)

// ReadMounts reads the mounts of the tree's mounted Workspaces with list: at * until every one has its mount, or
// where * is refused at each parent, a failure there being a warning. Past maxMounts, the nodes left get a note and
// cut is true.
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
				fmt.Fprintf(warn, "Warning: the mounts of %s: %v\n", parent, shortError(err))
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

// listMounts is the [MountLister] of the virtual workspace, paged.
func (o *TreeOptions) listMounts(ctx context.Context, cluster string, max int, each func(*wsmv1alpha1.WorkspaceMount) (stop bool)) (n int, err error) {
	client, err := o.vwClient(cluster, false)
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
