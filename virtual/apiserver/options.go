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
	"time"

	"github.com/spf13/pflag"

	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
)

// Options are the serving and authentication flags of the virtual workspace,
// named as in Kubernetes API servers.
type Options struct {
	SecureServing *genericapiserveroptions.SecureServingOptions
	ClientCert    genericapiserveroptions.ClientCertAuthenticationOptions
	RequestHeader genericapiserveroptions.RequestHeaderAuthenticationOptions

	// AuthenticationKubeconfig reaches kcp for TokenReviews; empty: the plugin's --kubeconfig.
	AuthenticationKubeconfig string
	// TokenCacheTTL is how long a TokenReview answer is remembered.
	TokenCacheTTL time.Duration
}

// DefaultSecurePort is where the virtual workspace listens by default.
const DefaultSecurePort = 6444

// NewOptions returns the defaults: port 6444, a self-signed serving pair in
// --cert-dir when no --tls-cert-file is given.
func NewOptions() *Options {
	secureServing := genericapiserveroptions.NewSecureServingOptions()
	secureServing.BindPort = DefaultSecurePort
	secureServing.ServerCert.CertDirectory = "apiserver.local.config/certificates"
	secureServing.ServerCert.PairName = "workspacemounts"
	return &Options{
		SecureServing: secureServing,
		TokenCacheTTL: 10 * time.Second,
	}
}

// AddFlags registers the options.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.ClientCert.AddFlags(fs)
	o.RequestHeader.AddFlags(fs)
	fs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig,
		"Kubeconfig reaching kcp to review bearer tokens (TokenReview); the --kubeconfig if empty. "+
			"A server URL without a /clusters/<name> path gets /clusters/root.")
	fs.DurationVar(&o.TokenCacheTTL, "authentication-token-webhook-cache-ttl", o.TokenCacheTTL, "How long to remember a TokenReview answer.")
}

// Validate tells what is wrong with the options.
func (o *Options) Validate() error {
	errs := o.SecureServing.Validate()
	if o.TokenCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-cache-ttl must not be negative"))
	}
	return errors.Join(errs...)
}
