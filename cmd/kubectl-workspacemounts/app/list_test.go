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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// pagedEvents is a server's list of events in pages of size (its own, as
// a server may answer fewer than the limit): it records the options of each
// request, and answers a continue token while events are left.
type pagedEvents struct {
	events []corev1.Event
	size   int

	lock     sync.Mutex
	requests []metav1.ListOptions
}

func (p *pagedEvents) list(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.requests = append(p.requests, opts)
	start := 0
	if opts.Continue != "" {
		var err error
		if start, err = strconv.Atoi(opts.Continue); err != nil {
			return nil, apierrors.NewBadRequest("continue")
		}
	}
	end := min(start+p.size, int(opts.Limit)+start, len(p.events))
	list := &corev1.EventList{Items: append([]corev1.Event(nil), p.events[start:end]...)}
	if end < len(p.events) {
		list.Continue = strconv.Itoa(end)
	}
	return list, nil
}

func (p *pagedEvents) asked() []metav1.ListOptions {
	p.lock.Lock()
	defer p.lock.Unlock()
	return append([]metav1.ListOptions(nil), p.requests...)
}

func numbered(n int) []corev1.Event {
	events := make([]corev1.Event, n)
	for i := range events {
		events[i] = corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}}
	}
	return events
}

// TestListBounded: the pager follows the continue tokens, a page at a time,
// and stops at the bound, or when told to, without asking for the page
// after the next.
func TestListBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		total, max int
		stopAt     int // each says stop at this item; -1: never
		wantHanded int
		wantMore   bool
		// wantAsked are the continue tokens asked for, the last one maybe
		// not (the pager asks for the next page while the caller reads one).
		wantAsked []string
		wantLimit int64
	}{
		{name: "all in pages", total: 10, max: 100, stopAt: -1, wantHanded: 10, wantAsked: []string{"", "3", "6", "9"}, wantLimit: 101},
		{name: "stops at the bound", total: 10, max: 4, stopAt: -1, wantHanded: 4, wantMore: true, wantAsked: []string{"", "3", "6"}, wantLimit: 5},
		{name: "exactly the bound", total: 6, max: 6, stopAt: -1, wantHanded: 6, wantAsked: []string{"", "3"}, wantLimit: 7},
		{name: "told to stop", total: 10, max: 100, stopAt: 1, wantHanded: 2, wantAsked: []string{"", "3"}, wantLimit: 101},
		{name: "page size", total: 10, max: 10000, stopAt: -1, wantHanded: 10, wantAsked: []string{"", "3", "6", "9"}, wantLimit: listPageSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			server := &pagedEvents{events: numbered(tc.total), size: 3}
			var handed []string
			more, err := listBounded(context.Background(), server.list, metav1.ListOptions{FieldSelector: "a=b"}, tc.max, func(obj runtime.Object) bool {
				handed = append(handed, obj.(*corev1.Event).Name)
				return len(handed)-1 == tc.stopAt
			})
			require.NoError(t, err)
			require.Equal(t, tc.wantMore, more)
			require.Len(t, handed, tc.wantHanded)
			for i, name := range handed {
				require.Equal(t, fmt.Sprint(i), name, "in the server's order")
			}
			// A page asked ahead may be on its way still; none after it.
			time.Sleep(20 * time.Millisecond)
			asked := server.asked()
			require.LessOrEqual(t, len(asked), len(tc.wantAsked), "asked %v", asked)
			require.GreaterOrEqual(t, len(asked), len(tc.wantAsked)-1, "asked %v", asked)
			for i, opts := range asked {
				require.Equal(t, tc.wantAsked[i], opts.Continue)
				require.Equal(t, tc.wantLimit, opts.Limit)
				require.Equal(t, "a=b", opts.FieldSelector)
			}
		})
	}
}

// TestListBoundedExpired: a page that expired is an error, not the pager's
// unbounded full list.
func TestListBoundedExpired(t *testing.T) {
	t.Parallel()
	calls := 0
	_, err := listBounded(context.Background(), func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		calls++
		if opts.Continue != "" {
			return nil, apierrors.NewResourceExpired("expired")
		}
		return &corev1.EventList{ListMeta: metav1.ListMeta{Continue: "1"}, Items: numbered(1)}, nil
	}, metav1.ListOptions{}, 10, func(runtime.Object) bool { return false })
	require.True(t, apierrors.IsResourceExpired(err), "%v", err)
	require.Equal(t, 2, calls)
}

// TestWorkspaceEvents: why asks for the controller's events regarding the
// Workspace's UID, paged, and keeps those only whatever the server answers;
// past maxEventsListed it stops and says so.
func TestWorkspaceEvents(t *testing.T) {
	t.Parallel()
	all := events()
	server := &pagedEvents{events: all, size: 2}
	got, cut, err := WorkspaceEvents(context.Background(), server.list, "team-a", wsUID)
	require.NoError(t, err)
	require.False(t, cut)
	reasons := make([]string, 0, len(got))
	for _, e := range got {
		require.Equal(t, wsUID, e.InvolvedObject.UID)
		require.Equal(t, reportingController, e.ReportingController)
		reasons = append(reasons, e.Reason)
	}
	require.Equal(t, []string{"MountReady", "Hostile\x1b[2J", "MountNotReady"}, reasons, "oldest first")
	asked := server.asked()
	require.Len(t, asked, 4, "the pages of 2 of 7 events")
	require.ElementsMatch(t, []string{"involvedObject.kind=Workspace", "involvedObject.name=team-a", "involvedObject.uid=" + string(wsUID), "reportingComponent=" + reportingController},
		strings.Split(asked[0].FieldSelector, ","))

	many := make([]corev1.Event, maxEventsListed+5)
	for i := range many {
		many[i] = all[1]
		many[i].EventTime = metav1.NewMicroTime(now.Add(time.Duration(i) * time.Second))
	}
	server = &pagedEvents{events: many, size: listPageSize}
	got, cut, err = WorkspaceEvents(context.Background(), server.list, "team-a", wsUID)
	require.NoError(t, err)
	require.True(t, cut)
	require.Len(t, got, maxEvents)
	require.Equal(t, now.Add((maxEventsListed-1)*time.Second), got[maxEvents-1].EventTime.Time, "the latest of those read")
	require.LessOrEqual(t, len(server.asked()), 3)
}
