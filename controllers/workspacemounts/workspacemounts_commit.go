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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8smetrics "k8s.io/component-base/metrics"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/kcp-dev/kcp/pkg/reconciler/committer"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// commitMetadataAndSpec writes the annotations (and with --workspace-url spec.URL) when they changed, in one merge
// patch carrying ws's resourceVersion.
func (c *Controller) commitMetadataAndSpec(ctx context.Context, key string, ws *tenancyv1alpha1.Workspace, state mountState) (*tenancyv1alpha1.Workspace, error) {
	updated := ws.DeepCopy()
	c.workspaces.applyMetadataAndSpec(updated, state)
	oldPhase, newPhase := ws.Annotations[mount.PhaseAnnotationKey], updated.Annotations[mount.PhaseAnnotationKey]
	if oldPhase == newPhase && ws.Annotations[mount.StatusAnnotationKey] == updated.Annotations[mount.StatusAnnotationKey] && ws.Spec.URL == updated.Spec.URL {
		return nil, nil // nothing to write
	}
	if err := c.allowRepair(key, ws, updated, state); err != nil {
		return nil, err
	}
	written, err := c.commit(ctx, key,
		&workspaceResource{ObjectMeta: ws.ObjectMeta, Spec: ws.Spec, Status: ws.Status},
		&workspaceResource{ObjectMeta: updated.ObjectMeta, Spec: updated.Spec, Status: ws.Status},
		metrics.AnnotationPatches)
	if refused, ok := asURLRefused(ws, updated, err); ok {
		c.workspaces.recordRefusal(key, refused, c.workspaces.now())
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	c.noteWritten(key, updated, state)
	if oldPhase != newPhase {
		metrics.ObservePhaseTransition(oldPhase, newPhase)
	}
	c.noteTransition(ws, updated)
	return written, nil
}

// noteTransition records the transition that updated, just written over ws, holds, if it holds one: in the transition
// histograms, and as an event regarding the Workspace.
func (c *Controller) noteTransition(ws, updated *tenancyv1alpha1.Workspace) {
	status, found := mount.StatusOf(updated.Annotations)
	if !found {
		return // no longer mounted
	}
	if !status.TransitionFrom(priorStatus(ws)) {
		return
	}
	metrics.ObserveTransition(c.shard, status)
	c.recordTransition(ws, status)
}

// commitStatus writes the condition (and with --workspace-url the phase) when they changed, in one merge patch of the
// status subresource.
func (c *Controller) commitStatus(ctx context.Context, key string, ws, written *tenancyv1alpha1.Workspace, fromKCP bool, state mountState) error {
	updated := ws.DeepCopy()
	c.workspaces.applyStatus(updated, state)
	if written == nil && equality.Semantic.DeepEqual(ws.Status, updated.Status) {
		return nil // nothing to write
	}
	current := written
	if current == nil && fromKCP {
		current = ws
	}
	if current == nil {
		var err error
		cluster, _, name, _ := kcpcache.SplitMetaClusterNamespaceKey(key)
		if current, err = c.getWorkspace(ctx, cluster, name); err != nil {
			c.conflicted.put(key, true)
			return err
		}
	}
	updated = current.DeepCopy()
	c.workspaces.applyStatus(updated, state)
	if equality.Semantic.DeepEqual(current.Status, updated.Status) {
		return nil // kcp has it already
	}
	_, err := c.commit(ctx, key,
		&workspaceResource{ObjectMeta: current.ObjectMeta, Spec: current.Spec, Status: current.Status},
		&workspaceResource{ObjectMeta: current.ObjectMeta, Spec: current.Spec, Status: updated.Status},
		metrics.WorkspaceStatusPatches)
	return err
}

type workspaceResource = committer.Resource[tenancyv1alpha1.WorkspaceSpec, tenancyv1alpha1.WorkspaceStatus]

// commit writes the difference between oldResource and newResource, either metadata and spec or status, through kcp's
// committer.
func (c *Controller) commit(ctx context.Context, key string, oldResource, newResource *workspaceResource, patches *k8smetrics.CounterVec) (*tenancyv1alpha1.Workspace, error) {
	if c.writeFence != nil {
		if err := c.writeFence(); err != nil {
			return nil, err
		}
	}
	patcher := &workspacePatcher{patch: c.patchWorkspace, cluster: logicalcluster.From(oldResource)}
	err := committer.NewCommitterScoped[*tenancyv1alpha1.Workspace, *workspacePatcher,
		tenancyv1alpha1.WorkspaceSpec, tenancyv1alpha1.WorkspaceStatus](patcher)(ctx, oldResource, newResource)
	switch {
	case err == nil:
		patches.WithLabelValues(metrics.PatchApplied).Inc()
		return patcher.written, nil
	case apierrors.IsConflict(err):
		patches.WithLabelValues(metrics.PatchConflict).Inc()
		c.conflicted.put(key, true)
	default:
		patches.WithLabelValues(metrics.PatchError).Inc()
	}
	return nil, err
}

// workspacePatcher is the committer's Patcher for one Workspace: it keeps the Workspace kcp answered with.
type workspacePatcher struct {
	patch   func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error)
	cluster logicalcluster.Name
	written *tenancyv1alpha1.Workspace
}

func (p *workspacePatcher) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
	if pt != types.MergePatchType {
		return nil, fmt.Errorf("unexpected patch type %s", pt)
	}
	ws, err := p.patch(ctx, p.cluster, name, data, subresources...)
	if err == nil {
		p.written = ws
	}
	return ws, err
}
