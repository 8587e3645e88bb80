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
// config shares one transport, which Run rebuilds when one of those files
// changes (checked by content, so a mounted Secret's atomic symlink swap and
// client-go's in-place certificate rotation both count), closing every
// connection of the old one so that no request goes on with the old
// credentials. A kubeconfig that cannot be read at start is an error; a
// change that cannot be read later keeps the last good credentials.
package kubeconfig

import (
	"context"
	"crypto/sha256"
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

	lock        sync.Mutex // serializes reloads
	failedPrint [sha256.Size]byte
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

// Reload reads the files again and, when their content changed and still
// makes a valid config, switches every client to it and closes the old
// connections. It tells whether it switched.
func (l *Loader) Reload(ctx context.Context) bool {
	logger := klog.FromContext(ctx).WithValues("path", l.path)
	l.lock.Lock()
	defer l.lock.Unlock()
	old := l.current.Load()
	fingerprint, err := l.fingerprint(old.config)
	if err == nil && fingerprint == old.fingerprint {
		return false
	}
	g, err := l.load()
	if err != nil {
		// A Secret being swapped, or a broken file: keep the last good
		// credentials, and say so once per content.
		if fingerprint != l.failedPrint {
			l.failedPrint = fingerprint
			logger.Error(err, "cannot reload the kubeconfig, keeping the credentials it had")
		}
		return false
	}
	if g.fingerprint == old.fingerprint {
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

// load reads the kubeconfig and the files it names, and builds a transport
// from that one reading: the files' content goes into the config, so that
// the fingerprint and the credentials in use are of the same bytes.
func (l *Loader) load() (*generation, error) {
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	config, err := parse(l.path, raw, l.context)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	files, fingerprint, err := l.read(config, raw)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	host, err := serverOf(config.Host)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", l.path, err)
	}
	transportConfig := rest.CopyConfig(config)
	for _, f := range []struct {
		path *string
		data *[]byte
	}{
		{&transportConfig.CertFile, &transportConfig.CertData},
		{&transportConfig.KeyFile, &transportConfig.KeyData},
		{&transportConfig.CAFile, &transportConfig.CAData},
	} {
		if *f.path != "" {
			*f.data, *f.path = files[*f.path], ""
		}
	}
	if transportConfig.BearerTokenFile != "" {
		transportConfig.BearerToken = strings.TrimSpace(string(files[transportConfig.BearerTokenFile]))
		transportConfig.BearerTokenFile = ""
	}
	// A dialer of its own per generation, so that its connections can be
	// closed when the credentials change (and the transport stays out of
	// client-go's transport cache).
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	transportConfig.Dial = dialer.DialContext
	transport, err := rest.TransportFor(transportConfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", l.path, err)
	}
	return &generation{transport: transport, connections: dialer, host: host, fingerprint: fingerprint, config: config}, nil
}

// fingerprint hashes the kubeconfig and the files config names.
func (l *Loader) fingerprint(config *rest.Config) ([sha256.Size]byte, error) {
	raw, err := os.ReadFile(l.path)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	_, sum, err := l.read(config, raw)
	return sum, err
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

// read reads the files config names, and hashes them with the kubeconfig's content.
func (l *Loader) read(config *rest.Config, kubeconfig []byte) (map[string][]byte, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	files := map[string][]byte{}
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(kubeconfig))
	h.Write(kubeconfig)
	for _, path := range []string{config.CertFile, config.KeyFile, config.CAFile, config.BearerTokenFile} {
		if path == "" {
			h.Write([]byte{0})
			continue
		}
		content, err := os.ReadFile(path) //nolint:gosec // the paths are the operator's kubeconfig's
		if err != nil {
			return nil, sum, err
		}
		files[path] = content
		fmt.Fprintf(h, "%d:%s:%d:", len(path), path, len(content))
		h.Write(content)
	}
	copy(sum[:], h.Sum(nil))
	return files, sum, nil
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
