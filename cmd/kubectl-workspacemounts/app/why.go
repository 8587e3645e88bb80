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
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/kcp-dev/logicalcluster/v3"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// WhyOptions are why's: a report on one Workspace, a name in the current workspace or a path.
type WhyOptions struct {
	*Options
	Watch bool

	arg          string
	parent       logicalcluster.Path
	name         string
	vw           *rest.RESTClient
	kcp          kcpClients
	nameSelector string
}

func newWhyCommand(o *Options) *cobra.Command {
	return newCommand(&cobra.Command{
		Use:   "why WORKSPACE",
		Short: "Why a Workspace (a name in the current workspace, or a path root:org:ws) is unavailable: its mount's phase, reason, message, conditions, kcp's phase, the last transitions, availability and events",
		Example: `  kubectl workspacemounts why team-a
  kubectl workspacemounts why root:org:team-a -w`,
		Args: cobra.ExactArgs(1),
	}, &WhyOptions{Options: o})
}

// BindFlags binds why's flags to cmd.
func (o *WhyOptions) BindFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Print again whenever the mount changes.")
}

// Complete resolves the target, which must be kcp's, and the clients of the Workspace's parent.
func (o *WhyOptions) Complete(args []string) (err error) {
	o.arg = args[0]
	if err := o.Options.Complete(); err != nil {
		return err
	}
	if err := o.requireKCP(); err != nil {
		return err
	}
	if o.parent, o.name, err = ParseWorkspaceArg(o.arg, o.Target.KCP.Path); err != nil {
		return err
	}
	o.nameSelector = fields.OneTermEqualSelector("metadata.name", o.name).String()
	if o.kcp, err = o.kcpClients(); err != nil {
		return err
	}
	o.vw, err = o.vwClient(o.parent.String(), false)
	return err
}

// Validate has nothing to check: WORKSPACE is checked as Complete splits it.
func (o *WhyOptions) Validate() error {
	return nil
}

// Run prints the report and, with --watch, again at each change of the mount.
func (o *WhyOptions) Run(ctx context.Context) error {
	r, rv := o.gather(ctx)
	if err := RenderWhy(o.Out, r, time.Now()); err != nil || !o.Watch {
		return err
	}
	if rv == "" {
		return fmt.Errorf("cannot watch the mount: %w", r.MountErr)
	}
	return watchFrom(ctx, rv, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.FieldSelector, opts.Watch = o.nameSelector, true
		return o.vw.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	}, func(e watch.Event) error {
		r, _ := o.gather(ctx)
		printf(o.Out, "\n--- %s %s\n", time.Now().UTC().Format(time.RFC3339), e.Type)
		return RenderWhy(o.Out, r, time.Now())
	})
}

// gather fills a report, each part that fails with its error; rv is the resource version of the mount's list.
func (o *WhyOptions) gather(ctx context.Context) (r WhyReport, rv string) {
	r.Path = o.parent.Join(o.name)
	var list wsmv1alpha1.WorkspaceMountList
	opts := metav1.ListOptions{FieldSelector: o.nameSelector}
	if r.MountErr = o.vw.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(&list); r.MountErr == nil {
		rv = list.ResourceVersion
		if len(list.Items) > 0 {
			r.Mount = &list.Items[0]
		}
	}
	if r.Workspace, r.WorkspaceErr = o.kcp.kcp.Cluster(o.parent).TenancyV1alpha1().Workspaces().Get(ctx, o.name, metav1.GetOptions{}); r.WorkspaceErr != nil {
		r.Workspace = nil
		r.EventsErr = errors.New("the Workspace's UID is unknown")
		return r, rv
	}
	events := o.kcp.kube.Cluster(o.parent).CoreV1().Events("")
	r.Events, r.EventsCut, r.EventsErr = WorkspaceEvents(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return events.List(ctx, opts)
	}, o.name, r.Workspace.UID)
	return r, rv
}

// ParseWorkspaceArg is why's WORKSPACE, a path or a name in the current workspace, as its parent and name.
func ParseWorkspaceArg(arg string, current logicalcluster.Path) (logicalcluster.Path, string, error) {
	path := logicalcluster.NewPath(arg)
	if arg == "" || path == logicalcluster.Wildcard || !path.IsValid() {
		return logicalcluster.Path{}, "", fmt.Errorf("%q is neither a Workspace name nor a workspace path (root:org:ws)", arg)
	}
	if !strings.Contains(arg, ":") {
		if current.Empty() {
			return logicalcluster.Path{}, "", fmt.Errorf("%q is a name, and the current context names no workspace: give its path (root:org:ws)", arg)
		}
		return current, arg, nil
	}
	parent, name := path.Split()
	return parent, name, nil
}

// WorkspaceEvents lists the controller's events regarding the Workspace name of uid, as kubectl describe finds an
// object's, paged and bounded by maxEventsListed; cut is true when some were left. It keeps the latest maxEvents.
func WorkspaceEvents(ctx context.Context, list pager.ListPageFunc, name string, uid types.UID) (events []corev1.Event, cut bool, err error) {
	selector := fields.Set{
		"involvedObject.kind": "Workspace",
		"involvedObject.name": name,
		"involvedObject.uid":  string(uid),
		"reportingComponent":  reportingController,
	}.AsSelector().String()
	cut, err = listBounded(ctx, list, metav1.ListOptions{FieldSelector: selector}, maxEventsListed, func(obj runtime.Object) bool {
		if e, ok := obj.(*corev1.Event); ok && Regarding(*e, name, uid) {
			events = append(events, *e)
		}
		return false
	})
	if err != nil {
		return nil, false, err
	}
	return LatestEvents(events), cut, nil
}

// Regarding tells whether e is the controller's event regarding the Workspace name of uid: what the server
// answers to the field selector is checked again.
func Regarding(e corev1.Event, name string, uid types.UID) bool {
	ref := e.InvolvedObject
	return ref.Kind == "Workspace" && ref.Name == name && ref.UID == uid && e.ReportingController == reportingController
}

// LatestEvents keeps the latest maxEvents events, oldest first.
func LatestEvents(events []corev1.Event) []corev1.Event {
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	return events
}
