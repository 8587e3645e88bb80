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
// temporary root directory. It can be stopped and started again on the same
// address, ports and root directory (Restart, StopProcess or Kill and
// StartAgain), and paused (Pause, Resume).
//
// The processes of a ShardedServer (each shard, the cache server, the
// front-proxy) are Servers too; there the name in messages is the process's
// (e.g. "shard-2"), and only the shards write an admin.kubeconfig.
type Server struct {
	// RootDir is kcp's --root-directory.
	RootDir string
	// KubeconfigPath is the admin.kubeconfig written by kcp. kcp rewrites it on
	// every start: the shard-base and system:admin contexts keep their token
	// (its hash is in the root directory), root and base get a new one. Empty
	// for the cache server and the front-proxy of a ShardedServer.
	KubeconfigPath string
	// BaseURL is the shard's base URL, e.g. https://127.0.0.1:41234, without a /clusters/... path.
	BaseURL string
	// LogPath is the file kcp logs to, empty if Options.LogWriter was set.
	// Every start appends to it.
	LogPath string

	// KubeconfigAfter is how long after the latest process start kcp wrote
	// admin.kubeconfig (roughly when it starts serving); after a restart, when
	// an admin.kubeconfig for the same address was already there, it is 0.
	KubeconfigAfter time.Duration
	// ReadyAfter is how long after the latest process start /readyz first succeeded.
	ReadyAfter time.Duration

	name       string // names the process in messages: "kcp", or a ShardedServer's "root", "cache-server", ...
	binary     string
	args       []string                             // the arguments, the same for every start
	newProbe   func(began time.Time) readinessProbe // makes the readiness check of each start
	logWriter  io.Writer                            // Options.LogWriter, nil for LogPath
	ownRootDir bool
	tail       *tailBuffer // the output of every start

	lock    sync.Mutex
	proc    *process // the latest process
	starts  int      // processes started
	stopped string   // why no process runs on purpose (StopProcess, Kill), "" otherwise
	closed  bool     // Stop was called

	stopOnce sync.Once
	stopErr  error
}

// readinessProbe tells, asked again and again after a process started,
// whether it serves yet, and if not, why not.
type readinessProbe func(ctx context.Context) (ready bool, state string)

// process is one kcp process of a Server.
type process struct {
	name    string // the Server's
	cmd     *exec.Cmd
	logFile *os.File    // closed when the process has exited, nil with Options.LogWriter
	tail    *tailBuffer // this process's output only

	exited  chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, set before exited is closed
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
		RootDir:   opts.RootDir,
		name:      "kcp",
		binary:    binary,
		logWriter: opts.LogWriter,
		tail:      newTailBuffer(logTailBytes),
	}
	s.newProbe = s.adminKubeconfigProbe
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

	s.args = []string{
		"start",
		"--root-directory=" + s.RootDir,
		"--kubeconfig-path=" + s.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
	}
	if opts.FeatureGates != "" {
		s.args = append(s.args, "--feature-gates="+opts.FeatureGates)
	}
	if opts.BatteriesIncluded != "" {
		s.args = append(s.args, "--batteries-included="+opts.BatteriesIncluded)
	}
	s.args = append(s.args, opts.ExtraArgs...)
	if s.logWriter == nil {
		s.LogPath = filepath.Join(s.RootDir, "kcp.log")
	}

	if err := s.launch(ctx); err != nil {
		if errors.Is(err, errPortInUse) {
			s.removeOwnRootDir()
			return nil, err
		}
		return nil, fmt.Errorf("%w\n(kcp root directory kept for inspection: %s)", err, s.RootDir)
	}
	return s, nil
}

// launch starts a process with s.args and waits until it is ready. If it
// does not become ready, the process is stopped, and the error wraps
// errPortInUse if a port was taken.
func (s *Server) launch(ctx context.Context) error {
	s.lock.Lock()
	s.starts++
	first := s.starts == 1
	s.lock.Unlock()

	p := &process{name: s.name, tail: newTailBuffer(logTailBytes), exited: make(chan struct{})}
	logWriter := s.logWriter
	if logWriter == nil {
		// The first start begins the log, later ones add to it.
		flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if first {
			flags |= os.O_TRUNC
		}
		var err error
		if p.logFile, err = os.OpenFile(s.LogPath, flags, 0o644); err != nil {
			return fmt.Errorf("opening the log file of %s: %w", s.name, err)
		}
		logWriter = p.logFile
	}
	out := io.MultiWriter(logWriter, s.tail, p.tail)
	if !first {
		_, _ = fmt.Fprintf(out, "=== test framework: %s started again (start %d) at %s ===\n", s.name, s.starts, time.Now().Format(time.RFC3339))
	}

	// Not ctx: exec.CommandContext would SIGKILL the process when ctx is done,
	// but it must outlive ctx, and Stop gives it the chance to shut down cleanly.
	p.cmd = exec.CommandContext(context.Background(), s.binary, s.args...) //nolint:gosec // G204: the binary and its flags are the caller's (Options).
	p.cmd.Dir = s.RootDir
	p.cmd.Stdout = out
	p.cmd.Stderr = out
	p.cmd.SysProcAttr = ChildProcessAttributes()

	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		p.closeLog()
		return fmt.Errorf("starting %s: %w", s.binary, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.closeLog()
		close(p.exited)
	}()
	s.lock.Lock()
	s.proc, s.stopped = p, ""
	s.lock.Unlock()

	if err := s.waitForReady(ctx, p, began); err != nil {
		_ = p.terminate()
		s.lock.Lock()
		s.stopped = "it did not become ready"
		s.lock.Unlock()
		return err
	}
	return nil
}

// waitForReady asks a new readiness probe every 100ms until process p is
// ready, has exited, or readyTimeout or ctx is over.
func (s *Server) waitForReady(ctx context.Context, p *process, began time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()

	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()

	ready := s.newProbe(began)
	lastState := "not asked yet"
	for {
		select {
		case <-p.exited:
			err := fmt.Errorf("%s exited before it became ready (%s): %v\n%s", s.name, lastState, p.waitErr, p.tail.lastLines(40))
			if strings.Contains(p.tail.String(), "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s at %s to become ready (%s): %w\n%s", s.name, s.BaseURL, lastState, context.Cause(ctx), p.tail.lastLines(40))
		case <-ticker.C:
		}

		ok, state := ready(ctx)
		if ok {
			s.ReadyAfter = time.Since(began)
			return nil
		}
		lastState = state
	}
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

// CheckRunning returns nil while the kcp process runs (paused or not), else
// an error with its exit status and the tail of its log; after StopProcess or
// Kill, an error saying so, until StartAgain.
func (s *Server) CheckRunning() error {
	s.lock.Lock()
	p, stopped := s.proc, s.stopped
	s.lock.Unlock()
	select {
	case <-p.exited:
		if stopped != "" {
			return fmt.Errorf("%s at %s is not running: %s", s.name, s.BaseURL, stopped)
		}
		return fmt.Errorf("%s at %s exited: %v\n%s", s.name, s.BaseURL, p.waitErr, s.LogTail(40))
	default:
		return nil
	}
}

// LogTail returns the last n lines of kcp's output (of at most the last 64
// KiB), across restarts: a line "=== test framework: <name> started again ..."
// marks each start after the first.
func (s *Server) LogTail(n int) string {
	return s.tail.lastLines(n)
}

// Pid is the process id of the latest kcp process (also the id of its
// process group).
func (s *Server) Pid() int {
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.proc.cmd.Process.Pid
}

// StopProcess stops kcp as Stop does (SIGTERM to its process group, SIGKILL
// after 20s), but keeps the root directory, so that StartAgain can start it
// again with the same state. It returns an error if kcp had to be killed or
// had exited by itself before.
func (s *Server) StopProcess() error {
	p, err := s.current()
	if err != nil {
		return err
	}
	if err := s.exitedByItself(p); err != nil {
		return err
	}
	err = p.terminate()
	s.setStopped("stopped by StopProcess")
	return err
}

// Kill kills kcp's process group with SIGKILL, as a crash would, keeps the
// root directory, and waits until the process has exited.
func (s *Server) Kill() error {
	p, err := s.current()
	if err != nil {
		return err
	}
	if err := s.exitedByItself(p); err != nil {
		return err
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit within 10s of SIGKILL", s.name, p.cmd.Process.Pid)
	}
	s.setStopped("killed by Kill")
	return nil
}

// StartAgain starts kcp after StopProcess or Kill with the command line of
// the first start: the same address, ports, root directory and flags, and
// waits until it is ready (at most 3 minutes, or until ctx is done). A port
// taken meanwhile by another process is tried again for a few seconds; it
// cannot be changed. If kcp does not become ready, it is stopped again, and
// StartAgain may be called again.
func (s *Server) StartAgain(ctx context.Context) error {
	p, err := s.current()
	if err != nil {
		return err
	}
	select {
	case <-p.exited:
	default:
		return fmt.Errorf("%s at %s is still running (pid %d): stop it first", s.name, s.BaseURL, p.cmd.Process.Pid)
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

// Pause stops kcp's process group with SIGSTOP: its listeners still accept
// connections (the kernel does), but nothing answers until Resume.
func (s *Server) Pause() error {
	p, err := s.current()
	if err != nil {
		return err
	}
	return p.signal(syscall.SIGSTOP)
}

// Resume continues kcp's process group after Pause with SIGCONT.
func (s *Server) Resume() error {
	p, err := s.current()
	if err != nil {
		return err
	}
	return p.signal(syscall.SIGCONT)
}

// Stop sends SIGTERM to kcp's process group (and SIGCONT, in case it is
// paused), waits up to 20s for it to exit, then sends SIGKILL. It removes the
// root directory if Start created it. It is safe to call more than once, and
// after StopProcess or Kill; the server cannot be started again afterwards.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.lock.Lock()
		s.closed = true
		p := s.proc
		s.lock.Unlock()
		err := p.terminate()
		s.setStopped("stopped by Stop")
		if s.ownRootDir {
			if rmErr := os.RemoveAll(s.RootDir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("removing kcp root directory: %w", rmErr))
			}
		}
		s.stopErr = err
	})
	return s.stopErr
}

// started tells whether a process of s was started.
func (s *Server) started() bool {
	s.lock.Lock()
	defer s.lock.Unlock()
	return s.proc != nil
}

// current returns the latest process, or an error once Stop was called.
func (s *Server) current() (*process, error) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%s at %s was stopped for good (Stop)", s.name, s.BaseURL)
	}
	return s.proc, nil
}

// exitedByItself returns an error if p has exited while it was not stopped
// on purpose.
func (s *Server) exitedByItself(p *process) error {
	select {
	case <-p.exited:
	default:
		return nil
	}
	s.lock.Lock()
	stopped := s.stopped
	s.lock.Unlock()
	if stopped != "" {
		return nil
	}
	return fmt.Errorf("%s at %s had exited by itself: %v\n%s", s.name, s.BaseURL, p.waitErr, s.LogTail(40))
}

func (s *Server) setStopped(why string) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if s.stopped == "" {
		s.stopped = why
	}
}

// signal sends sig to the process group of p, unless p has exited.
func (p *process) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s (pid %d) has exited: %v", p.name, p.cmd.Process.Pid, p.waitErr)
	default:
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %s to %s: %w", sig, p.name, err)
	}
	return nil
}

// terminate stops the process group, politely first. SIGCONT follows
// SIGTERM, so that a paused kcp gets it too.
func (p *process) terminate() error {
	pgid := -p.cmd.Process.Pid
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGTERM to %s: %w", p.name, err)
	}
	_ = syscall.Kill(pgid, syscall.SIGCONT)
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGKILL to %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		return fmt.Errorf("%s did not stop within %s after SIGTERM and was killed", p.name, stopTimeout)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit even after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

func (p *process) closeLog() {
	if p.logFile != nil {
		_ = p.logFile.Close()
	}
}

func (s *Server) removeOwnRootDir() {
	if s.ownRootDir {
		_ = os.RemoveAll(s.RootDir)
	}
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
