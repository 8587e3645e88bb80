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
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// ShareOptions bound the requests in flight, watches excepted, and the watches of one [authorization.FairnessKey],
// and the watches of all. Why shares and not APF: docs/design/virtual-apiserver.md.
type ShareOptions struct {
	PerUserInFlight            int
	PerUserWatches, MaxWatches int
}

// DefaultShareOptions are the defaults of the flags.
func DefaultShareOptions() ShareOptions {
	return ShareOptions{PerUserInFlight: 50, PerUserWatches: 200, MaxWatches: 5000}
}

// Validate tells what is wrong with the options.
func (o ShareOptions) Validate() error {
	if o.PerUserInFlight < 1 || o.PerUserWatches < 1 || o.MaxWatches < 1 {
		return errors.New("--max-requests-inflight-per-user, --max-watches-per-user and --max-watches must be positive")
	}
	return nil
}

// retryAfterSeconds is what a 429 tells the client to wait.
const retryAfterSeconds = 1

type shares struct {
	inFlight, watches *authorization.Limiter
	pathOf            tenant.PathOf
}

func newShares(opts ShareOptions, pathOf tenant.PathOf) *shares {
	return &shares{
		pathOf:   pathOf,
		inFlight: authorization.NewLimiter(opts.PerUserInFlight, 0), // the total is WithMaxInFlightLimit's
		watches:  authorization.NewLimiter(opts.PerUserWatches, opts.MaxWatches),
	}
}

// take takes a turn of the user's share, or says which share is full.
func (s *shares) take(key authorization.UserKey, watch bool) (release func(), full string) {
	if !watch {
		if release, _ := s.inFlight.TryAcquire(key); release != nil {
			return release, ""
		}
		return nil, "your requests in flight"
	}
	release, bound := s.watches.TryAcquire(key)
	switch bound {
	case authorization.Fits:
		return release, ""
	case authorization.TotalFull:
		return nil, "the server's watches"
	default:
		return nil, "your watches"
	}
}

// withUserShares answers 429 a request over its user's share or a watch over the total, before authorization, so
// that requests that are denied count too.
func withUserShares(handler http.Handler, s *shares) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		u, ok := genericapirequest.UserFrom(ctx)
		if !ok {
			handler.ServeHTTP(w, req) // health checks; the authorizer denies the rest
			return
		}
		info, _ := genericapirequest.RequestInfoFrom(ctx)
		watch := info != nil && info.IsResourceRequest && info.Verb == "watch"
		release, full := s.take(authorization.FairnessKey(u, s.pathOf), watch)
		if release == nil {
			tooMany(w, req, full+" are all taken")
			return
		}
		defer release()
		handler.ServeHTTP(w, req)
	})
}

// tooMany answers 429, with Retry-After.
func tooMany(w http.ResponseWriter, req *http.Request, message string) {
	responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests(message, retryAfterSeconds), codecs, schema.GroupVersion{}, w, req)
}

// unavailableMessage is all a client learns of a review that failed; the detail stays in the log.
const unavailableMessage = "the authorization service is unavailable, try again later"

// withAuthorization is [genericapifilters.WithAuthorization] but for the errors: [authorization.ErrUserShare] is 429,
// any other 503 with a generic message, where the generic filter answers 500 naming kcp's URL and the cluster.
func withAuthorization(handler http.Handler, a authorizer.Authorizer, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		attributes, err := genericapifilters.GetAuthorizerAttributes(ctx)
		if err != nil {
			responsewriters.InternalError(w, req, err)
			return
		}
		decision, reason, err := a.Authorize(ctx, attributes)
		switch {
		case decision == authorizer.DecisionAllow:
			audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "allow", "authorization.k8s.io/reason", reason)
			handler.ServeHTTP(w, req)
		case errors.Is(err, authorization.ErrSubjectRate):
			audit.AddAuditAnnotation(ctx, "authorization.k8s.io/reason", "over the tenant's rate of new subjects")
			tooMany(w, req, "too many new tokens or users of your tenant to authorize, reuse your tokens")
		case errors.Is(err, authorization.ErrUserShare):
			audit.AddAuditAnnotation(ctx, "authorization.k8s.io/reason", "over the user's share")
			tooMany(w, req, "your SubjectAccessReviews are all under way")
		case err != nil:
			klog.FromContext(ctx).Error(err, "Authorization failed", "uri", req.RequestURI)
			audit.AddAuditAnnotation(ctx, "authorization.k8s.io/reason", "error")
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable(unavailableMessage), s, schema.GroupVersion{}, w, req)
		default:
			klog.FromContext(ctx).V(4).Info("Forbidden", "uri", req.RequestURI, "reason", reason)
			audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "forbid", "authorization.k8s.io/reason", reason)
			responsewriters.Forbidden(attributes, w, req, reason, s)
		}
	})
}

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

// Unwrap implements [responsewriter.UserProvidedDecorator].
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeader closes the connection after a refusal.
func (w *closingWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized || (code == http.StatusTooManyRequests && !w.frontProxy(w.req)) {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}
