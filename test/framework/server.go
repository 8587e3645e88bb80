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
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// readyTimeout bounds how long Start waits for kcp to become ready.
	readyTimeout = 3 * time.Minute
	// stopTimeout bounds how long Stop waits after SIGTERM before it sends SIGKILL.
	stopTimeout = 20 * time.Second
	// startAttempts is how often Start tries again with new ports when one was taken
	// between picking it and kcp binding it.
	startAttempts = 3

	// readinessContext is the admin.kubeconfig context used to poll /readyz.
	readinessContext = "shard-base"
)

// Options configures a kcp server started by Start. The zero value is valid.
type Options struct {
	// Binary is the kcp executable. Default: $KCP_BINARY, else <repo root>/bin/kcp,
	// where the repo root holds the go.mod of github.com/workspacemounts/workspacemounts.
	Binary string
	// RootDir is kcp's --root-directory. Default: a new temporary directory, which
	// Stop removes. A given directory is never removed.
	RootDir string
	// SecurePort, EtcdClientPort and EtcdPeerPort are kcp's ports on
	// 127.0.0.1 (--secure-port, --embedded-etcd-client-port,
	// --embedded-etcd-peer-port). Default (0): free ports.
	SecurePort, EtcdClientPort, EtcdPeerPort int
	// FeatureGates is passed as --feature-gates, e.g. "WorkspaceMounts=true".
	FeatureGates string
	// BatteriesIncluded is passed as --batteries-included, e.g.
	// "workspace-types,admin,user" for the additional non-admin "user" context.
	// Default: kcp's default (workspace-types,admin). The admin battery is needed
	// for the admin.kubeconfig that everything here relies on.
	BatteriesIncluded string
	// ServiceMappings route kcp's /services/<Name> to a backend through its
	// mini front-proxy (--miniproxy-mapping-file, written to RootDir), which
	// passes on the client's bearer token (for development only).
	ServiceMappings []ServiceMapping
	// ExtraArgs are appended to the `kcp start` command line.
	ExtraArgs []string
	// LogPath is the file kcp's stdout and stderr go to. Default: kcp.log in RootDir.
	LogPath string
}

// Server is a kcp process started from a binary, with embedded etcd in a
// temporary root directory. It can be stopped and started again on the same
// address, ports and root directory (Restart, StopProcess or Kill and
// StartAgain), and paused (Pause, Resume).
//
// The processes of a ShardedServer (each shard, the cache server, the
// front-proxy) are Servers too; there the name in messages is the process's
// (e.g. "shard-2"), and only the shards write an admin.kubeconfig.
type Server struct {
	// Process is the process; LogPath is kcp's log, which every start
	// appends to.
	*Process
	// RootDir is kcp's --root-directory.
	RootDir string
	// KubeconfigPath is the admin.kubeconfig written by kcp. kcp rewrites it on
	// every start: the shard-base and system:admin contexts keep their token
	// (its hash is in the root directory), root and base get a new one. Empty
	// for the cache server and the front-proxy of a ShardedServer.
	KubeconfigPath string
	// BaseURL is the shard's base URL, e.g. https://127.0.0.1:41234, without a /clusters/... path.
	BaseURL string

	// KubeconfigAfter is how long after the latest process start kcp wrote
	// admin.kubeconfig (roughly when it starts serving); after a restart, when
	// an admin.kubeconfig for the same address was already there, it is 0.
	KubeconfigAfter time.Duration
	// ReadyAfter is how long after the latest process start /readyz first succeeded.
	ReadyAfter time.Duration

	newProbe   func(began time.Time) readinessProbe // makes the readiness check of each start
	ownRootDir bool
}

// newServer prepares the kcp process name (kcp, or a process of a
// ShardedServer), serving at baseURL, that runs binary with args in rootDir.
func newServer(name, binary string, args []string, rootDir, baseURL, logPath string) *Server {
	return &Server{
		Process: newProcess(name, baseURL, binary, args, rootDir, logPath, stopTimeout),
		RootDir: rootDir,
		BaseURL: baseURL,
	}
}

// Start starts kcp and waits until it is ready: admin.kubeconfig is written and
// /readyz succeeds. It gives up after 3 minutes or when ctx is done, and returns
// the tail of kcp's log if the process exits early. The caller must call Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	binary, err := opts.binary()
	if err != nil {
		return nil, err
	}
	return retryTakenPorts(opts.RootDir, func() (*Server, error) { return start(ctx, binary, opts) })
}

// retryTakenPorts calls start again while it fails because a port was taken
// between picking it and binding it, at most startAttempts times in all; only
// when the root directory is its own (rootDir is empty), so that no
// half-initialized etcd data of a failed attempt is reused.
func retryTakenPorts[T any](rootDir string, start func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := start()
		if err == nil || !errors.Is(err, errPortInUse) || rootDir != "" || attempt == startAttempts {
			return v, err
		}
	}
}

// makeRootDir creates dir, or a new temporary directory named pattern
// (own) if it is empty, the root directory of what.
func makeRootDir(dir, pattern, what string) (path string, own bool, err error) {
	if dir == "" {
		dir, err = os.MkdirTemp("", pattern)
		own = true
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return "", false, fmt.Errorf("creating the root directory of %s: %w", what, err)
	}
	return dir, own, nil
}

// startFailed is the error of a start that failed with err: a root
// directory of its own is removed if a port was taken (the next attempt
// makes a new one), any other is kept for inspection.
func startFailed(err error, what, rootDir string, own bool) error {
	if !errors.Is(err, errPortInUse) {
		return fmt.Errorf("%w\n(root directory of %s kept for inspection: %s)", err, what, rootDir)
	}
	_ = removeRootDir(own, rootDir, what)
	return err
}

// removeRootDir removes the root directory dir of what if it is its own.
func removeRootDir(own bool, dir, what string) error {
	if !own {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the root directory of %s: %w", what, err)
	}
	return nil
}

func start(ctx context.Context, binary string, opts Options) (*Server, error) {
	ports, err := freePorts(ctx, 3)
	if err != nil {
		return nil, err
	}
	for i, port := range []int{opts.SecurePort, opts.EtcdClientPort, opts.EtcdPeerPort} {
		if port != 0 {
			ports[i] = port
		}
	}
	rootDir, own, err := makeRootDir(opts.RootDir, "kcp-e2e-", "kcp")
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(rootDir, "admin.kubeconfig")
	args := append([]string{"start", "--kubeconfig-path=" + kubeconfigPath}, serverArgs(rootDir, ports)...)
	if opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+opts.FeatureGates)
	}
	if opts.BatteriesIncluded != "" {
		args = append(args, "--batteries-included="+opts.BatteriesIncluded)
	}
	if len(opts.ServiceMappings) > 0 {
		mappingFile := filepath.Join(rootDir, "miniproxy-mapping.yaml")
		if err := writeMappingFile(mappingFile, miniproxyMappings(opts.ServiceMappings)); err != nil {
			return nil, startFailed(err, "kcp", rootDir, own)
		}
		args = append(args, "--miniproxy-mapping-file="+mappingFile)
	}
	args = append(args, opts.ExtraArgs...)
	logPath := opts.LogPath
	if logPath == "" {
		logPath = filepath.Join(rootDir, "kcp.log")
	}

	s := newServer("kcp", binary, args, rootDir, localURL(ports[0]), logPath)
	s.KubeconfigPath, s.ownRootDir = kubeconfigPath, own
	s.newProbe = s.adminKubeconfigProbe
	if err := s.launch(ctx); err != nil {
		return nil, startFailed(err, "kcp", rootDir, own)
	}
	return s, nil
}

// serverArgs are the flags of a kcp server (kcp start, a shard, the cache
// server) with its root directory and on 127.0.0.1 with ports (secure,
// embedded etcd's for clients, for peers).
func serverArgs(rootDir string, ports []int) []string {
	return []string{
		"--root-directory=" + rootDir,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
	}
}

// launch starts a process and waits until it is ready. If it does not
// become ready, the process is stopped, and the error wraps errPortInUse if
// a port was taken.
func (s *Server) launch(ctx context.Context) error {
	began := time.Now()
	i, err := s.start()
	if err != nil {
		return err
	}
	if err := s.waitReady(ctx, i, readyTimeout, s.newProbe(began)); err != nil {
		_ = s.terminate(i)
		s.setStopped("it did not become ready")
		return err
	}
	s.ReadyAfter = time.Since(began)
	return nil
}

// adminKubeconfigProbe is kcp's readiness: admin.kubeconfig is written for
// this server, and /readyz succeeds with its shard-base credentials. It
// sets KubeconfigAfter.
func (s *Server) adminKubeconfigProbe(began time.Time) readinessProbe {
	var client *http.Client
	return func(ctx context.Context) (bool, string) {
		if client == nil {
			if _, err := os.Stat(s.KubeconfigPath); err != nil {
				return false, "admin.kubeconfig not written yet"
			}
			// kcp rewrites admin.kubeconfig on every start, so a stale one in a
			// reused root directory fails here until then. One of an earlier
			// process of this server (StartAgain) is good already: the
			// shard-base token stays.
			cfg, err := s.BaseConfig(readinessContext)
			if err != nil {
				return false, err.Error()
			}
			if client, err = rest.HTTPClientFor(cfg); err != nil {
				return false, "creating an HTTP client for kcp: " + err.Error()
			}
			client.Timeout = 5 * time.Second
			s.KubeconfigAfter = time.Since(began)
		}
		return probe(ctx, client, s.BaseURL+"/readyz")
	}
}

// probe GETs a health endpoint and returns whether it succeeded, or a short
// description of why not.
func probe(ctx context.Context, client *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return true, ""
	}
	var failed []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimSuffix(strings.TrimPrefix(line, "[-]"), " failed: reason withheld"))
		}
	}
	if len(failed) == 0 {
		return false, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return false, fmt.Sprintf("%s: failed checks: %s", resp.Status, strings.Join(failed, ", "))
}

// Config returns a rest.Config for a context of admin.kubeconfig:
//   - "root": kcp-admin (group system:kcp:admin) at /clusters/root,
//   - "base": kcp-admin at the base URL (for cluster-aware clients),
//   - "shard-base": the shard admin (group system:masters) at the base URL, which
//     wildcard (/clusters/*) requests need,
//   - "system:admin": the shard admin at /clusters/system:admin,
//   - "user": a non-admin user at /clusters/root, only with the "user" battery.
//
// Client-side rate limiting is relaxed (QPS 1000, burst 2000) for tests.
func (s *Server) Config(contextName string) (*rest.Config, error) {
	if s.KubeconfigPath == "" {
		return nil, fmt.Errorf("%s writes no admin.kubeconfig", s.name)
	}
	raw, err := loadKubeconfigContext(s.KubeconfigPath, contextName)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, nil, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building rest config for context %q of %s: %w", contextName, s.KubeconfigPath, err)
	}
	// kcp writes admin.kubeconfig on every start; a stale one from an earlier run
	// in the same root directory points to other ports.
	if cfg.Host != s.BaseURL && !strings.HasPrefix(cfg.Host, s.BaseURL+"/") {
		return nil, fmt.Errorf("%s is stale: context %q points to %s, not %s", s.KubeconfigPath, contextName, cfg.Host, s.BaseURL)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg, nil
}

// kubeconfigRewriteTimeout bounds how long loadKubeconfigContext waits for
// a kubeconfig being written: kcp rewrites admin.kubeconfig in place on
// every start (truncated, then written), so a read can see it empty or cut
// short, also once an earlier start's copy has already made the server ready.
const kubeconfigRewriteTimeout = 2 * time.Second

// loadKubeconfigContext loads the kubeconfig at path, which must hold
// contextName; a file that does not parse or lacks it is read again for
// kubeconfigRewriteTimeout before the error is returned.
func loadKubeconfigContext(path, contextName string) (*clientcmdapi.Config, error) {
	var raw *clientcmdapi.Config
	err := poll(context.Background(), kubeconfigRewriteTimeout, 10*time.Millisecond, func(context.Context) (bool, string) {
		loaded, err := clientcmd.LoadFromFile(path)
		switch {
		case err != nil:
			return false, "loading kcp admin kubeconfig: " + err.Error()
		case loaded.Contexts[contextName] == nil:
			return false, fmt.Sprintf("context %q not found in %s", contextName, path)
		}
		raw = loaded
		return true, ""
	})
	return raw, err
}

// BaseConfig is Config with the host set to the shard's base URL (no
// /clusters/... path), as cluster-aware clients need.
func (s *Server) BaseConfig(contextName string) (*rest.Config, error) {
	cfg, err := s.Config(contextName)
	if err != nil {
		return nil, err
	}
	cfg.Host = s.BaseURL
	return cfg, nil
}

// Name names the process in messages: "kcp" for Start's, the process's
// name for those of a ShardedServer ("root", "shard-2", "cache-server",
// "front-proxy").
func (s *Server) Name() string {
	return s.name
}

// StartAgain starts kcp after StopProcess or Kill with the command line of
// the first start: the same address, ports, root directory and flags, and
// waits until it is ready (at most 3 minutes, or until ctx is done). A port
// taken meanwhile by another process is tried again for a few seconds; it
// cannot be changed. If kcp does not become ready, it is stopped again, and
// StartAgain may be called again.
func (s *Server) StartAgain(ctx context.Context) error {
	i, err := s.current()
	if err != nil {
		return err
	}
	select {
	case <-i.exited:
	default:
		return fmt.Errorf("%s is still running (pid %d): stop it first", s.who(), i.cmd.Process.Pid)
	}
	for attempt := 1; ; attempt++ {
		err := s.launch(ctx)
		if err == nil || !errors.Is(err, errPortInUse) || attempt == startAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// Restart stops kcp (StopProcess) and starts it again (StartAgain) on the
// same address, ports and root directory, and waits until it is ready.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.StopProcess(); err != nil {
		return err
	}
	return s.StartAgain(ctx)
}

// Stop stops kcp as Process.Stop does (SIGTERM, SIGKILL after 20s) and
// removes the root directory if Start created it. It is safe to call more
// than once, and after StopProcess or Kill; the server cannot be started
// again afterwards.
func (s *Server) Stop() error {
	return errors.Join(s.Process.Stop(), removeRootDir(s.ownRootDir, s.RootDir, "kcp"))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(ctx context.Context) (int, error) {
	ports, err := freePorts(ctx, 1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are free when
// returned, but another process may take one before kcp binds it; Start retries
// then.
func freePorts(ctx context.Context, n int) ([]int, error) {
	// Keep the listeners open until all ports are picked, so that they differ.
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()

	ports := make([]int, 0, n)
	for range n {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
