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

// Package kubeconfig loads a kubeconfig as a rest.Config whose credentials follow the files on disk
// (docs/design/pkg-kubeconfig.md).
package kubeconfig

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
)

const DefaultReloadInterval = 10 * time.Second

// Loader is the transport of a kubeconfig context's current content; host is the server the clients
// were built for.
type Loader struct {
	path, context string
	current       atomic.Pointer[generation]
	host          *url.URL

	lock      sync.Mutex // serializes reloads
	lastError string     // logged once
}

type generation struct {
	transport   http.RoundTripper
	connections *connrotation.Dialer
	host        *url.URL
	fingerprint [sha256.Size]byte
	config      *rest.Config
}

// Load reads the context, the current one if empty, of the kubeconfig at path.
func Load(path, context string) (*Loader, error) {
	l := &Loader{path: path, context: context}
	config, fingerprint, err := l.read()
	if err != nil {
		return nil, err
	}
	g, err := l.build(config, fingerprint)
	if err != nil {
		return nil, err
	}
	l.host = g.host
	l.current.Store(g)
	return l, nil
}

// Config returns a rest.Config whose transport is the loader.
func (l *Loader) Config() *rest.Config {
	g := l.current.Load()
	return &rest.Config{Host: g.config.Host, APIPath: g.config.APIPath, Timeout: g.config.Timeout, Transport: l}
}

// CredentialsConfig is [Loader.Config] for clients that replace the server.
func (l *Loader) CredentialsConfig() *rest.Config {
	config := l.Config()
	config.Transport = credentialsOnly{l}
	return config
}

type credentialsOnly struct{ loader *Loader }

func (c credentialsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.loader.current.Load().transport.RoundTrip(req)
}

// RoundTrip sends the request with the current credentials and server.
func (l *Loader) RoundTrip(req *http.Request) (*http.Response, error) {
	g := l.current.Load()
	if g.host.Scheme != l.host.Scheme || g.host.Host != l.host.Host {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host, req.Host = g.host.Scheme, g.host.Host, ""
	}
	return g.transport.RoundTrip(req)
}

func (l *Loader) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { l.Reload(ctx) }, interval)
}

// Reload switches every client to the files' credentials and server if they changed, and tells
// whether it did; on an error it keeps the last good ones.
func (l *Loader) Reload(ctx context.Context) bool {
	logger := klog.FromContext(ctx).WithValues("path", l.path)
	l.lock.Lock()
	defer l.lock.Unlock()
	old := l.current.Load()
	config, fingerprint, err := l.read()
	if err != nil {
		if err.Error() != l.lastError {
			l.lastError = err.Error()
			logger.Error(err, "cannot reload the kubeconfig, keeping the credentials it had")
		}
		return false
	}
	l.lastError = ""
	if fingerprint == old.fingerprint {
		return false
	}
	g, err := l.build(config, fingerprint)
	if err != nil {
		logger.Error(err, "cannot reload the kubeconfig, keeping the credentials it had")
		return false
	}
	l.current.Store(g)
	old.connections.CloseAll()
	if g.host.Host != l.host.Host || g.host.Scheme != l.host.Scheme {
		logger.Info("reloaded the kubeconfig; requests now go to its new server", "server", g.host.String())
	} else {
		logger.Info("reloaded the kubeconfig")
	}
	return true
}

// read takes the fingerprint and the credentials from the same reading.
func (l *Loader) read() (*rest.Config, [sha256.Size]byte, error) {
	config, err := l.readConfig()
	if err != nil {
		return nil, [sha256.Size]byte{}, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	sum, err := fingerprintOf(config)
	if err != nil {
		return nil, sum, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	return config, sum, nil
}

func (l *Loader) readConfig() (*rest.Config, error) {
	raw, err := clientcmd.LoadFromFile(l.path)
	if err != nil {
		return nil, err
	}
	if err := clientcmd.ResolveLocalPaths(raw); err != nil {
		return nil, err
	}
	config, err := clientcmd.NewNonInteractiveClientConfig(*raw, l.context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	if err := rest.LoadTLSFiles(config); err != nil {
		return nil, err
	}
	config.CertFile, config.KeyFile, config.CAFile = "", "", ""
	if config.BearerTokenFile != "" {
		token, err := os.ReadFile(config.BearerTokenFile)
		if err != nil {
			return nil, err
		}
		config.BearerToken, config.BearerTokenFile = strings.TrimSpace(string(token)), ""
	}
	_, err = serverOf(config.Host)
	return config, err
}

// fingerprintOf hashes what a client's requests depend on.
func fingerprintOf(config *rest.Config) ([sha256.Size]byte, error) {
	tls := config.TLSClientConfig
	data, err := json.Marshal([]any{config.Host, config.APIPath, tls.ServerName, tls.Insecure, tls.CAData, tls.CertData, tls.KeyData, tls.NextProtos,
		config.BearerToken, config.Username, config.Password, config.Impersonate, config.ExecProvider, config.AuthProvider})
	return sha256.Sum256(data), err
}

// build gives each generation a dialer of its own, so that its connections can be closed.
func (l *Loader) build(config *rest.Config, fingerprint [sha256.Size]byte) (*generation, error) {
	host, err := serverOf(config.Host)
	if err != nil {
		return nil, err
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	transportConfig := rest.CopyConfig(config)
	transportConfig.Dial = dialer.DialContext
	transport, err := rest.TransportFor(transportConfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", l.path, err)
	}
	return &generation{transport: transport, connections: dialer, host: host, fingerprint: fingerprint, config: config}, nil
}

func serverOf(server string) (*url.URL, error) {
	u, err := url.Parse(server)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", server, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, errors.New("the server URL must have a scheme and a host, e.g. https://kcp.example.com:6443")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}
