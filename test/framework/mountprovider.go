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

package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	// MountProxyClientName is the common name of the client certificate a
	// [MountProvider] makes for kcp's mount proxy, and the only one it trusts.
	MountProxyClientName = "kcp-mount-proxy"

	mountProxyClientCertFlag = "--mount-proxy-client-cert-file"
	mountProxyServerCAFlag   = "--mount-proxy-server-ca-file"
)

// MountProxyFlags are the flags of kcp's mount proxy a kcp binary has, as it
// lists them: ClientCert for --mount-proxy-client-cert-file
// and --mount-proxy-client-key-file (kcp v0.32.3 has them, v0.28.1 not),
// ServerCA for --mount-proxy-server-ca-file (kcp's newer mount proxy, which
// verifies a mount target's serving certificate).
type MountProxyFlags struct {
	ClientCert, ServerCA bool
}

// KCPMountProxyFlags reads which mount proxy flags binary has from its
// flag listings: `kcp start --help` shows only the most important flags,
// `kcp start options` all of them.
func KCPMountProxyFlags(ctx context.Context, binary string) (MountProxyFlags, error) {
	var help strings.Builder
	for _, args := range [][]string{{"start", "--help"}, {"start", "options"}} {
		out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
		if err != nil {
			return MountProxyFlags{}, fmt.Errorf("%s %s: %w: %s", binary, strings.Join(args, " "), err, lastLines(string(out), 5))
		}
		help.Write(out)
	}
	return parseMountProxyFlags(help.String()), nil
}

// parseMountProxyFlags reads the mount proxy flags from kcp's help text.
func parseMountProxyFlags(help string) MountProxyFlags {
	has := func(flag string) bool {
		for _, field := range strings.Fields(help) {
			if field == flag || strings.HasPrefix(field, flag+"=") {
				return true
			}
		}
		return false
	}
	return MountProxyFlags{ClientCert: has(mountProxyClientCertFlag), ServerCA: has(mountProxyServerCAFlag)}
}

// MountProvider is a mount target on 127.0.0.1 that follows kcp's newer mount
// contract: it serves https, believes identity only from kcp's mount proxy
// (by its client certificate, which it makes for kcp) in X-Remote-*
// headers, never from a bearer token, and refuses a request at kcp's hop
// limit (mountTarget). A mount object whose status.URL is URL mounts it.
type MountProvider struct {
	// URL is where it serves, https://127.0.0.1:<port>, without a path.
	URL string
	// ServerCAFile is the CA of its serving certificate (kcp's
	// --mount-proxy-server-ca-file); ClientCertFile and ClientKeyFile are
	// the client certificate it trusts (kcp's --mount-proxy-client-cert-file
	// and --mount-proxy-client-key-file), all in the directory given to
	// StartMountProvider.
	ServerCAFile, ClientCertFile, ClientKeyFile string

	server *http.Server
	done   chan error
}

// StartMountProvider makes the provider's CAs and certificates in dir and
// starts serving on a free port of 127.0.0.1. The caller must call Stop.
func StartMountProvider(ctx context.Context, dir string) (*MountProvider, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	servingCA, err := NewCA("mount-provider-serving-ca")
	if err != nil {
		return nil, err
	}
	serving, err := servingCA.ServingCert("127.0.0.1")
	if err != nil {
		return nil, err
	}
	servingCert, err := serving.TLSCertificate()
	if err != nil {
		return nil, err
	}
	proxyCA, err := NewCA("mount-proxy-client-ca")
	if err != nil {
		return nil, err
	}
	proxyClient, err := proxyCA.ClientCert(MountProxyClientName)
	if err != nil {
		return nil, err
	}
	p := &MountProvider{
		ServerCAFile:   filepath.Join(dir, "serving-ca.crt"),
		ClientCertFile: filepath.Join(dir, "mount-proxy-client.crt"),
		ClientKeyFile:  filepath.Join(dir, "mount-proxy-client.key"),
		done:           make(chan error, 1),
	}
	if err := servingCA.WriteCertFile(p.ServerCAFile); err != nil {
		return nil, err
	}
	if err := proxyClient.WriteFiles(p.ClientCertFile, p.ClientKeyFile); err != nil {
		return nil, err
	}
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "https://" + listener.Addr().String()
	p.server = &http.Server{
		Handler: &mountTarget{proxyCAs: proxyCA.Pool(), proxyNames: []string{MountProxyClientName}},
		// The certificate is asked for, and checked by the handler, so that a
		// caller without kcp's gets an answer that says why.
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{servingCert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { p.done <- p.server.ServeTLS(listener, "", "") }()
	return p, nil
}

// KCPArgs are the flags of a kcp that mounts workspaces on the provider, of
// those flags kcp has: its mount proxy's client certificate, and where kcp
// verifies mount targets, the provider's serving CA.
func (p *MountProvider) KCPArgs(flags MountProxyFlags) []string {
	var args []string
	if flags.ClientCert {
		args = append(args, mountProxyClientCertFlag+"="+p.ClientCertFile, "--mount-proxy-client-key-file="+p.ClientKeyFile)
	}
	if flags.ServerCA {
		args = append(args, mountProxyServerCAFlag+"="+p.ServerCAFile)
	}
	return args
}

// Stop stops serving, waiting at most 5 seconds for requests under way.
func (p *MountProvider) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.server.Shutdown(ctx)
	if served := <-p.done; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	return err
}
