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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
)

// wildcard is the context of a request at * by a user who sees everything.
func wildcard(ctx context.Context) context.Context {
	ctx = clusterpath.WithTarget(ctx, clusterpath.Target{Wildcard: true})
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "bench"})
}

// listTimes is one list at *, step by step.
type listTimes struct {
	storage, table, json, tableJSON time.Duration
	items, bytes, tableBytes        int
}

// list lists every WorkspaceMount at *, as JSON and as a meta.k8s.io/v1
// Table, in-process, as the virtual workspace does for a client asking for
// JSON and for kubectl get: REST.List (storage) and the server's encoder
// writing it (JSON), REST.List again (table) and REST.WriteTableJSON, what
// the server's encoder of the Table writes (table JSON).
// With verify, it also decodes what was written: every item, in both.
func (s *sim) list(ctx context.Context, verify bool) (listTimes, error) {
	ctx = wildcard(ctx)
	var t listTimes
	began := time.Now()
	list, err := s.rest.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return t, err
	}
	t.storage = time.Since(began)
	began = time.Now()
	// Written as the server streams an answer: kept only to be verified.
	var listJSON, tableJSON bytes.Buffer
	listOut, tableOut := &countingWriter{}, &countingWriter{}
	if verify {
		listOut.keep, tableOut.keep = &listJSON, &tableJSON
	}
	if err := s.listEncoder.Encode(list, listOut); err != nil {
		return t, err
	}
	t.json, t.bytes = time.Since(began), listOut.n
	began = time.Now()
	tableList, err := s.rest.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return t, err
	}
	t.table = time.Since(began)
	began = time.Now()
	if err := s.rest.WriteTableJSON(tableOut, tableList, &metav1.TableOptions{}); err != nil {
		return t, err
	}
	t.tableJSON, t.tableBytes = time.Since(began), tableOut.n
	if !verify {
		return t, nil
	}
	var decoded struct {
		Items []json.RawMessage `json:"items"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(listJSON.Bytes(), &decoded); err != nil {
		return t, err
	}
	if err := json.Unmarshal(tableJSON.Bytes(), &decoded); err != nil {
		return t, err
	}
	if len(decoded.Items) != len(decoded.Rows) {
		return t, fmt.Errorf("a list at * had %d items, its Table %d rows", len(decoded.Items), len(decoded.Rows))
	}
	t.items = len(decoded.Rows)
	return t, nil
}

// countingWriter counts what is written to it, and keeps it if told where.
type countingWriter struct {
	n    int
	keep *bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.keep != nil {
		return w.keep.Write(p)
	}
	return len(p), nil
}

// pageTimes is a paged Table list at *, as kubectl get pages it: its first
// page, and the walk of every page until no continue is left.
type pageTimes struct {
	first, walk time.Duration
	pages       int
}

// pagedTable lists every WorkspaceMount at * as meta.k8s.io/v1 Tables of
// limit rows: REST.List with the limit and the previous page's continue,
// then REST.WriteTableJSON, page after page. Only the first page with
// firstOnly. With seen, it also decodes each Table written and records
// the cluster and name of each row in it, failing on a row seen twice.
func (s *sim) pagedTable(ctx context.Context, limit int64, firstOnly bool, seen map[string]bool) (pageTimes, error) {
	ctx = wildcard(ctx)
	var t pageTimes
	var kept bytes.Buffer
	continueToken := ""
	began := time.Now()
	for {
		list, err := s.rest.List(ctx, &metainternalversion.ListOptions{Limit: limit, Continue: continueToken})
		if err != nil {
			return t, err
		}
		out := &countingWriter{}
		if seen != nil {
			kept.Reset()
			out.keep = &kept
		}
		if err := s.rest.WriteTableJSON(out, list, &metav1.TableOptions{}); err != nil {
			return t, err
		}
		t.pages++
		if t.pages == 1 {
			t.first = time.Since(began)
		}
		listMeta, err := meta.ListAccessor(list)
		if err != nil {
			return t, err
		}
		continueToken = listMeta.GetContinue()
		if seen != nil {
			if err := recordRows(kept.Bytes(), continueToken, seen); err != nil {
				return t, fmt.Errorf("page %d: %w", t.pages, err)
			}
		}
		if continueToken == "" || firstOnly {
			break
		}
	}
	t.walk = time.Since(began)
	return t, nil
}

// recordRows decodes a Table's JSON and records its rows' objects in seen,
// by cluster and name; its continue must be the list's.
func recordRows(table []byte, continueToken string, seen map[string]bool) error {
	var decoded struct {
		Metadata metav1.ListMeta `json:"metadata"`
		Rows     []struct {
			Object metav1.PartialObjectMetadata `json:"object"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(table, &decoded); err != nil {
		return err
	}
	if decoded.Metadata.Continue != continueToken {
		return fmt.Errorf("the Table's continue is %q, the list's %q", decoded.Metadata.Continue, continueToken)
	}
	for _, row := range decoded.Rows {
		key := logicalcluster.From(&row.Object).String() + "|" + row.Object.Name
		if seen[key] {
			return fmt.Errorf("WorkspaceMount %s listed twice", key)
		}
		seen[key] = true
	}
	return nil
}
