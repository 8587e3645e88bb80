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

// Package cleanup removes what the plugin wrote from every Workspace of every shard (`workspacemounts cleanup`),
// once no plugin runs, holding the leader Lease meanwhile; see docs/design/controller-cleanup.md.
package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// PageSize is how many Workspaces one list request asks for.
const PageSize = 500

// Shard is where one shard's Workspaces are read and written.
type Shard struct {
	Name string
	// InTreeMountsController tells that kcp's in-tree mounts controller runs on the shard, or may.
	InTreeMountsController bool
	// ListWorkspaces lists the Workspaces of every cluster of the shard, a page at a time.
	ListWorkspaces func(ctx context.Context, opts metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error)
	GetWorkspace   func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error)
	// PatchWorkspace sends a merge patch, of the status with subresource "status".
	PatchWorkspace func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error)
}

// Cleanup removes the plugin's writes from every Workspace of every shard.
type Cleanup struct {
	// GetLease reads the leader Lease (a NotFound error when there is none).
	GetLease func(ctx context.Context) (*coordinationv1.Lease, error)
	// LeaseName names the Lease in messages: <cluster>/<namespace>/<name>.
	LeaseName string
	// Hold runs clean while holding the leader Lease: an error when it cannot be taken.
	Hold func(ctx context.Context, clean func(ctx context.Context) error) error
	// Shards returns the shards to clean, once the Lease is free.
	Shards func(ctx context.Context) ([]Shard, error)
	Now    func() time.Time
	// Out gets one line per Workspace changed and a summary.
	Out io.Writer
	// Yes writes; without, nothing is written.
	Yes bool
}

// Result counts what Run did.
type Result struct {
	Changed, Failed, Shards int
	// Interrupted is why the run stopped before the end ("" if it did not).
	Interrupted string
	NotDone     []string
}

// Run checks the Lease, takes it, then cleans every shard, Workspace by Workspace, and releases it.
func (c *Cleanup) Run(ctx context.Context) (Result, error) {
	lease, err := c.GetLease(ctx)
	if err := CheckLease(lease, err, c.Now(), c.LeaseName); err != nil {
		return Result{}, err
	}
	var result Result
	var cleanErr error
	if err := c.Hold(ctx, func(ctx context.Context) error {
		result, cleanErr = c.clean(ctx)
		return nil
	}); err != nil {
		return result, err
	}
	return result, cleanErr
}

// clean cleans every shard, and prints the summary.
func (c *Cleanup) clean(ctx context.Context) (Result, error) {
	shards, err := c.Shards(ctx)
	if err != nil {
		return Result{}, err
	}
	var result Result
	var errs []error
	kept := 0
	for i, shard := range shards {
		if ctx.Err() != nil {
			for _, left := range shards[i:] {
				result.NotDone = append(result.NotDone, "shard "+left.String())
			}
			break
		}
		result.Shards++
		at, err := c.cleanShard(ctx, shard, &result, &kept)
		if at != "" { // interrupted: err is ctx's cause, said below
			result.NotDone = append(result.NotDone, fmt.Sprintf("shard %s from %s on", shard.String(), at))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %s: %w", shard.String(), err))
		}
	}
	verb := "changed"
	if !c.Yes {
		verb = "to change"
	}
	summary := fmt.Sprintf("%d Workspaces %s on %d shards", result.Changed, verb, result.Shards)
	if result.Failed > 0 {
		summary += fmt.Sprintf(", %d failed", result.Failed)
		errs = append(errs, fmt.Errorf("%d Workspaces could not be cleaned up; run again", result.Failed))
	}
	if len(result.NotDone) > 0 {
		result.Interrupted = context.Cause(ctx).Error()
		summary = fmt.Sprintf("interrupted (%s): %s; not done: %s; run again", result.Interrupted, summary, strings.Join(result.NotDone, ", "))
		errs = append(errs, fmt.Errorf("interrupted (%s) before the end; run again", result.Interrupted))
	}
	if !c.Yes {
		summary += " (dry run: nothing written; run with --yes)"
	}
	fmt.Fprintln(c.Out, summary)
	if kept > 0 {
		fmt.Fprintf(c.Out, "spec.URL of %d mounted Workspaces is left as it is: kcp refuses to unset it (\"URL cannot be unset\")\n", kept)
	}
	return result, errors.Join(errs...)
}

// String names the shard in messages.
func (s Shard) String() string {
	if s.Name == "" {
		return "(the one shard)"
	}
	return s.Name
}

// cleanShard cleans every Workspace of one shard, page by page; it fails only when the shard cannot be listed.
func (c *Cleanup) cleanShard(ctx context.Context, shard Shard, result *Result, kept *int) (at string, err error) {
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		list, err := shard.ListWorkspaces(ctx, opts)
		if err != nil && ctx.Err() != nil {
			return "the next page", context.Cause(ctx)
		}
		if err != nil {
			return "", fmt.Errorf("listing Workspaces: %w", err)
		}
		for i := range list.Items {
			ws := &list.Items[i]
			if ctx.Err() != nil {
				return "Workspace " + key(ws), context.Cause(ctx)
			}
			changed, err := c.cleanWorkspace(ctx, shard, ws)
			if err != nil && ctx.Err() != nil {
				// Stopped half way: its annotations may be gone already, and the next run finishes it.
				return "Workspace " + key(ws), context.Cause(ctx)
			}
			if err != nil {
				result.Failed++
				fmt.Fprintf(c.Out, "%s  FAILED: %v\n", key(ws), err)
				klog.FromContext(ctx).Error(err, "cannot clean up a Workspace", "shard", shard.Name, "workspace", key(ws))
				continue
			}
			if changed != "" {
				result.Changed++
				fmt.Fprintf(c.Out, "%s  %s\n", key(ws), changed)
				if ws.Spec.Mount != nil && ws.Spec.URL != "" {
					*kept++
				}
			}
		}
		if list.Continue == "" {
			return "", nil
		}
		if ctx.Err() != nil {
			return "the next page", context.Cause(ctx)
		}
		opts.Continue = list.Continue
	}
}

func key(ws *tenancyv1alpha1.Workspace) string {
	return logicalcluster.From(ws).String() + "|" + ws.Name
}

// Needs tells what RemoveOwned would change on ws on a shard: the annotations removed (their short names), the
// conditions removed, and the Workspace after.
func Needs(ws *tenancyv1alpha1.Workspace, shard Shard) (annotations []string, conditions []conditionsv1alpha1.ConditionType, updated *tenancyv1alpha1.Workspace) {
	for _, k := range []string{mount.PhaseAnnotationKey, mount.StatusAnnotationKey} {
		if _, found := ws.Annotations[k]; found {
			annotations = append(annotations, strings.TrimPrefix(k, "workspacemounts.io/"))
		}
	}
	updated = ws.DeepCopy()
	_, conditions = workspacemounts.RemoveOwned(updated, shard.InTreeMountsController)
	return annotations, conditions, updated
}

// cleanWorkspace removes the plugin's writes from ws (with Yes) and says what it did, or would do; "" when ws carries
// none of them.
func (c *Cleanup) cleanWorkspace(ctx context.Context, shard Shard, ws *tenancyv1alpha1.Workspace) (string, error) {
	annotations, conditions, updated := Needs(ws, shard)
	if len(annotations) == 0 && len(conditions) == 0 {
		return "", nil
	}
	names := make([]string, len(conditions))
	for i, t := range conditions {
		names[i] = string(t)
	}
	var what []string
	if len(annotations) > 0 {
		what = append(what, "annotations "+strings.Join(annotations, ","))
	}
	if len(conditions) > 0 {
		what = append(what, "condition "+strings.Join(names, ","))
		if updated.Status.Phase != ws.Status.Phase {
			what[len(what)-1] += fmt.Sprintf(" (phase %s -> %s)", ws.Status.Phase, updated.Status.Phase)
		}
	}
	if !c.Yes {
		return "would remove " + strings.Join(what, "; "), nil
	}

	cluster := logicalcluster.From(ws)
	current := ws
	if len(annotations) > 0 {
		patch := map[string]interface{}{}
		for _, k := range []string{mount.PhaseAnnotationKey, mount.StatusAnnotationKey} {
			patch[k] = nil
		}
		data, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": patch}})
		if err != nil {
			return "", err
		}
		written, err := shard.PatchWorkspace(ctx, cluster, ws.Name, data)
		if apierrors.IsNotFound(err) {
			return "", nil // deleted meanwhile: nothing left to clean
		}
		if err != nil {
			return "", fmt.Errorf("removing the annotations: %w", err)
		}
		if written != nil {
			current = written
		}
	}
	if len(conditions) > 0 {
		first := true
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if !first {
				fresh, err := shard.GetWorkspace(ctx, cluster, ws.Name)
				if err != nil {
					return err
				}
				current = fresh
			}
			first = false
			_, remaining, target := Needs(current, shard)
			if len(remaining) == 0 {
				return nil
			}
			data, err := StatusPatch(current, target)
			if err != nil {
				return err
			}
			_, err = shard.PatchWorkspace(ctx, cluster, ws.Name, data, "status")
			return err
		})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			done := ""
			if len(annotations) > 0 {
				done = " (the annotations are removed)"
			}
			return "", fmt.Errorf("removing the condition %s%s: %w", strings.Join(names, ","), done, err)
		}
	}
	return "removed " + strings.Join(what, "; "), nil
}

// StatusPatch is the merge patch of the status subresource taking current to updated: the whole remaining condition
// list.
func StatusPatch(current, updated *tenancyv1alpha1.Workspace) ([]byte, error) {
	status := map[string]interface{}{"conditions": nil}
	if len(updated.Status.Conditions) > 0 {
		status["conditions"] = updated.Status.Conditions
	}
	if updated.Status.Phase != current.Status.Phase {
		status["phase"] = updated.Status.Phase
	}
	return json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"resourceVersion": current.ResourceVersion, "uid": current.UID},
		"status":   status,
	})
}

// CheckLease refuses while a plugin holds the Lease: it exists, has a holder, and its renewTime plus
// leaseDurationSeconds is after now.
func CheckLease(lease *coordinationv1.Lease, err error, now time.Time, name string) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the leader Lease %s to tell whether a plugin runs: %w", name, err)
	}
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return nil
	}
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return nil
	}
	expires := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second)
	if !expires.After(now) {
		return nil
	}
	return fmt.Errorf("a plugin is running: %s holds the leader Lease %s (renewed %s ago); stop it first "+
		"(kubectl scale deployment workspacemounts --replicas=0), then run cleanup again",
		*spec.HolderIdentity, name, now.Sub(spec.RenewTime.Time).Round(time.Second))
}
