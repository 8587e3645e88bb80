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
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"

	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// Options are the virtual workspace's flags, named as in Kubernetes API servers.
type Options struct {
	SecureServing *genericapiserveroptions.SecureServingOptions
	ClientCert    genericapiserveroptions.ClientCertAuthenticationOptions
	RequestHeader genericapiserveroptions.RequestHeaderAuthenticationOptions
	// RequestHeaderDedicatedCA trusts every client certificate of the request-header CA, whatever its common name.
	RequestHeaderDedicatedCA bool

	AuthenticationKubeconfig                     string
	TokenCacheTTL                                time.Duration
	TokenReviewConcurrency, FailedTokenCacheSize int

	Authorization      authorization.ReviewOptions
	AuthorizationQPS   float32
	AuthorizationBurst int

	MaxWatchTimeout time.Duration
	Shares          ShareOptions
}

// DefaultSecurePort is where the virtual workspace listens by default.
const DefaultSecurePort = 6444

// NewOptions returns the defaults.
func NewOptions() *Options {
	secureServing := genericapiserveroptions.NewSecureServingOptions()
	secureServing.BindPort = DefaultSecurePort
	secureServing.ServerCert.CertDirectory = "apiserver.local.config/certificates"
	secureServing.ServerCert.PairName = "workspacemounts"
	return &Options{
		SecureServing:          secureServing,
		TokenCacheTTL:          10 * time.Second,
		TokenReviewConcurrency: 20,
		FailedTokenCacheSize:   10000,
		Authorization:          authorization.DefaultReviewOptions(),
		AuthorizationQPS:       100,
		AuthorizationBurst:     200,
		MaxWatchTimeout:        wsmregistry.DefaultMaxWatchTimeout,
		Shares:                 DefaultShareOptions(),
	}
}

// AddFlags registers the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.ClientCert.AddFlags(fs)
	o.RequestHeader.AddFlags(fs)
	fs.BoolVar(&o.RequestHeaderDedicatedCA, "requestheader-dedicated-ca", o.RequestHeaderDedicatedCA,
		"Trust every client certificate of --requestheader-client-ca-file, instead of --requestheader-allowed-names, for a CA that signs kcp's proxy certificates only.")
	fs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig,
		"Kubeconfig reaching kcp for TokenReviews, /clusters/root unless its URL names a cluster; the --kubeconfig if empty.")
	fs.DurationVar(&o.TokenCacheTTL, "authentication-token-webhook-cache-ttl", o.TokenCacheTTL, "How long to remember a TokenReview answer.")
	fs.IntVar(&o.TokenReviewConcurrency, "authentication-token-review-concurrency", o.TokenReviewConcurrency,
		"TokenReviews of unknown tokens under way at once; a request waits "+tokenReviewWait.String()+" at most for a turn, then is answered 401.")
	fs.IntVar(&o.FailedTokenCacheSize, "authentication-failed-token-cache-size", o.FailedTokenCacheSize,
		"Tokens kcp refused to remember at most, for --authentication-token-webhook-cache-ttl.")
	a := &o.Authorization
	fs.DurationVar(&a.AllowTTL, "authorization-webhook-cache-authorized-ttl", a.AllowTTL, "How long to remember that kcp allowed a user to see a workspace.")
	fs.DurationVar(&a.DenyTTL, "authorization-webhook-cache-unauthorized-ttl", a.DenyTTL, "How long to remember that kcp denied a user to see a workspace.")
	fs.DurationVar(&a.StaleGrace, "authorization-stale-grace", a.StaleGrace,
		"How long past its TTL an answer may still serve while kcp, asked again, does not answer within "+a.StaleWait.String()+".")
	fs.IntVar(&a.CacheSize, "authorization-cache-size", a.CacheSize, "Answers remembered at most, one per user, logical cluster and verb.")
	fs.IntVar(&a.Concurrency, "authorization-concurrency", a.Concurrency, "SubjectAccessReviews under way towards kcp at once, for all users.")
	fs.IntVar(&a.PerUserConcurrency, "authorization-per-user-concurrency", a.PerUserConcurrency,
		"SubjectAccessReviews under way at once for one user, every ServiceAccount of an org and its workspaces being one.")
	fs.Float64Var(&a.NewSubjectsPerTenantQPS, "authorization-new-subjects-per-tenant-qps", a.NewSubjectsPerTenantQPS,
		"New users (each token of a ServiceAccount is one) one user or org may bring to SubjectAccessReviews per second; more are answered 429.")
	fs.IntVar(&a.NewSubjectsPerTenantBurst, "authorization-new-subjects-per-tenant-burst", a.NewSubjectsPerTenantBurst,
		"Burst of new users above --authorization-new-subjects-per-tenant-qps, per user or org.")
	fs.Float32Var(&o.AuthorizationQPS, "authorization-qps", o.AuthorizationQPS, "SubjectAccessReviews per second to kcp, for all users together.")
	fs.IntVar(&o.AuthorizationBurst, "authorization-burst", o.AuthorizationBurst, "Burst of SubjectAccessReviews above --authorization-qps.")
	fs.DurationVar(&o.MaxWatchTimeout, "max-watch-timeout", o.MaxWatchTimeout,
		"The longest a watch lasts; one without timeoutSeconds ends at a random time between half of it and it.")
	fs.IntVar(&o.Shares.PerUserInFlight, "max-requests-inflight-per-user", o.Shares.PerUserInFlight,
		"Requests of one user served at once, watches excepted; more are answered 429.")
	fs.IntVar(&o.Shares.PerUserWatches, "max-watches-per-user", o.Shares.PerUserWatches, "Watches of one user open at once; more are answered 429.")
	fs.IntVar(&o.Shares.MaxWatches, "max-watches", o.Shares.MaxWatches, "Watches of all users open at once; more are answered 429.")
}

// Validate tells what is wrong with the options.
func (o *Options) Validate() error {
	errs := o.SecureServing.Validate()
	if o.TokenCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-cache-ttl must not be negative"))
	}
	if o.TokenReviewConcurrency < 1 || o.FailedTokenCacheSize < 1 {
		errs = append(errs, errors.New("--authentication-token-review-concurrency and --authentication-failed-token-cache-size must be positive"))
	}
	if err := o.Authorization.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Shares.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.AuthorizationQPS <= 0 || o.AuthorizationBurst < 1 {
		errs = append(errs, errors.New("--authorization-qps and --authorization-burst must be positive"))
	}
	// Without allowed names any certificate of the CA may assert any identity: docs/design/virtual-apiserver.md.
	switch {
	case o.RequestHeaderDedicatedCA && o.RequestHeader.ClientCAFile == "":
		errs = append(errs, errors.New("--requestheader-dedicated-ca needs --requestheader-client-ca-file: the CA it trusts"))
	case o.RequestHeaderDedicatedCA && len(o.RequestHeader.AllowedNames) > 0:
		errs = append(errs, errors.New("--requestheader-dedicated-ca and --requestheader-allowed-names exclude each other: the first trusts every certificate of the CA, the second those with the names given"))
	case o.RequestHeader.ClientCAFile != "" && !o.RequestHeaderDedicatedCA && len(o.RequestHeader.AllowedNames) == 0:
		errs = append(errs, errors.New("--requestheader-client-ca-file needs --requestheader-allowed-names: the common name of the front-proxy's client certificate (kcp-front-proxy as kcp issues it); without it any certificate of that CA could assert any user and group. "+
			"A CA that signs the front-proxy's certificates only, whatever their names, is trusted with --requestheader-dedicated-ca instead"))
	}
	if o.MaxWatchTimeout < 2*time.Second {
		errs = append(errs, fmt.Errorf("--max-watch-timeout must be at least 2s, not %s", o.MaxWatchTimeout))
	}
	return errors.Join(errs...)
}

// RequestHeaderDedicatedCAWarning is logged at start with --requestheader-dedicated-ca.
const RequestHeaderDedicatedCAWarning = "WARNING: --requestheader-dedicated-ca: every client certificate of --requestheader-client-ca-file may assert any user and group " +
	"(system:masters included) in the X-Remote-* headers; only kcp's proxies may hold certificates of that CA"

// CompletedOptions are [Options] with their serving certificate settled; only [Options.Complete] makes them.
type CompletedOptions struct {
	*completedOptions
}

type completedOptions struct {
	Options
}

// Complete returns a copy of the options with a self-signed serving pair for localhost in --cert-dir when no
// --tls-cert-file was given.
func (o *Options) Complete() (CompletedOptions, error) {
	completed := *o
	secureServing := *o.SecureServing
	completed.SecureServing = &secureServing
	if err := completed.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return CompletedOptions{}, fmt.Errorf("creating a self-signed serving certificate: %w", err)
	}
	return CompletedOptions{&completedOptions{Options: completed}}, nil
}
