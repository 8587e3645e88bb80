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

// withClosingRefusals answers "Connection: close" with every 401, and every 429 but on the front-proxy's connections
// (requestHeader's, nil without one), so that a refused client holds no idle connection: docs/design/virtual-apiserver.md.
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

// verified accepts what the front-proxy's certificate check verified.
func verified(*http.Request) (*authenticator.Response, bool, error) {
	return &authenticator.Response{}, true, nil
}

// closingWriter sets "Connection: close" on a refusal.
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
