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
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Bounds of what why shows of the events anyone with access to the cluster may write: the latest maxEvents of at
// most maxEventsListed, of the controller's reportingController only.
const (
	maxEvents           = 10
	maxEventsListed     = 1000
	reportingController = "workspacemounts.io/controller"
)

// WhyReport is what why gathers about one Workspace, each part with the error that kept it away; EventsCut is true
// when more than maxEventsListed events were left unread.
type WhyReport struct {
	Path         logicalcluster.Path
	Mount        *wsmv1alpha1.WorkspaceMount
	MountErr     error
	Workspace    *tenancyv1alpha1.Workspace
	WorkspaceErr error
	Events       []corev1.Event
	EventsCut    bool
	EventsErr    error
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

// RenderWhy writes the report as kubectl describe writes objects: the verdict, the mount's state, kcp's, the
// transitions, the availability and the events. Every value goes through printf; kcp's strings are also cut.
func RenderWhy(out io.Writer, r WhyReport, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0) // kubectl describe's; cli-runtime's keeps widths across sections
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
		section(w, "Mount conditions:", len(s.Conditions), "  TYPE\tSTATUS\tREASON\tMESSAGE\n")
		for _, c := range s.Conditions {
			printf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, orNone(c.Reason), c.Message)
		}
		section(w, "Transitions (oldest first):", len(s.Transitions), "  TIME\tAGE\tPHASE\tREADY\tREASON\n")
		for _, t := range s.Transitions {
			printf(w, "  %s\t%s\t%s\t%v\t%s\n", t.Time.UTC().Format(time.RFC3339), ago(t.Time.Time, now), t.Phase, t.Ready, t.Reason)
		}
	}
	_ = w.Flush()
	if ws := r.Workspace; ws != nil {
		printf(w, "kcp phase:\t%s\n", orNone(shown(string(ws.Status.Phase))))
		section(w, "kcp conditions:", len(ws.Status.Conditions), "  TYPE\tSTATUS\tSEVERITY\tREASON\tAGE\tMESSAGE\n")
		for _, c := range ws.Status.Conditions {
			printf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", shown(string(c.Type)), shown(string(c.Status)), orNone(shown(string(c.Severity))), orNone(shown(c.Reason)), ago(c.LastTransitionTime.Time, now), shown(c.Message))
		}
	} else {
		printf(w, "kcp phase:\t<unknown> (%s)\n", shortError(r.WorkspaceErr))
	}
	if r.EventsErr != nil {
		section(w, "Events:", -1, "")
		printf(w, "  <unknown> (%s)\n", shortError(r.EventsErr))
	} else {
		section(w, "Events:", len(r.Events), "  TYPE\tREASON\tAGE\tFROM\tMESSAGE\n")
	}
	for _, e := range r.Events {
		printf(w, "  %s\t%s\t%s\t%s\t%s\n", shown(e.Type), shown(e.Reason), eventAge(e, now), shown(eventSource(e)), shown(e.Message))
	}
	if r.EventsCut {
		printf(w, "  (more than %d events: the latest of the first %d read)\n", maxEventsListed, maxEventsListed)
	}
	return w.Flush()
}

// section ends the columns before it and starts a section of rows: its header, or <none> without rows (n < 0:
// neither).
func section(w *tabwriter.Writer, title string, n int, header string) {
	_ = w.Flush() // the output's error is the last Flush's too
	printf(w, "%s\n", title)
	switch {
	case n == 0:
		printf(w, "  <none>\n")
	case n > 0:
		_, _ = io.WriteString(w, header)
	}
}

// verdict is the one line answering "why": is traffic flowing, and if not, since when and what says so.
func verdict(r WhyReport, now time.Time) string {
	m := r.Mount
	if m == nil {
		return mountAbsence(r)
	}
	s := m.Status
	since, kcpPhase, flaps := "", "", ""
	if s.LastTransitionTime != nil {
		since = " for " + ago(s.LastTransitionTime.Time, now)
	}
	if s.WorkspacePhase != "" {
		kcpPhase = fmt.Sprintf("; kcp's phase is %s", s.WorkspacePhase)
	}
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

// availability is the mount's availability at now with [wsmv1alpha1.MountAvailability.At]; a mount served without
// status.availability has been in one state since its lastTransitionTime.
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

// eventTime is when an event last happened, whichever API wrote it; eventFirst when it first did.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func eventFirst(e corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
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
	}
	return "<unknown>"
}
