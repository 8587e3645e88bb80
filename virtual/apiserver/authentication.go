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
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
	webhooktoken "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

// tokenReviewWait is how long a request with a token not known yet waits for a TokenReview turn.
const tokenReviewWait = 5 * time.Second

// applyAuthentication is [genericapiserveroptions.DelegatingAuthenticationOptions.ApplyTo] without anonymous
// requests, with kcp's TokenReview reached through a logical cluster in turns of [tokenReviews], and request-header
// users through [frontProxyGroupFilter].
func applyAuthentication(o *Options, info *genericapiserver.AuthenticationInfo, serving *genericapiserver.SecureServingInfo, tokenReviewConfig *clientrest.Config) error {
	authnConfig := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 o.TokenCacheTTL,
		WebhookRetryBackoff:      genericapiserveroptions.DefaultAuthWebhookRetryBackoff(),
		TokenAccessReviewTimeout: 10 * time.Second,
	}
	var tokens authenticator.Token
	if tokenReviewConfig != nil {
		client, err := kubernetes.NewForConfig(tokenReviewConfig)
		if err != nil {
			return err
		}
		// What authnConfig.New builds for a TokenAccessReviewClient, with tokenReviews between the cache and the webhook.
		webhook, err := webhooktoken.NewFromInterface(client.AuthenticationV1(), nil, *authnConfig.WebhookRetryBackoff, authnConfig.TokenAccessReviewTimeout,
			webhooktoken.AuthenticatorMetrics{RecordRequestTotal: authenticatorfactory.RecordRequestTotal, RecordRequestLatency: authenticatorfactory.RecordRequestLatency})
		if err != nil {
			return err
		}
		limited := newTokenReviews(webhook, o.TokenReviewConcurrency, o.FailedTokenCacheSize, tokenReviewWait, o.TokenCacheTTL, clock.RealClock{})
		tokens = tokencache.New(limited, false, o.TokenCacheTTL, 0)
	}
	if o.ClientCert.ClientCA != "" {
		provider, err := o.ClientCert.GetClientCAContentProvider()
		if err != nil {
			return fmt.Errorf("loading --client-ca-file: %w", err)
		}
		authnConfig.ClientCertificateCAContentProvider = provider
		if err := info.ApplyClientCert(provider, serving); err != nil {
			return err
		}
	}
	var authenticators []authenticator.Request
	if o.RequestHeader.ClientCAFile != "" {
		requestHeader, err := o.RequestHeader.ToAuthenticationRequestHeaderConfig()
		if err != nil {
			return fmt.Errorf("loading --requestheader-client-ca-file: %w", err)
		}
		info.RequestHeaderConfig = requestHeader
		if err := info.ApplyClientCert(requestHeader.CAContentProvider, serving); err != nil {
			return err
		}
		// What authnConfig.New builds for a RequestHeaderConfig, first as there.
		authenticators = append(authenticators, frontProxyGroupFilter{requestHeader: headerrequest.NewDynamicVerifyOptionsSecure(
			requestHeader.CAContentProvider.VerifyOptions, requestHeader.AllowedClientNames,
			requestHeader.UsernameHeaders, requestHeader.UIDHeaders, requestHeader.GroupHeaders, requestHeader.ExtraHeaderPrefixes,
		)})
	}
	if authnConfig.ClientCertificateCAContentProvider != nil {
		certificates, _, err := authnConfig.New()
		if err != nil {
			return err
		}
		authenticators = append(authenticators, certificates)
	}
	if tokens != nil {
		authenticators = append(authenticators, bearertoken.New(tokens), websocket.NewProtocolAuthenticator(tokens))
	}
	if len(authenticators) == 0 {
		return errors.New("no authentication method configured")
	}
	info.Authenticator = group.NewAuthenticatedGroupAdder(unionauth.New(authenticators...))
	return nil
}

// errNoTokenReviewTurn fails a token that found no TokenReview turn within its wait: a 401, as for a bad token.
var errNoTokenReviewTurn = errors.New("too many TokenReviews under way")

// tokenReviews bounds the TokenReviews of tokens the cache in front of it does not hold: at most concurrency
// under way in turns of one [authorization.Limiter] key, a request waiting at most wait for one; a token kcp
// refused is remembered by its hash for ttl in a bounded LRU, so that a flood of made-up tokens costs bounded memory.
type tokenReviews struct {
	delegate  authenticator.Token
	turns     *authorization.Limiter
	wait, ttl time.Duration
	failed    *utilcache.LRUExpireCache // [sha256.Size]byte, for ttl
}

func newTokenReviews(delegate authenticator.Token, concurrency, size int, wait, ttl time.Duration, clk clock.PassiveClock) *tokenReviews {
	return &tokenReviews{
		delegate: delegate, turns: authorization.NewLimiter(concurrency, concurrency),
		wait: wait, ttl: ttl, failed: utilcache.NewLRUExpireCacheWithClock(size, clk),
	}
}

// AuthenticateToken asks kcp, in turn, unless the token failed lately.
func (t *tokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if _, found := t.failed.Get(key); found {
		return nil, false, nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, t.wait)
	defer cancel()
	release, _, err := t.turns.Acquire(waitCtx, authorization.UserKey{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, errNoTokenReviewTurn
	}
	defer release()
	resp, ok, err := t.delegate.AuthenticateToken(ctx, token)
	if !ok && err == nil && t.ttl > 0 {
		t.failed.Add(key, struct{}{}, t.ttl)
	}
	return resp, ok, err
}

// The groups, and prefixes of groups, kcp's front-proxy never forwards (its DropGroups): a user of the request
// headers carrying one was not forwarded by an honest front-proxy. kcp's source: virtual/README.md.
var (
	droppedGroups        = []string{user.SystemPrivilegedGroup, "system:kcp:logical-cluster-admin"}
	droppedGroupPrefixes = []string{"system:kcp:initializer:", "system:kcp:terminator:"}
)

// droppedGroup tells whether kcp's front-proxy never forwards the group.
func droppedGroup(group string) bool {
	if slices.Contains(droppedGroups, group) {
		return true
	}
	for _, prefix := range droppedGroupPrefixes {
		if strings.HasPrefix(group, prefix) {
			return true
		}
	}
	return false
}

// withoutDroppedGroups is groups without those kcp's front-proxy never forwards; groups itself when it has none.
func withoutDroppedGroups(groups []string) []string {
	if !slices.ContainsFunc(groups, droppedGroup) {
		return groups
	}
	return slices.DeleteFunc(slices.Clone(groups), droppedGroup)
}

// frontProxyGroupFilter is the request-header authenticator without the groups kcp's front-proxy never forwards, as
// kcp's GroupFilter wraps the front-proxy's; a user of a bearer token or client certificate keeps their groups.
type frontProxyGroupFilter struct {
	requestHeader authenticator.Request
}

var _ authenticator.Request = frontProxyGroupFilter{}

// AuthenticateRequest implements [authenticator.Request].
func (f frontProxyGroupFilter) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := f.requestHeader.AuthenticateRequest(req)
	if !ok || resp == nil || resp.User == nil {
		return resp, ok, err
	}
	groups := resp.User.GetGroups()
	kept := withoutDroppedGroups(groups)
	if len(kept) == len(groups) {
		return resp, ok, err
	}
	klog.FromContext(req.Context()).V(2).Info("Dropped groups kcp's front-proxy never forwards from a user of the request headers",
		"user", resp.User.GetName(), "dropped", len(groups)-len(kept))
	return &authenticator.Response{
		Audiences: resp.Audiences,
		User: &user.DefaultInfo{
			Name:   resp.User.GetName(),
			UID:    resp.User.GetUID(),
			Groups: kept,
			Extra:  resp.User.GetExtra(),
		},
	}, ok, err
}
