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

// responseBufferSize is how much of a get or list response is gathered
// before it goes to the connection. The JSON encoders write a list item by
// item (and gzip in pieces of a few hundred bytes), and net/http's HTTP/2
// server hands each 4 KiB of small writes to its connection's serve loop
// and waits for it: a 6 MB list is 1,500 such hand-overs, 100 of 64 KiB.
// The buffers are pooled; there is at most one per request in flight.
const responseBufferSize = 64 << 10

var responseBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, responseBufferSize) }}

// withBufferedResponses buffers the responses of get and list requests of
// the resource in responseBufferSize pieces, flushed when the handler
// returns or flushes. Watches and everything else are written as they come:
// a watch event must not wait for the next.
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
		// Not deferred: after a panic the buffer may be half written, and
		// the panic's handler answers on w.
		_ = buffer.Flush() // an error is the client's going away: nothing to tell
		buffer.Reset(nil)
		responseBuffers.Put(buffer)
	})
}

// bufferedResponseWriter writes the body through buffer. Flush empties the
// buffer first, so http.Flusher keeps its meaning.
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
