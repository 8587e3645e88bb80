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
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// A refused request ends its connection. Whatever answers 401 (no
// credential kcp accepts: the authentication filter's failure handler, a
// token of the failed-token cache, no TokenReview turn in time) or 429 (over
// a share: tooMany, the review turns in withAuthorization, the generic
// requests in flight) answers with "Connection: close":
//
//   - HTTP/1.1: net/http closes the connection after the answer.
//   - HTTP/2: golang.org/x/net/http2's server (the generic server's, and
//     net/http's bundled copy) takes the header of a handler for a graceful
//     GOAWAY (NO_ERROR) of the connection and removes it from the answer:
//     the streams already open on the connection run to their end, the
//     client opens a new connection for its next request (client-go and
//     kubectl do), and the server closes this one a second after its last
//     stream.
//
// k8s.io/apiserver does the same for a 401 over HTTP/2 already (its
// Unauthorized handler, feature UnauthenticatedHTTP2DOSMitigation, on by
// default); this adds HTTP/1.1 and the 429s. So a refused client holds no
// connection it has nothing open on: without this, a connection answered 429
// stayed open for the generic server's idle timeout (90 s), and a tenant
// refused N times held N connections.
//
// A 429 on the front-proxy's connection leaves it open: a connection whose
// client certificate is the request-header authenticator's (kcp-front-proxy's,
// verified as that authenticator verifies it: its CA and
// --requestheader-allowed-names) carries the requests of every user behind
// the proxy, and closing it would cost the proxy a TLS handshake per refusal
// of any of them, without freeing anything of the refused tenant's (their
// connection is to the proxy). A 401 there (the proxy named no user) closes
// it, as the library does over HTTP/2.

// withClosingRefusals answers "Connection: close" with every 401, and every
// 429 but on the front-proxy's connections (requestHeader, nil without
// --requestheader-client-ca-file).
func withClosingRefusals(handler http.Handler, requestHeader *authenticatorfactory.RequestHeaderConfig) http.Handler {
	frontProxy := func(*http.Request) bool { return false }
	if requestHeader != nil {
		verifier := x509request.NewDynamicCAVerifier(requestHeader.CAContentProvider.VerifyOptions, authenticator.RequestFunc(verified), requestHeader.AllowedClientNames)
		frontProxy = func(req *http.Request) bool {
			_, ok, _ := verifier.AuthenticateRequest(req)
			return ok
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handler.ServeHTTP(responsewriter.WrapForHTTP1Or2(&closingWriter{ResponseWriter: w, req: req, frontProxy: frontProxy}), req)
	})
}

// verified is what the front-proxy's certificate check delegates to once the
// certificate verified: nothing more to check.
func verified(*http.Request) (*authenticator.Response, bool, error) {
	return &authenticator.Response{}, true, nil
}

// closingWriter sets "Connection: close" on a 401 answer, and on a 429 one
// unless the request came on a front-proxy's connection.
type closingWriter struct {
	http.ResponseWriter
	req        *http.Request
	frontProxy func(*http.Request) bool
}

var _ responsewriter.UserProvidedDecorator = &closingWriter{}

// Unwrap is the writer this one wraps.
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeader closes the connection after a refusal.
func (w *closingWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized || (code == http.StatusTooManyRequests && !w.frontProxy(w.req)) {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}
