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
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestWithBufferedResponses(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", responseBufferSize+1)
	for _, tc := range []struct {
		name     string
		info     *genericapirequest.RequestInfo
		buffered bool
	}{
		{name: "list", info: resourceInfo("list"), buffered: true},
		{name: "get", info: resourceInfo("get"), buffered: true},
		{name: "watch", info: resourceInfo("watch")},
		{name: "non-resource", info: nonResourceInfo("get")},
		{name: "no request info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusTeapot)
				_, _ = w.Write([]byte("a"))
				if tc.buffered {
					assert.Empty(t, rec.Body.String(), "written before the buffer is full")
				} else {
					assert.Equal(t, "a", rec.Body.String())
				}
				flusher, ok := w.(http.Flusher)
				if !assert.True(t, ok, "a buffered writer is a Flusher") {
					return
				}
				flusher.Flush()
				assert.Equal(t, "a", rec.Body.String())
				assert.True(t, rec.Flushed)
				_, _ = w.Write([]byte("b"))
				_, _ = w.Write([]byte(big)) // more than the buffer holds: a full buffer goes out
				if tc.buffered {
					assert.GreaterOrEqual(t, rec.Body.Len(), 1+responseBufferSize)
				} else {
					assert.Equal(t, 2+len(big), rec.Body.Len())
				}
				_, _ = w.Write([]byte("c"))
			})
			req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/apis/workspacemounts.io/v1alpha1/workspacemounts", http.NoBody)
			if tc.info != nil {
				req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), tc.info))
			}
			withBufferedResponses(handler).ServeHTTP(rec, req)
			require.Equal(t, http.StatusTeapot, rec.Code)
			require.Equal(t, "text/plain", rec.Header().Get("Content-Type"))
			require.Equal(t, "ab"+big+"c", rec.Body.String(), "everything written when the handler returns")
		})
	}
}
