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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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
	// FeatureGates is passed as --feature-gates, e.g. "WorkspaceMounts=true".
	FeatureGates string
	// BatteriesIncluded is passed as --batteries-included, e.g.
	// "workspace-types,admin,user" for the additional non-admin "user" context.
	// Default: kcp's default (workspace-types,admin). The admin battery is needed
	// for the admin.kubeconfig that everything here relies on.
	BatteriesIncluded string
	// ExtraArgs are appended to the `kcp start` command line.
	ExtraArgs []string
	// LogWriter receives kcp's stdout and stderr. Default: the file kcp.log in RootDir.
	LogWriter io.Writer
}

// Server is a kcp process started from a binary, with embedded etcd in a
// temporary root directory.
type Server struct {
	// RootDir is kcp's --root-directory.
	RootDir string
	// KubeconfigPath is the admin.kubeconfig written by kcp.
	KubeconfigPath string
	// BaseURL is the shard's base URL, e.g. https://127.0.0.1:41234, without a /clusters/... path.
	BaseURL string
	// LogPath is the file kcp logs to, empty if Options.LogWriter was set.
	LogPath string

	// KubeconfigAfter is how long after the process start kcp wrote admin.kubeconfig
	// (roughly when it starts serving).
	KubeconfigAfter time.Duration
	// ReadyAfter is how long after the process start /readyz first succeeded.
	ReadyAfter time.Duration

	cmd        *exec.Cmd
	ownRootDir bool
	logFile    *os.File
	tail       *tailBuffer

	exited  chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// errPortInUse marks a start that failed because a port was taken meanwhile.
var errPortInUse = errors.New("a port was already in use")

// Start starts kcp and waits until it is ready: admin.kubeconfig is written and
// /readyz succeeds. It gives up after 3 minutes or when ctx is done, and returns
// the tail of kcp's log if the process exits early. The caller must call Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	binary, err := opts.binary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, binary, opts)
		if err == nil {
			return s, nil
		}
		// Only retry when the root directory is ours, so that no half-initialized
		// etcd data of the failed attempt is reused.
		if !errors.Is(err, errPortInUse) || opts.RootDir != "" || attempt == startAttempts {
			return nil, err
		}
	}
}

func start(ctx context.Context, binary string, opts Options) (*Server, error) {
	s := &Server{
		RootDir: opts.RootDir,
		tail:    newTailBuffer(64 << 10),
		exited:  make(chan struct{}),
	}
	if s.RootDir == "" {
		dir, err := os.MkdirTemp("", "kcp-e2e-")
		if err != nil {
			return nil, fmt.Errorf("creating kcp root directory: %w", err)
		}
		s.RootDir, s.ownRootDir = dir, true
	} else if err := os.MkdirAll(s.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating kcp root directory: %w", err)
	}
	s.KubeconfigPath = filepath.Join(s.RootDir, "admin.kubeconfig")

	ports, err := freePorts(ctx, 3)
	if err != nil {
		s.removeOwnRootDir()
		return nil, err
	}
	s.BaseURL = "https://127.0.0.1:" + strconv.Itoa(ports[0])

	args := []string{
		"start",
		"--root-directory=" + s.RootDir,
		"--kubeconfig-path=" + s.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
	}
	if opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+opts.FeatureGates)
	}
	if opts.BatteriesIncluded != "" {
		args = append(args, "--batteries-included="+opts.BatteriesIncluded)
	}
	args = append(args, opts.ExtraArgs...)

	logWriter := opts.LogWriter
	if logWriter == nil {
		s.LogPath = filepath.Join(s.RootDir, "kcp.log")
		if s.logFile, err = os.Create(s.LogPath); err != nil {
			s.removeOwnRootDir()
			return nil, fmt.Errorf("creating kcp log file: %w", err)
		}
		logWriter = s.logFile
	}

	// Not ctx: exec.CommandContext would SIGKILL kcp when ctx is done, but kcp
	// must outlive ctx, and Stop gives it the chance to shut down cleanly.
	s.cmd = exec.CommandContext(context.Background(), binary, args...)
	s.cmd.Dir = s.RootDir
	s.cmd.Stdout = io.MultiWriter(logWriter, s.tail)
	s.cmd.Stderr = s.cmd.Stdout
	s.cmd.SysProcAttr = ChildProcessAttributes()

	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		s.closeLog()
		s.removeOwnRootDir()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		s.closeLog()
		close(s.exited)
	}()

	if err := s.waitForReady(ctx, began); err != nil {
		_ = s.terminate()
		if errors.Is(err, errPortInUse) {
			s.removeOwnRootDir()
			return nil, err
		}
		return nil, fmt.Errorf("%w\n(kcp root directory kept for inspection: %s)", err, s.RootDir)
	}
	return s, nil
}

// waitForReady polls until admin.kubeconfig exists for this server and /readyz
// succeeds with its shard-admin credentials.
func (s *Server) waitForReady(ctx context.Context, began time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()

	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()

	lastState := "admin.kubeconfig not written yet"
	var client *http.Client
	for {
		select {
		case <-s.exited:
			err := fmt.Errorf("kcp exited before it became ready (%s): %v\n%s", lastState, s.waitErr, s.LogTail(40))
			if strings.Contains(s.tail.String(), "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("waiting for kcp at %s to become ready (%s): %w\n%s", s.BaseURL, lastState, context.Cause(ctx), s.LogTail(40))
		case <-ticker.C:
		}

		if client == nil {
			if _, err := os.Stat(s.KubeconfigPath); err != nil {
				continue
			}
			// kcp rewrites admin.kubeconfig on every start, so a stale one in a
			// reused root directory fails here until then.
			cfg, err := s.BaseConfig(readinessContext)
			if err != nil {
				lastState = err.Error()
				continue
			}
			if client, err = rest.HTTPClientFor(cfg); err != nil {
				return fmt.Errorf("creating HTTP client for kcp: %w", err)
			}
			client.Timeout = 5 * time.Second
			s.KubeconfigAfter = time.Since(began)
		}

		ok, state := probe(ctx, client, s.BaseURL+"/readyz")
		if ok {
			s.ReadyAfter = time.Since(began)
			return nil
		}
		lastState = state
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
	raw, err := clientcmd.LoadFromFile(s.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("loading kcp admin kubeconfig: %w", err)
	}
	if _, ok := raw.Contexts[contextName]; !ok {
		return nil, fmt.Errorf("context %q not found in %s", contextName, s.KubeconfigPath)
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

// CheckRunning returns nil while the kcp process runs, else an error with its
// exit status and the tail of its log.
func (s *Server) CheckRunning() error {
	select {
	case <-s.exited:
		return fmt.Errorf("kcp at %s exited: %v\n%s", s.BaseURL, s.waitErr, s.LogTail(40))
	default:
		return nil
	}
}

// LogTail returns the last n lines of kcp's output (of at most the last 64 KiB).
func (s *Server) LogTail(n int) string {
	return s.tail.lastLines(n)
}

// Stop sends SIGTERM to kcp's process group, waits up to 20s for it to exit,
// then sends SIGKILL. It removes the root directory if Start created it. It is
// safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		err := s.terminate()
		if s.ownRootDir {
			if rmErr := os.RemoveAll(s.RootDir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("removing kcp root directory: %w", rmErr))
			}
		}
		s.stopErr = err
	})
	return s.stopErr
}

// terminate stops the process group, politely first.
func (s *Server) terminate() error {
	pgid := -s.cmd.Process.Pid
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGTERM to kcp: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGKILL to kcp: %w", err)
	}
	select {
	case <-s.exited:
		return fmt.Errorf("kcp did not stop within %s after SIGTERM and was killed", stopTimeout)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kcp (pid %d) did not exit even after SIGKILL", s.cmd.Process.Pid)
	}
}

func (s *Server) closeLog() {
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
}

func (s *Server) removeOwnRootDir() {
	if s.ownRootDir {
		_ = os.RemoveAll(s.RootDir)
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are free when
// returned, but another process may take one before kcp binds it; Start retries
// then.
// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(ctx context.Context) (int, error) {
	ports, err := freePorts(ctx, 1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

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
