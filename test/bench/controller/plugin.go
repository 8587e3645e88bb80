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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// pluginStopTimeout bounds how long stop waits after SIGTERM before SIGKILL.
	pluginStopTimeout = 15 * time.Second
	// memoryInterval is how often the plugin's memory is sampled.
	memoryInterval = time.Second
)

// servingFlags are the `start` flags the benchmark sets itself: --plugin-args
// must not override them.
var servingFlags = []string{"--bind-address", "--secure-port", "--cert-dir", "--metrics-bind-address"}

// pluginProcess is the workspacemounts binary running as a child process in a
// process group of its own, so that a Ctrl-C reaches it only through stop.
type pluginProcess struct {
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	memory  *memorySampler

	// virtualWorkspaceURL is the virtual workspace's listener, https://127.0.0.1:<port>.
	virtualWorkspaceURL string
	// caFile is the virtual workspace's self-signed serving certificate, its own CA.
	caFile string
	// metricsURL is the metrics listener, http://127.0.0.1:<port>.
	metricsURL string

	exited  chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// pluginConfig says how to run the plugin.
type pluginConfig struct {
	binary string
	// extraArgs are appended to the `start` command line.
	extraArgs  []string
	kubeconfig string
	logPath    string
	// workDir is the working directory, where relative paths of the plugin end
	// up; the virtual workspace's serving certificate is written to its
	// subdirectory certificates.
	workDir string
}

// startPlugin runs `<binary> start` against the shard-base context of the
// kubeconfig with a high client rate limit, serving the virtual workspace and
// metrics on free ports of 127.0.0.1 (not the defaults 6444 and 8080, which
// another plugin may hold), and samples its memory until it exits.
func startPlugin(ctx context.Context, cfg pluginConfig) (*pluginProcess, error) {
	if _, err := os.Stat(cfg.binary); err != nil {
		return nil, fmt.Errorf("plugin binary: %w (build it with `make build`, or set --plugin)", err)
	}
	vwPort, err := framework.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	metricsPort, err := framework.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(cfg.workDir, "certificates")
	logFile, err := os.Create(cfg.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the plugin's log file: %w", err)
	}
	metricsAddress := "127.0.0.1:" + strconv.Itoa(metricsPort)
	args := append([]string{"start",
		"--kubeconfig", cfg.kubeconfig, "--context", "shard-base",
		"--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(vwPort), "--cert-dir", certDir,
		"--metrics-bind-address", metricsAddress,
	}, cfg.extraArgs...)
	// Not tied to a context: the plugin must outlive a cancelled context until
	// stop has asked it politely to shut down.
	cmd := exec.CommandContext(context.Background(), cfg.binary, args...) //nolint:gosec // G204: the binary and its extra arguments are the caller's choice.
	cmd.Dir = cfg.workDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = framework.ChildProcessAttributes()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", cfg.binary, err), logFile.Close())
	}
	p := &pluginProcess{
		cmd: cmd, logPath: cfg.logPath, logFile: logFile, memory: &memorySampler{pid: cmd.Process.Pid},
		virtualWorkspaceURL: "https://127.0.0.1:" + strconv.Itoa(vwPort),
		caFile:              filepath.Join(certDir, "workspacemounts.crt"),
		metricsURL:          "http://" + metricsAddress,
		exited:              make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.memory.run(memoryInterval, p.exited)
	return p, nil
}

// pluginVersion returns what `<binary> version` prints, or "unknown".
func pluginVersion(ctx context.Context, binary string) string {
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func (p *pluginProcess) pid() int {
	return p.cmd.Process.Pid
}

// checkRunning returns nil while the plugin runs, else an error with its exit status.
func (p *pluginProcess) checkRunning() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the plugin exited: %v (log: %s)", p.waitErr, p.logPath)
	default:
		return nil
	}
}

// stop sends SIGTERM to the plugin's process group, and SIGKILL if it has not
// exited after pluginStopTimeout. It is safe to call more than once.
func (p *pluginProcess) stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.terminate()
		if err := p.logFile.Close(); err != nil {
			p.stopErr = errors.Join(p.stopErr, err)
		}
	})
	return p.stopErr
}

func (p *pluginProcess) terminate() error {
	pgid := -p.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGTERM to the plugin: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(pluginStopTimeout):
	}
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGKILL to the plugin: %w", err)
	}
	<-p.exited
	return fmt.Errorf("the plugin did not stop within %s after SIGTERM and was killed", pluginStopTimeout)
}

// printLogTail writes the last n lines of the plugin's log (of at most its
// last 64 KiB) to w.
func (p *pluginProcess) printLogTail(w io.Writer, n int) {
	const maxTail = 64 << 10
	f, err := os.Open(p.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > maxTail {
		_, _ = f.Seek(info.Size()-maxTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	fmt.Fprintf(w, "last lines of the plugin's log (%s):\n%s\n", p.logPath, strings.Join(lines, "\n"))
}
