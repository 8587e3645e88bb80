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

// Package kubeconfig loads a kubeconfig as a rest.Config whose credentials
// follow the files on disk: the kubeconfig itself and the files it names
// (client certificate and key, CA, token file). Every client built from the
// config shares one transport, which Run rebuilds when the context's server
// or credentials change (compared by content, so a mounted Secret's atomic
// symlink swap and client-go's in-place certificate rotation both count, and
// a rewrite of other contexts does not), closing every connection of the old
// one so that no request goes on with the old credentials. A kubeconfig that
// cannot be read at start is an error; a change that cannot be read later
// keeps the last good credentials.
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
)

// DefaultReloadInterval is how often Run looks at the files.
const DefaultReloadInterval = 10 * time.Second

// Loader is a kubeconfig context and the transport built from its current
// content. It is an http.RoundTripper: Config hands it to every client.
type Loader struct {
	path, context string

	current atomic.Pointer[generation]
	// host is the server of the first load ("https://host:port"), the one
	// the clients were built for.
	host *url.URL

	lock      sync.Mutex // serializes reloads
	lastError string     // the last reload's error, logged once
}

// generation is one content of the files: the transport built from it, its
// connections and its server.
type generation struct {
	transport   http.RoundTripper
	connections *connrotation.Dialer
	host        *url.URL
	fingerprint [sha256.Size]byte
	config      *rest.Config
}

// Load reads the context (the current one if empty) of the kubeconfig at
// path. A missing or malformed file, or one naming files that cannot be
// read, is an error.
func Load(path, context string) (*Loader, error) {
	l := &Loader{path: path, context: context}
	g, err := l.load()
	if err != nil {
		return nil, err
	}
	l.host = g.host
	l.current.Store(g)
	return l, nil
}

// Config returns a rest.Config for the context whose transport is the
// loader's: its server, and no credentials of its own. QPS, Burst, UserAgent
// and wrappers may be set on it and on copies of it.
func (l *Loader) Config() *rest.Config {
	g := l.current.Load()
	return &rest.Config{
		Host:      g.config.Host,
		APIPath:   g.config.APIPath,
		Timeout:   g.config.Timeout,
		Transport: l,
	}
}

// CredentialsConfig is Config for a kubeconfig whose server the clients
// replace (--shards-kubeconfig: each Shard's baseURL): its transport sends
// each request with the current credentials to the host the request names,
// also when the kubeconfig's own server has moved.
func (l *Loader) CredentialsConfig() *rest.Config {
	config := l.Config()
	config.Transport = credentialsOnly{l}
	return config
}

type credentialsOnly struct{ loader *Loader }

func (c credentialsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	return c.loader.current.Load().transport.RoundTrip(req)
}

// RoundTrip sends the request with the current credentials, to the current
// server when the kubeconfig has moved it.
func (l *Loader) RoundTrip(req *http.Request) (*http.Response, error) {
	g := l.current.Load()
	if g.host.Scheme != l.host.Scheme || g.host.Host != l.host.Host {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host, req.Host = g.host.Scheme, g.host.Host, ""
	}
	return g.transport.RoundTrip(req)
}

// Run checks the files every interval until ctx is done, and switches to
// new credentials when their content changed.
func (l *Loader) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			l.Reload(ctx)
		}
	}
}

// Reload reads the files again and, when the context's credentials or
// server changed and still make a valid config, switches every client to
// them and closes the old connections. It tells whether it switched. A
// change elsewhere in the file (kcp rewrites its admin.kubeconfig with new
// tokens for other contexts at every start) switches nothing: closing every
// connection makes every watch start again.
func (l *Loader) Reload(ctx context.Context) bool {
	logger := klog.FromContext(ctx).WithValues("path", l.path)
	l.lock.Lock()
	defer l.lock.Unlock()
	old := l.current.Load()
	config, fingerprint, err := l.read()
	if err != nil {
		// A Secret being swapped, or a broken file: keep the last good
		// credentials, and say so once per error.
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

// load reads the kubeconfig and builds a transport from it.
func (l *Loader) load() (*generation, error) {
	config, fingerprint, err := l.read()
	if err != nil {
		return nil, err
	}
	return l.build(config, fingerprint)
}

// read parses the context of the kubeconfig and reads the files it names
// into it (the client certificate and key, the CA, the token file), so that
// the fingerprint and the credentials in use come from the same reading.
func (l *Loader) read() (*rest.Config, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return nil, sum, fmt.Errorf("loading kubeconfig: %w", err)
	}
	config, err := parse(l.path, raw, l.context)
	if err != nil {
		return nil, sum, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	for _, f := range []struct {
		path *string
		data *[]byte
	}{
		{&config.CertFile, &config.CertData},
		{&config.KeyFile, &config.KeyData},
		{&config.CAFile, &config.CAData},
		{&config.BearerTokenFile, nil},
	} {
		if *f.path == "" {
			continue
		}
		content, err := os.ReadFile(*f.path)
		if err != nil {
			return nil, sum, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
		}
		if f.data == nil {
			config.BearerToken = strings.TrimSpace(string(content))
		} else {
			*f.data = content
		}
		*f.path = ""
	}
	if _, err := serverOf(config.Host); err != nil {
		return nil, sum, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	sum, err = fingerprintOf(config)
	if err != nil {
		return nil, sum, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	return config, sum, nil
}

// fingerprintOf hashes what of a config a client's requests depend on: the
// server, the TLS settings and every kind of credential.
func fingerprintOf(config *rest.Config) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	tls := config.TLSClientConfig
	fields := [][]byte{
		[]byte(config.Host), []byte(config.APIPath), []byte(tls.ServerName), []byte(strconv.FormatBool(tls.Insecure)),
		tls.CAData, tls.CertData, tls.KeyData, []byte(strings.Join(tls.NextProtos, ",")),
		[]byte(config.BearerToken), []byte(config.Username), []byte(config.Password),
	}
	for _, structured := range []any{config.Impersonate, config.ExecProvider, config.AuthProvider} {
		field, err := json.Marshal(structured)
		if err != nil {
			return sum, err
		}
		fields = append(fields, field)
	}
	h := sha256.New()
	for _, field := range fields {
		fmt.Fprintf(h, "%d:", len(field))
		h.Write(field)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// build makes the transport of a config read by read.
func (l *Loader) build(config *rest.Config, fingerprint [sha256.Size]byte) (*generation, error) {
	host, err := serverOf(config.Host)
	if err != nil {
		return nil, err
	}
	// A dialer of its own per generation, so that its connections can be
	// closed when the credentials change (and the transport stays out of
	// client-go's transport cache).
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	transportConfig := rest.CopyConfig(config)
	transportConfig.Dial = dialer.DialContext
	transport, err := rest.TransportFor(transportConfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", l.path, err)
	}
	return &generation{transport: transport, connections: dialer, host: host, fingerprint: fingerprint, config: config}, nil
}

// parse is clientcmd's loading of one kubeconfig file, from bytes already
// read: paths in it are relative to its directory.
func parse(path string, raw []byte, context string) (*rest.Config, error) {
	config, err := clientcmd.Load(raw)
	if err != nil {
		return nil, err
	}
	for _, authInfo := range config.AuthInfos {
		authInfo.LocationOfOrigin = path
	}
	for _, cluster := range config.Clusters {
		cluster.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(config); err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*config, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}

// serverOf is the scheme and host of a server URL.
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
