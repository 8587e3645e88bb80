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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Bounds of what why shows of what kcp serves (events and conditions anyone
// with access to the cluster may write).
const (
	// maxEvents is how many of the Workspace's most recent events are shown.
	maxEvents = 10
	// maxEventsListed is how many of the Workspace's events are read to
	// find the most recent: the controller records a dozen an hour at
	// most, and whoever may create events can forge more.
	maxEventsListed = 1000
	// reportingController is the controller's reportingController
	// (workspacemounts.EventReportingController): why shows its events only.
	reportingController = "workspacemounts.io/controller"
)

// WhyReport is what why gathers about one Workspace: what the virtual
// workspace serves, the Workspace kcp serves, and its events; each with the
// error that kept it away.
type WhyReport struct {
	Path         logicalcluster.Path
	Mount        *wsmv1alpha1.WorkspaceMount
	MountErr     error
	Workspace    *tenancyv1alpha1.Workspace
	WorkspaceErr error
	// Events are the controller's events regarding the Workspace (its UID);
	// EventsCut is true when more than maxEventsListed were left unread.
	Events    []corev1.Event
	EventsCut bool
	EventsErr error
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// RenderWhy writes the report as kubectl describe writes objects: the
// verdict first, then the mount's state, kcp's, the transitions, the
// availability and the events. Every value goes through printf (clean);
// kcp's strings, which nothing bounds, are also cut (shown).
func RenderWhy(out io.Writer, r WhyReport, now time.Time) error {
	// kubectl describe's tabwriter; cli-runtime's (printers.GetNewTabWriter)
	// remembers widths across sections.
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	printf(w, "Workspace:\t%s\n", r.Path)
	printf(w, "Verdict:\t%s\n", verdict(r, now))
	if m := r.Mount; m != nil {
		s := m.Status
		ref := m.Spec.MountRef
		name := ref.Name
		if ref.Namespace != "" {
			name = ref.Namespace + "/" + name
		}
		printf(w, "Mount object:\t%s %s (%s)\n", ref.Kind, name, ref.APIVersion)
		printf(w, "Phase:\t%s\n", s.Phase)
		printf(w, "Ready:\t%v\n", s.Ready)
		printf(w, "Reason:\t%s\n", s.Reason)
		printf(w, "Message:\t%s\n", orNone(s.Message))
		printf(w, "URL:\t%s\n", orNone(s.URL))
		if s.LastTransitionTime != nil {
			printf(w, "Since:\t%s (%s ago)\n", s.LastTransitionTime.UTC().Format(time.RFC3339), ago(s.LastTransitionTime.Time, now))
		}
		if s.Shard != "" {
			printf(w, "Shard:\t%s\n", s.Shard)
		}
		printf(w, "Availability:\t%s\n", availability(s, now))
		section(w)
		printf(w, "Mount conditions:\n")
		if len(s.Conditions) == 0 {
			printf(w, "  <none>\n")
		} else {
			printf(w, "  TYPE\tSTATUS\tREASON\tMESSAGE\n")
			for _, c := range s.Conditions {
				printf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, orNone(c.Reason), c.Message)
			}
		}
		section(w)
		printf(w, "Transitions (oldest first):\n")
		if len(s.Transitions) == 0 {
			printf(w, "  <none>\n")
		} else {
			printf(w, "  TIME\tAGE\tPHASE\tREADY\tREASON\n")
			for _, t := range s.Transitions {
				printf(w, "  %s\t%s\t%s\t%v\t%s\n", t.Time.UTC().Format(time.RFC3339), ago(t.Time.Time, now), t.Phase, t.Ready, t.Reason)
			}
		}
	}
	section(w)
	if ws := r.Workspace; ws != nil {
		printf(w, "kcp phase:\t%s\n", orNone(shown(string(ws.Status.Phase))))
		section(w)
		printf(w, "kcp conditions:\n")
		if len(ws.Status.Conditions) == 0 {
			printf(w, "  <none>\n")
		} else {
			printf(w, "  TYPE\tSTATUS\tSEVERITY\tREASON\tAGE\tMESSAGE\n")
			for _, c := range ws.Status.Conditions {
				printf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", shown(string(c.Type)), shown(string(c.Status)), orNone(shown(string(c.Severity))), orNone(shown(c.Reason)), ago(c.LastTransitionTime.Time, now), shown(c.Message))
			}
		}
	} else {
		printf(w, "kcp phase:\t<unknown> (%s)\n", shortError(r.WorkspaceErr))
	}
	section(w)
	printf(w, "Events:\n")
	switch {
	case r.EventsErr != nil:
		printf(w, "  <unknown> (%s)\n", shortError(r.EventsErr))
	case len(r.Events) == 0:
		printf(w, "  <none>\n")
	default:
		printf(w, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE\n")
		for _, e := range r.Events {
			printf(w, "  %s\t%s\t%s\t%s\t%s\n", shown(e.Type), shown(e.Reason), eventAge(e, now), shown(eventSource(e)), shown(e.Message))
		}
	}
	if r.EventsCut {
		printf(w, "  (more than %d events: the latest of the first %d read)\n", maxEventsListed, maxEventsListed)
	}
	return w.Flush()
}

// section ends the columns of a section: the next aligns on its own.
func section(w *tabwriter.Writer) {
	_ = w.Flush() // the error, the output's, is the last Flush's too
}

// verdict is the one line answering "why": is traffic flowing, and if not,
// since when and what says so.
func verdict(r WhyReport, now time.Time) string {
	m := r.Mount
	if m == nil {
		return mountAbsence(r)
	}
	s := m.Status
	since := ""
	if s.LastTransitionTime != nil {
		since = " for " + ago(s.LastTransitionTime.Time, now)
	}
	kcpPhase := ""
	if s.WorkspacePhase != "" {
		kcpPhase = fmt.Sprintf("; kcp's phase is %s", s.WorkspacePhase)
	}
	flaps := ""
	if n := len(s.Transitions); n > 1 {
		flaps = fmt.Sprintf("; %d transitions shown below", n)
	}
	if s.Ready {
		return fmt.Sprintf("the mount is ready%s%s%s", since, kcpPhase, flaps)
	}
	return fmt.Sprintf("the mount is not ready%s: %s (%s)%s%s", since, s.Phase, s.Reason, kcpPhase, flaps)
}

// mountAbsence says why the virtual workspace served no mount.
func mountAbsence(r WhyReport) string {
	switch {
	case r.Workspace != nil && r.Workspace.Spec.Mount == nil:
		return "not a mounted Workspace (no spec.mount)"
	case r.MountErr == nil, apierrors.IsNotFound(r.MountErr):
		return "not served by the virtual workspace (not mounted, not reached by the controller yet, or not visible to you)"
	default:
		return "<unknown> (the virtual workspace: " + shortError(r.MountErr) + ")"
	}
}

// availability shows the mount's availability at now, computed with
// [wsmv1alpha1.MountAvailability.At]: from status.availability, or, where the virtual workspace serves none (a
// mount in one state since the controller first saw it), from that state
// alone, since its lastTransitionTime.
func availability(s wsmv1alpha1.WorkspaceMountStatus, now time.Time) string {
	a := s.Availability
	switch {
	case a == nil && s.LastTransitionTime == nil:
		return "<none> (the controller has not reached the mount yet)"
	case a == nil:
		a = &wsmv1alpha1.MountAvailability{Since: *s.LastTransitionTime}
	}
	ratio, current := a.At(now, s.Ready)
	return fmt.Sprintf("ratio %s since %s (ready %s of %s before the current state; current state %s)",
		ratio, a.Since.UTC().Format(time.RFC3339),
		seconds(a.ReadySeconds), seconds(a.ObservedSeconds), seconds(current))
}

func seconds(s int64) string {
	return duration.HumanDuration(time.Duration(s) * time.Second)
}

func shortError(err error) string {
	switch {
	case err == nil:
		return "not asked"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsNotFound(err):
		return "not found"
	default:
		return shown(err.Error())
	}
}

// eventTime is when an event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

func eventFirst(e corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// eventAge is kubectl describe's: 5m, or 5m (x3 over 10m) for a series.
func eventAge(e corev1.Event, now time.Time) string {
	count := e.Count
	if e.Series != nil {
		count = e.Series.Count
	}
	last := ago(eventTime(e), now)
	if count > 1 {
		return fmt.Sprintf("%s (x%d over %s)", last, count, ago(eventFirst(e), now))
	}
	return last
}

func eventSource(e corev1.Event) string {
	switch {
	case e.ReportingController != "":
		return e.ReportingController
	case e.Source.Component != "":
		return e.Source.Component
	default:
		return "<unknown>"
	}
}

// LatestEvents keeps the most recent maxEvents events, oldest first.
func LatestEvents(events []corev1.Event) []corev1.Event {
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	return events
}

// ParseWorkspaceArg is why's WORKSPACE: a path (root:org:ws) or a name in
// the current workspace; it returns the Workspace's parent and name.
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

type whyOptions struct {
	*Options
	Watch bool
}

func newWhyCommand(o *Options) *cobra.Command {
	y := &whyOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "why WORKSPACE",
		Short: "Why a Workspace (a name in the current workspace, or a path root:org:ws) is unavailable: its mount's phase, reason, message, conditions, kcp's phase, the last transitions, availability and events",
		Example: `  kubectl workspacemounts why team-a
  kubectl workspacemounts why root:org:team-a -w`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return y.run(cmd, args[0])
		},
	}
	cmd.Flags().BoolVarP(&y.Watch, "watch", "w", false, "Print again whenever the mount changes.")
	return cmd
}

func (y *whyOptions) run(cmd *cobra.Command, arg string) error {
	ctx := contextOf(cmd)
	target, config, err := y.target()
	if err != nil {
		return err
	}
	if err := target.requireKCP(config); err != nil {
		return err
	}
	parent, name, err := ParseWorkspaceArg(arg, target.KCP.Path)
	if err != nil {
		return err
	}
	clients, err := newKCPClients(config, target)
	if err != nil {
		return err
	}
	vw, err := vwClient(config, target, parent.String())
	if err != nil {
		return err
	}
	g := whyGatherer{vw: vw, kcp: clients, parent: parent, name: name}
	r, rv := g.gather(ctx)
	if err := RenderWhy(y.Out, r, time.Now()); err != nil {
		return err
	}
	if !y.Watch {
		return nil
	}
	opts := metav1.ListOptions{Watch: true, ResourceVersion: rv, FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	stream, err := vw.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).Stream(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	decoder := json.NewDecoder(stream)
	for {
		var event metav1.WatchEvent
		if err := decoder.Decode(&event); err != nil {
			if ctx.Err() != nil || err == io.EOF {
				return nil
			}
			return fmt.Errorf("reading the watch: %w", err)
		}
		if event.Type == "BOOKMARK" {
			continue
		}
		r, _ := g.gather(ctx)
		printf(y.Out, "\n--- %s %s\n", time.Now().UTC().Format(time.RFC3339), event.Type)
		if err := RenderWhy(y.Out, r, time.Now()); err != nil {
			return err
		}
	}
}

// whyGatherer asks the virtual workspace and kcp about one Workspace.
type whyGatherer struct {
	vw     *rest.RESTClient
	kcp    kcpClients
	parent logicalcluster.Path
	name   string
}

// gather fills a report; each part that fails keeps its error. rv is the
// virtual workspace's resource version of the answer (for why -w).
func (g whyGatherer) gather(ctx context.Context) (WhyReport, string) {
	r := WhyReport{Path: g.parent.Join(g.name)}
	var list wsmv1alpha1.WorkspaceMountList
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", g.name).String()}
	rv := ""
	if err := g.vw.Get().Resource(wsmv1alpha1.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(&list); err != nil {
		r.MountErr = err
	} else {
		rv = list.ResourceVersion
		if len(list.Items) > 0 {
			r.Mount = &list.Items[0]
		}
	}
	r.Workspace, r.WorkspaceErr = g.kcp.kcp.Cluster(g.parent).TenancyV1alpha1().Workspaces().Get(ctx, g.name, metav1.GetOptions{})
	if r.WorkspaceErr != nil {
		r.Workspace = nil
	}
	if r.Workspace == nil {
		r.EventsErr = errors.New("the Workspace's UID is unknown")
		return r, rv
	}
	client := g.kcp.kube.Cluster(g.parent).CoreV1().Events("")
	r.Events, r.EventsCut, r.EventsErr = WorkspaceEvents(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	}, g.name, r.Workspace.UID)
	return r, rv
}

// WorkspaceEvents lists, with list, the controller's events regarding the
// Workspace name of uid, as kubectl describe finds an object's
// (involvedObject kind, name and UID, in any namespace), from the
// controller only (reportingComponent): paged and bounded by
// maxEventsListed, cut true when some were left; the most recent maxEvents
// are kept.
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

// Regarding tells whether e is the controller's event regarding the
// Workspace name of uid: the field selector asks the server for those
// only, and what it answers is checked again.
func Regarding(e corev1.Event, name string, uid types.UID) bool {
	ref := e.InvolvedObject
	return ref.Kind == "Workspace" && ref.Name == name && ref.UID == uid && e.ReportingController == reportingController
}
