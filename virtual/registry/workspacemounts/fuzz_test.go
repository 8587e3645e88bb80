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
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// FuzzDecodeContinue: any continue token is decoded without a panic, into
// a list key that encodes and decodes to itself, or refused with a 400.
func FuzzDecodeContinue(f *testing.F) {
	f.Add("")
	f.Add(encodeContinue(listKey{cluster: "c1", name: "a"}))
	f.Add(encodeContinue(listKey{cluster: "root", name: "a|b"}))
	f.Add(encodeContinue(listKey{}))
	f.Add("not base64!")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("no separator")))
	f.Add(base64.StdEncoding.EncodeToString([]byte("c1|a")))
	f.Fuzz(func(t *testing.T, token string) {
		p, continuing, err := decodeContinue(token)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("%q: not a 400: %v", token, err)
			}
			if continuing {
				t.Fatalf("%q: refused, yet continuing", token)
			}
			return
		}
		if continuing != (token != "") {
			t.Fatalf("%q: continuing is %v", token, continuing)
		}
		if !continuing {
			return
		}
		again, continuing, err := decodeContinue(encodeContinue(p))
		if err != nil || !continuing || again != p {
			t.Fatalf("%q decodes to %+v, which encodes to a token decoding to %+v, %v, %v", token, p, again, continuing, err)
		}
	})
}

// FuzzWatchResourceVersion: any resource version a watch is asked for is
// either taken (the initial objects, or the changes since a number of the
// kept history), or refused with a 400 (not a number) or a 410 (too old),
// without a panic.
func FuzzWatchResourceVersion(f *testing.F) {
	s := filledStore(f, mounted("c1", "a", mount.PhaseReady, nil))
	r := NewREST(s, allVisible)
	historyStart := s.sources[""].historyStart
	current := s.sources[""].resourceVersion
	for _, rv := range []string{"", "0", "1", strconv.FormatUint(current, 10), strconv.FormatUint(current+1, 10), "abc", "-1", "1.5", "+3", "007", " 3", "18446744073709551616"} {
		f.Add(rv, false)
	}
	f.Add("abc", true)
	f.Add("root=5", false)
	f.Add("=5", false)
	f.Fuzz(func(t *testing.T, rv string, sendInitialEvents bool) {
		for _, target := range []string{"c1", "*"} {
			w, err := r.Watch(requestContext(target), &metainternalversion.ListOptions{ResourceVersion: rv, SendInitialEvents: &sendInitialEvents})
			initial := sendInitialEvents || rv == "" || rv == "0"
			n, parseErr := strconv.ParseUint(rv, 10, 64)
			// A vector (name=number,...) names shards: this store has one,
			// unnamed, so no vector is of its history.
			vector := parseErr != nil && parseVersion(rv) != nil
			switch {
			case err == nil:
				w.Stop()
				if !initial && (parseErr != nil || n < historyStart) {
					t.Fatalf("%q: taken, though it is not a number of the kept history", rv)
				}
			case apierrors.IsBadRequest(err):
				if initial || parseErr == nil && n > 0 || vector {
					t.Fatalf("%q: a 400 for a valid resource version: %v", rv, err)
				}
			case apierrors.IsResourceExpired(err):
				if initial || (parseErr != nil && !vector) || (parseErr == nil && n >= historyStart) {
					t.Fatalf("%q: a 410 for a resource version that is not too old: %v", rv, err)
				}
			default:
				t.Fatalf("%q: %v", rv, err)
			}
		}
	})
}

// FuzzListPaging: for any field and label selectors and limit, listing page
// by page gives what one list gives, each object once and in order, every
// object matching the selectors; pages hold at most limit objects, a page
// with a continue token is full, RemainingItemCount is exact or absent, and
// visibility is asked at most once per cluster per page.
func FuzzListPaging(f *testing.F) {
	workspaces := make([]*tenancyv1alpha1.Workspace, 0, 30)
	for i := range 30 {
		phase := []mount.Phase{mount.PhaseReady, mount.PhaseConnecting, mount.PhaseNotFound}[i%3]
		team := map[string]string{"team": []string{"x", "y"}[i%2]}
		workspaces = append(workspaces, mounted(fmt.Sprintf("c%d", i%4), fmt.Sprintf("ws-%02d", i), phase, team))
	}
	s := filledStore(f, workspaces...)
	scheme := runtime.NewScheme()
	if err := wsmv1alpha1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	gvk := wsmv1alpha1.SchemeGroupVersion.WithKind(wsmv1alpha1.Kind)

	f.Add("", "", uint8(0))
	f.Add("", "", uint8(1))
	f.Add("status.phase=Ready", "", uint8(2))
	f.Add("status.ready!=true,metadata.name!=ws-03", "team=x", uint8(3))
	f.Add("metadata.name=ws-07", "", uint8(1))
	f.Add("", "team in (x),!other", uint8(4))
	f.Add("status.phase==Nope", "", uint8(5))
	f.Fuzz(func(t *testing.T, fieldSelector, labelSelector string, limit uint8) {
		field, err := fields.ParseSelector(fieldSelector)
		if err != nil {
			return
		}
		// As the API server does: only the supported fields reach the storage.
		field, err = field.Transform(func(label, value string) (string, string, error) {
			return scheme.ConvertFieldLabel(gvk, label, value)
		})
		if err != nil {
			return
		}
		label, err := labels.Parse(labelSelector)
		if err != nil {
			return
		}
		selecting := !field.Empty() || !label.Empty()

		for _, target := range []string{"*", "c1"} {
			v := newVisibility(map[logicalcluster.Name]error{"c0": nil, "c1": nil, "c2": errInvisible, "c3": nil})
			r := NewREST(s, v.visible)
			whole := fuzzList(t, r, target, &metainternalversion.ListOptions{FieldSelector: field, LabelSelector: label})
			for i := range whole.Items {
				wsm := &whole.Items[i]
				s := summarize(wsm)
				if !field.Matches(s.fieldSet()) || !label.Matches(labels.Set(wsm.Labels)) {
					t.Fatalf("%s matches neither %q nor %q", wsm.Name, field, label)
				}
				if cluster := logicalcluster.From(wsm); cluster == "c2" || target != "*" && cluster.String() != target {
					t.Fatalf("%s of %s listed at %s", wsm.Name, cluster, target)
				}
			}

			var paged []string
			options := &metainternalversion.ListOptions{FieldSelector: field, LabelSelector: label, Limit: int64(limit)}
			for pages := 0; ; pages++ {
				if pages > len(whole.Items)+1 {
					t.Fatalf("more pages than objects")
				}
				v.reset()
				page := fuzzList(t, r, target, options)
				for cluster, n := range v.callCounts() {
					if n > 1 {
						t.Fatalf("visibility of %s asked %d times for one page", cluster, n)
					}
				}
				paged = append(paged, names(page)...)
				if limit > 0 && len(page.Items) > int(limit) {
					t.Fatalf("%d objects in a page of %d", len(page.Items), limit)
				}
				if page.RemainingItemCount != nil {
					if target == "*" || selecting || page.Continue == "" {
						t.Fatalf("a remaining item count where something filters, or on the last page")
					}
					if want := int64(len(whole.Items) - len(paged)); *page.RemainingItemCount != want {
						t.Fatalf("remaining item count %d, want %d", *page.RemainingItemCount, want)
					}
				}
				if page.Continue == "" {
					break
				}
				if len(page.Items) != int(limit) {
					t.Fatalf("a page of %d objects with a continue token, limit %d", len(page.Items), limit)
				}
				if _, continuing, err := decodeContinue(page.Continue); err != nil || !continuing {
					t.Fatalf("continue token %q: %v", page.Continue, err)
				}
				options.Continue = page.Continue
			}
			if want := names(whole); fmt.Sprint(paged) != fmt.Sprint(want) {
				t.Fatalf("page by page %v, at once %v", paged, want)
			}
		}
	})
}

func fuzzList(t *testing.T, r *REST, target string, options *metainternalversion.ListOptions) *wsmv1alpha1.WorkspaceMountList {
	t.Helper()
	obj, err := r.List(requestContext(target), options)
	if err != nil {
		t.Fatalf("list at %s: %v", target, err)
	}
	return listOf(t, obj)
}

// filledStore is a synced store of the WorkspaceMounts of workspaces, filled
// without an informer: cheap enough for every fuzz input.
func filledStore(tb testing.TB, workspaces ...*tenancyv1alpha1.Workspace) *Store {
	tb.Helper()
	s := NewStore(mount.Rule{})
	src := &source{synced: true}
	s.sources[""] = src
	for i, ws := range workspaces {
		ws = ws.DeepCopy()
		ws.ResourceVersion = strconv.Itoa(100 + i)
		s.upsert(src, ws)
	}
	// As for a store after its informer's first list: the history starts here.
	src.historyStart = src.resourceVersion
	return s
}
