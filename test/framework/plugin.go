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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// pluginStopTimeout bounds how long Plugin.Stop waits after SIGTERM before SIGKILL.
	pluginStopTimeout = 15 * time.Second
	// defaultMemoryInterval is how often a plugin's memory is sampled by default.
	defaultMemoryInterval = time.Second
)

// PluginServingFlags are the `start` flags StartPlugin sets itself; extra
// arguments must not override them.
var PluginServingFlags = []string{"--bind-address", "--secure-port", "--cert-dir", "--metrics-bind-address"}

// PluginOptions says how StartPlugin runs the workspacemounts binary.
type PluginOptions struct {
	// Binary is the workspacemounts executable. Default: PluginBinary().
	Binary string
	// Kubeconfig is kcp's admin.kubeconfig; the plugin uses its shard-base context.
	Kubeconfig string
	// ExtraArgs are appended to the `start` command line.
	ExtraArgs []string
	// LogPath is the file the plugin's stdout and stderr go to. Default: workspacemounts.log in WorkDir.
	LogPath string
	// WorkDir is the working directory, where relative paths of the plugin end
	// up; the virtual workspace's serving certificate is written to its
	// subdirectory certificates. It must exist.
	WorkDir string
	// MemoryInterval is how often the plugin's memory is sampled. Default: 1s.
	MemoryInterval time.Duration
}

// Plugin is the workspacemounts binary running `start` as a child process in
// a process group of its own, so that a Ctrl-C reaches it only through Stop.
type Plugin struct {
	cmd     *exec.Cmd
	logFile *os.File

	// LogPath is the file the plugin logs to.
	LogPath string
	// Memory samples the plugin's memory every PluginOptions.MemoryInterval
	// until it exits, and keeps the last sample.
	Memory *MemorySampler
	// VirtualWorkspaceURL is the virtual workspace's listener, https://127.0.0.1:<port>.
	VirtualWorkspaceURL string
	// CAFile is the virtual workspace's self-signed serving certificate, its own CA.
	CAFile string
	// MetricsURL is the metrics listener, http://127.0.0.1:<port>.
	MetricsURL string

	exited  chan struct{} // closed when the process has exited
	waitErr error         // the result of cmd.Wait, set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

// PluginBinary returns the default workspacemounts executable:
// $WORKSPACEMOUNTS_BINARY, else <repo root>/bin/workspacemounts (`make build`).
func PluginBinary() (string, error) {
	if binary := os.Getenv("WORKSPACEMOUNTS_BINARY"); binary != "" {
		return binary, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("finding the workspacemounts binary (set WORKSPACEMOUNTS_BINARY to skip this): %w", err)
	}
	return filepath.Join(root, "bin", "workspacemounts"), nil
}

// StartPlugin runs `<binary> start` against the shard-base context of the
// kubeconfig with a high client rate limit (QPS 1000, burst 2000), serving the
// virtual workspace and metrics on free ports of 127.0.0.1 (not the defaults
// 6444 and 8080, which another plugin may hold), and samples its memory until
// it exits. It does not wait until the plugin is ready. The caller must call Stop.
func StartPlugin(ctx context.Context, opts PluginOptions) (*Plugin, error) {
	if opts.Binary == "" {
		binary, err := PluginBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = binary
	}
	if _, err := os.Stat(opts.Binary); err != nil {
		return nil, fmt.Errorf("plugin binary: %w (build it with `make build`)", err)
	}
	if opts.LogPath == "" {
		opts.LogPath = filepath.Join(opts.WorkDir, "workspacemounts.log")
	}
	if opts.MemoryInterval <= 0 {
		opts.MemoryInterval = defaultMemoryInterval
	}
	ports, err := freePorts(ctx, 2)
	if err != nil {
		return nil, err
	}
	vwPort, metricsPort := ports[0], ports[1]
	certDir := filepath.Join(opts.WorkDir, "certificates")
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("creating the plugin's log file: %w", err)
	}
	metricsAddress := "127.0.0.1:" + strconv.Itoa(metricsPort)
	args := append([]string{"start",
		"--kubeconfig", opts.Kubeconfig, "--context", "shard-base",
		"--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(vwPort), "--cert-dir", certDir,
		"--metrics-bind-address", metricsAddress,
	}, opts.ExtraArgs...)
	// Not tied to a context: the plugin must outlive a cancelled context until
	// Stop has asked it politely to shut down.
	cmd := exec.CommandContext(context.Background(), opts.Binary, args...) //nolint:gosec // G204: the binary and its extra arguments are the caller's choice.
	cmd.Dir = opts.WorkDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = ChildProcessAttributes()
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", opts.Binary, err), logFile.Close())
	}
	p := &Plugin{
		cmd: cmd, LogPath: opts.LogPath, logFile: logFile, Memory: &MemorySampler{pid: cmd.Process.Pid},
		VirtualWorkspaceURL: "https://127.0.0.1:" + strconv.Itoa(vwPort),
		CAFile:              filepath.Join(certDir, "workspacemounts.crt"),
		MetricsURL:          "http://" + metricsAddress,
		exited:              make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.Memory.run(opts.MemoryInterval, p.exited)
	return p, nil
}

// PluginVersion returns what `<binary> version` prints, or "unknown".
func PluginVersion(ctx context.Context, binary string) string {
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// Pid is the plugin's process id.
func (p *Plugin) Pid() int {
	return p.cmd.Process.Pid
}

// CheckRunning returns nil while the plugin runs, else an error with its exit status.
func (p *Plugin) CheckRunning() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the plugin exited: %v (log: %s)", p.waitErr, p.LogPath)
	default:
		return nil
	}
}

// Stop sends SIGTERM to the plugin's process group, and SIGKILL if it has not
// exited after 15s. It is safe to call more than once.
func (p *Plugin) Stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.terminate()
		if err := p.logFile.Close(); err != nil {
			p.stopErr = errors.Join(p.stopErr, err)
		}
	})
	return p.stopErr
}

func (p *Plugin) terminate() error {
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

// PrintLogTail writes the last n lines of the plugin's log (of at most its
// last 64 KiB) to w.
func (p *Plugin) PrintLogTail(w io.Writer, n int) {
	const maxTail = 64 << 10
	f, err := os.Open(p.LogPath)
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
	fmt.Fprintf(w, "last lines of the plugin's log (%s):\n%s\n", p.LogPath, strings.Join(lines, "\n"))
}
