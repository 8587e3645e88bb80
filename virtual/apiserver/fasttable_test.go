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

package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// TestFastTables: a list of WorkspaceMounts negotiated to a meta.k8s.io/v1
// Table, as plain JSON, with rows of metadata, is answered by fastTables;
// every other request goes on to the handler untouched, nothing written:
// other routes, other answers, and whatever the handler would refuse or
// the storage fails. (TestServer compares the answers with the handler's.)
func TestFastTables(t *testing.T) {
	t.Parallel()
	synced := testStore(t, mountedWorkspace("c1", "a", mount.PhaseReady), mountedWorkspace("c1", "b", mount.PhaseConnecting))
	allVisible := func(context.Context, logicalcluster.Name, time.Duration) (bool, error) { return true, nil }
	tables, err := newFastTables(wsmregistry.NewREST(synced, allVisible), codecs)
	require.NoError(t, err)
	notSynced, err := newFastTables(wsmregistry.NewREST(wsmregistry.NewStore(mount.Rule{}), allVisible), codecs)
	require.NoError(t, err)
	infos := genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

	const v1, v1beta1 = "application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
	serve := func(t *testing.T, tables *fastTables, method, path, accept, userAgent string) (*recorder, *httptest.ResponseRecorder) {
		t.Helper()
		req := httptest.NewRequestWithContext(context.Background(), method, path, http.NoBody)
		req.Header.Set("Accept", accept)
		req.Header.Set("User-Agent", userAgent)
		info, err := infos.NewRequestInfo(req)
		require.NoError(t, err)
		ctx := genericapirequest.WithRequestInfo(req.Context(), info)
		ctx = clusterpath.WithTarget(ctx, clusterpath.Target{Wildcard: true})
		ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})
		next, rec := &recorder{}, httptest.NewRecorder()
		tables.ahead(next).ServeHTTP(rec, req.WithContext(ctx))
		return next, rec
	}
	for _, tc := range []struct {
		name        string
		method      string
		path        string
		accept      string
		userAgent   string
		notSynced   bool
		wantHandler bool
	}{
		{name: "kubectl get", accept: v1 + "," + v1beta1 + ",application/json"},
		{name: "a v1 Table", accept: v1},
		{name: "a page", path: resourcePath + "?limit=1", accept: v1},
		{name: "selectors", path: resourcePath + "?labelSelector=team!%3Db&fieldSelector=status.phase%3DReady", accept: v1},
		{name: "includeObject=Metadata", path: resourcePath + "?includeObject=Metadata", accept: v1},
		{name: "a v1beta1 Table", accept: v1beta1 + "," + v1, wantHandler: true},
		{name: "a YAML v1 Table", accept: "application/yaml;as=Table;v=v1;g=meta.k8s.io", wantHandler: true},
		{name: "a pretty v1 Table", path: resourcePath + "?pretty=true", accept: v1, wantHandler: true},
		{name: "a v1 Table for curl, pretty", accept: v1, userAgent: "curl/8.0", wantHandler: true},
		{name: "includeObject=Object", path: resourcePath + "?includeObject=Object", accept: v1, wantHandler: true},
		{name: "includeObject=None", path: resourcePath + "?includeObject=None", accept: v1, wantHandler: true},
		{name: "includeObject unknown", path: resourcePath + "?includeObject=Everything", accept: v1, wantHandler: true},
		{name: "a bad limit", path: resourcePath + "?limit=x", accept: v1, wantHandler: true},
		{name: "invalid list options", path: resourcePath + "?resourceVersionMatch=Exact", accept: v1, wantHandler: true},
		{name: "a field the resource has not", path: resourcePath + "?fieldSelector=spec.x%3Dy", accept: v1, wantHandler: true},
		{name: "a bad continue token: the storage's error", path: resourcePath + "?continue=%25%25", accept: v1, wantHandler: true},
		{name: "the store not synced: the storage's error", accept: v1, notSynced: true, wantHandler: true},
		{name: "the list itself", accept: "application/json", wantHandler: true},
		{name: "a PartialObjectMetadataList", accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", wantHandler: true},
		{name: "not acceptable", accept: "application/json;as=Table;v=v9;g=meta.k8s.io", wantHandler: true},
		{name: "a watch", path: resourcePath + "?watch=true", accept: v1, wantHandler: true},
		{name: "a get", path: resourcePath + "/a", accept: v1, wantHandler: true},
		{name: "a HEAD", method: http.MethodHead, accept: v1, wantHandler: true},
		{name: "another resource", path: "/apis/workspacemounts.io/v1alpha1/others", accept: v1, wantHandler: true},
		{name: "in a namespace", path: "/apis/workspacemounts.io/v1alpha1/namespaces/default/workspacemounts", accept: v1, wantHandler: true},
		{name: "another version", path: "/apis/workspacemounts.io/v1/workspacemounts", accept: v1, wantHandler: true},
		{name: "a trailing slash", path: resourcePath + "/", accept: v1, wantHandler: true},
		{name: "not a resource", path: "/apis", accept: v1, wantHandler: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			method, path, serving := tc.method, tc.path, tables
			if method == "" {
				method = http.MethodGet
			}
			if path == "" {
				path = resourcePath
			}
			if tc.notSynced {
				serving = notSynced
			}
			next, rec := serve(t, serving, method, path, tc.accept, tc.userAgent)
			require.Equal(t, tc.wantHandler, next.called)
			if tc.wantHandler {
				require.Equal(t, http.StatusTeapot, rec.Code, "nothing written before the handler")
				require.Empty(t, rec.Header())
				return
			}
			require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			require.Contains(t, rec.Body.String(), `"kind":"Table","apiVersion":"meta.k8s.io/v1"`)
			require.Contains(t, rec.Body.String(), `"kind":"PartialObjectMetadata"`)
		})
	}

	t.Run("counted as the list route counts its requests", func(t *testing.T) {
		t.Parallel()
		apimetrics.Register()
		before := listRequests(t)
		next, rec := serve(t, tables, http.MethodGet, resourcePath, v1, "")
		require.False(t, next.called)
		require.Equal(t, http.StatusOK, rec.Code)
		require.Greater(t, listRequests(t), before)
	})
}

// listRequests is apiserver_request_total for lists of WorkspaceMounts answered 200.
func listRequests(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	var total float64
	for _, family := range families {
		if family.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["verb"] == "LIST" && labels["group"] == "workspacemounts.io" && labels["resource"] == "workspacemounts" && labels["code"] == "200" && labels["scope"] == "cluster" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestTableJSON: the Table fastTables hands the response writer is the
// storage's bytes for the meta.k8s.io/v1 JSON encoder, and for any other
// (which fastTables does not negotiate) the Table they decode to.
func TestTableJSON(t *testing.T) {
	t.Parallel()
	const written = `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":null,` +
		`"rows":[{"cells":["a",true,null],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}}]}` + "\n"
	codecs := metainternalversionscheme.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	plain := codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion)
	pretty := codecs.EncoderForVersion(info.PrettySerializer, metav1.SchemeGroupVersion)
	table := &tableJSON{write: func(w io.Writer) error { _, err := io.WriteString(w, written); return err }, encoder: plain.Identifier()}

	var got bytes.Buffer
	require.NoError(t, plain.Encode(table, &got))
	require.True(t, bytes.Equal([]byte(written), got.Bytes()), "the storage's bytes, byte for byte: %s", got.Bytes())
	require.Equal(t, got.String(), encodeTo(t, plain, table.GetObject()), "the Table the bytes decode to encodes to them")

	decoded := table.GetObject().(*metav1.Table)
	require.Equal(t, "7", decoded.ResourceVersion)
	require.Equal(t, []interface{}{"a", true, nil}, decoded.Rows[0].Cells)
	require.Equal(t, encodeTo(t, pretty, decoded), encodeTo(t, pretty, table))
	require.Equal(t, decoded, table.DeepCopyObject())
	require.Equal(t, metav1.SchemeGroupVersion.WithKind("Table"), table.GetObjectKind().GroupVersionKind())
}

func encodeTo(t *testing.T, encoder runtime.Encoder, obj runtime.Object) string {
	t.Helper()
	var encoded bytes.Buffer
	require.NoError(t, encoder.Encode(obj, &encoded))
	return encoded.String()
}
