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
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/tenant"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// Why not k8s.io/apiserver's priority and fairness (APF, the
// WithPriorityAndFairness filter): it classifies requests by FlowSchemas and
// queues them by PriorityLevelConfigurations, API objects its configuration
// controller (utilflowcontrol.New) reads through informers of a
// flowcontrol.apiserver.k8s.io client, and writes their status back. The
// virtual workspace serves no such objects and has no kube-apiserver of its
// own to read them from (kcp's are per logical cluster, and tenants'), so
// APF would need a fake API for two fixed objects; its work estimator wants
// an object count per resource the store does not keep; and it shares
// seats of the server's concurrency, not the SubjectAccessReviews this
// server asks of kcp, which are what a tenant's load costs others. What is
// shared here is small and fixed: a user's requests in flight, their
// watches, all watches, and their turns of reviews (authorization.Reviews).
// So the server keeps the generic total (WithMaxInFlightLimit, the
// library's 400 requests in flight, what an API server without APF does)
// and adds the per-user counts below (authorization.Limiter, the type of
// every share), keyed by authorization.FairnessKey: the identity kcp knows,
// so that K tokens of one user are one user, and for a ServiceAccount its
// tenant (pkg/tenant), so that the ServiceAccounts of an org's K workspaces
// are one tenant. A user over a share is answered 429 with
// Retry-After at once, nobody waits in a queue, and the others are not
// affected.

// ShareOptions are the per-user shares of the server and the total of
// watches.
type ShareOptions struct {
	// PerUserInFlight bounds the requests of one user (FairnessKey: every
	// ServiceAccount of an org is one) being served at once, watches
	// excepted.
	PerUserInFlight int
	// PerUserWatches bounds the watches of one user open at once, MaxWatches
	// those of all users.
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

// shares are the requests in flight and the watches, per user
// (FairnessKey, with pathOf: a tenant) and, for watches, in all.
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

// take takes a turn of the user's share (a watch's, and one of all watches,
// for a watch), or says which share is full.
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

// withUserShares answers 429 with Retry-After a request of a user over
// their share of requests in flight or watches, or a watch over the total;
// it goes after authentication (the user) and before authorization, so that
// requests that are denied count too.
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

// unavailableMessage is all a client learns of a review that failed: which
// cluster, which shard or which error stays in the log.
const unavailableMessage = "the authorization service is unavailable, try again later"

// withAuthorization is genericapifilters.WithAuthorization but for the errors
// of authorization.Authorizer: a review over the user's share
// (authorization.ErrUserShare) is answered 429 with Retry-After, any other
// error (a review that failed, or a denial while reviews are failing) 503
// with a generic message, the same for every cluster, existing or not; the
// detail goes to the log only. The generic filter answers 500 with the
// error's text, which names kcp's URL and the cluster.
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
