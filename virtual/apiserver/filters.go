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
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/virtual/clusterpath"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// MountHopsHeader is the header kcp's mount proxy (v0.33 and later) sets on every request it forwards to a mount target.
const MountHopsHeader = "X-Kcp-Mount-Hops"

// withMountHopsRefused answers 403, not 400, to every request carrying [MountHopsHeader], health checks included: the
// virtual workspace is never a mount target, and kcp asks such components to refuse these requests outright.
func withMountHopsRefused(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, found := req.Header[http.CanonicalHeaderKey(MountHopsHeader)]; !found {
			handler.ServeHTTP(w, req)
			return
		}
		klog.FromContext(req.Context()).V(2).Info("Refusing a request forwarded by a kcp mount proxy", "path", req.URL.Path, "hops", req.Header.Get(MountHopsHeader))
		responsewriters.ErrorNegotiated(&apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusForbidden,
			Reason: metav1.StatusReasonForbidden,
			Message: "the workspacemounts virtual workspace is never a mount target: it refuses requests forwarded by a kcp mount proxy (" +
				MountHopsHeader + "); a mount's status.URL must not point at it",
		}}, codecs, schema.GroupVersion{}, w, req)
	})
}

// withClusterPath accepts only [clusterpath.Prefix] and the health endpoints, and moves the cluster from the path to
// the context, so that the rest of the chain sees /apis, /openapi/v3 and so on.
func withClusterPath(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target, rest, ok, err := clusterpath.Parse(req.URL.Path)
		switch {
		case !ok && isHealthPath(req.URL.Path):
			handler.ServeHTTP(w, req)
			return
		case !ok:
			responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{}, req.URL.Path), codecs, schema.GroupVersion{}, w, req)
			return
		case err != nil:
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(err.Error()), codecs, schema.GroupVersion{}, w, req)
			return
		}
		ctx := clusterpath.WithTarget(req.Context(), target)
		// kcp's fork wants a cluster in the context (the real one is clusterpath's); OpenAPI v2 is served only without.
		if rest != "/openapi/v2" {
			ctx = genericapirequest.WithCluster(ctx, genericapirequest.Cluster{Name: "workspacemounts"})
		}
		req = req.Clone(ctx)
		req.URL.Path = rest
		req.URL.RawPath = ""
		handler.ServeHTTP(w, req)
	})
}

// isHealthPath tells whether a path outside the cluster prefix is served.
func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// withReadOnly answers every request but get, list and watch with 405.
func withReadOnly(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if ok && info.IsResourceRequest && info.Verb != "get" && info.Verb != "list" && info.Verb != "watch" {
			gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
			responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(gr, info.Verb), codecs, schema.GroupVersion{}, w, req)
			return
		}
		if ok && !info.IsResourceRequest && req.Method != http.MethodGet && req.Method != http.MethodHead {
			responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(req.Method)), codecs, schema.GroupVersion{}, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// withClusterResolution resolves a workspace path to its logical cluster after authentication; a path that leads
// nowhere goes on unresolved, for the authorizer to deny as a cluster the user may not see.
func withClusterResolution(handler http.Handler, getWorkspace clusterpath.WorkspaceGetter, clustersSynced func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		target, ok := clusterpath.From(req.Context())
		if !ok {
			handler.ServeHTTP(w, req)
			return
		}
		if !clustersSynced() {
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable("the logical cluster cache has not synced yet"), codecs, schema.GroupVersion{}, w, req)
			return
		}
		resolved, err := clusterpath.Resolve(target, getWorkspace)
		switch {
		case errors.Is(err, clusterpath.ErrNotFound):
			resolved = target // no cluster: denied by the authorizer
		case err != nil:
			responsewriters.ErrorNegotiated(apierrors.NewInternalError(err), codecs, schema.GroupVersion{}, w, req)
			return
		}
		handler.ServeHTTP(w, req.WithContext(clusterpath.WithTarget(req.Context(), resolved)))
	})
}

// withStaleWarnings warns on every answer while kcp, or of each shard that, has not answered for
// [wsmregistry.StaleAfter]: the answer is the last known state.
func withStaleWarnings(handler http.Handler, lastContact func() (time.Duration, bool), shards wsmregistry.ShardContacts) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lastContact != nil {
			if since, ok := lastContact(); ok && since >= wsmregistry.StaleAfter {
				warning.AddWarning(r.Context(), "", fmt.Sprintf("kcp has not answered for %s: this is the last known state", since.Round(time.Second)))
			}
		}
		for _, name := range shardNames(shards) {
			if since, unreachable := wsmregistry.UnreachableShard(shards, name); unreachable {
				silence := "has not answered yet"
				if since > 0 {
					silence = "has not answered for " + since.String()
				}
				warning.AddWarning(r.Context(), "", fmt.Sprintf("shard %s %s: its WorkspaceMounts are the last known state", name, silence))
			}
		}
		handler.ServeHTTP(w, r)
	})
}

func shardNames(shards wsmregistry.ShardContacts) []string {
	if shards == nil {
		return nil
	}
	return shards.Names()
}

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

// Flush implements [http.Flusher].
func (w *bufferedResponseWriter) Flush() {
	if w.buffer.Flush() != nil {
		return
	}
	if flusher, ok := w.ResponseWriter.(http.Flusher); ok {
		flusher.Flush()
	}
}

// Unwrap implements [responsewriter.UserProvidedDecorator].
func (w *bufferedResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
