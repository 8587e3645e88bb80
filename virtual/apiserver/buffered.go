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
	"bufio"
	"net/http"
	"sync"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// responseBufferSize is how much of a get or list answer is gathered before it goes to the connection, in pooled
// buffers: docs/design/virtual-apiserver.md.
const responseBufferSize = 64 << 10

var responseBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, responseBufferSize) }}

// withBufferedResponses writes the answers of gets and lists in [responseBufferSize] pieces; watches as they come.
func withBufferedResponses(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Verb != "get" && info.Verb != "list" {
			handler.ServeHTTP(w, req)
			return
		}
		buffer := responseBuffers.Get().(*bufio.Writer)
		buffer.Reset(w)
		handler.ServeHTTP(responsewriter.WrapForHTTP1Or2(&bufferedResponseWriter{ResponseWriter: w, buffer: buffer}), req)
		// Not deferred: after a panic the handler of the panic answers on w.
		_ = buffer.Flush() // an error is the client's going away: nothing to tell
		buffer.Reset(nil)
		responseBuffers.Put(buffer)
	})
}

// bufferedResponseWriter writes the body through buffer; Flush empties it first.
type bufferedResponseWriter struct {
	http.ResponseWriter
	buffer *bufio.Writer
}

var _ responsewriter.UserProvidedDecorator = &bufferedResponseWriter{}

func (w *bufferedResponseWriter) Write(p []byte) (int, error) { return w.buffer.Write(p) }

// Flush implements http.Flusher.
func (w *bufferedResponseWriter) Flush() {
	if w.buffer.Flush() != nil {
		return
	}
	if flusher, ok := w.ResponseWriter.(http.Flusher); ok {
		flusher.Flush()
	}
}

// Unwrap implements responsewriter.UserProvidedDecorator.
func (w *bufferedResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
