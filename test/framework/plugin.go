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
	"fmt"
	"io"
	"net/http"
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
	// Kubeconfig is kcp's admin.kubeconfig; the plugin uses its shard-base
	// context. Unused when RootKubeconfig is set.
	Kubeconfig string
	// RootKubeconfig and ShardsKubeconfig, both set, run the plugin on a
	// sharded kcp instead (--root-kubeconfig, --shards-kubeconfig, their
	// current contexts): ShardedServer.RootKubeconfigPath and
	// ShardsKubeconfigPath. ShardedServer.PluginOptions fills them.
	RootKubeconfig, ShardsKubeconfig string
	// SecurePort is the virtual workspace's port on 127.0.0.1. Default (0):
	// a free port. A front-proxy mapping to the plugin needs it before the
	// front-proxy starts (ShardedServer.PluginOptions).
	SecurePort int
	// ServingCertFile and ServingKeyFile are the virtual workspace's serving
	// certificate (--tls-cert-file, --tls-private-key-file), ServingCAFile
	// the CA that signed it (Plugin.CAFile). Default: a self-signed pair in
	// the subdirectory certificates of WorkDir, its own CA.
	ServingCertFile, ServingKeyFile, ServingCAFile string
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
	// Name names the plugin in messages, e.g. "replica-a". Default: "the plugin".
	Name string
}

// Plugin is the workspacemounts binary running `start` as a child process in
// a process group of its own, so that a Ctrl-C reaches it only through Stop.
type Plugin struct {
	*child

	// Name names the plugin in messages.
	Name string
	// LogPath is the file the plugin logs to.
	LogPath string
	// Started is when the process was started, from which a test times its start-up.
	Started time.Time
	// Memory samples the plugin's memory every PluginOptions.MemoryInterval
	// until it exits, and keeps the last sample.
	Memory *MemorySampler
	// VirtualWorkspaceURL is the virtual workspace's listener, https://127.0.0.1:<port>.
	VirtualWorkspaceURL string
	// CAFile is the virtual workspace's self-signed serving certificate, its own CA.
	CAFile string
	// MetricsURL is the metrics listener, http://127.0.0.1:<port>.
	MetricsURL string

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
// kubeconfig (or, with RootKubeconfig, against a sharded kcp) with a high
// client rate limit (QPS 1000, burst 2000), serving the virtual workspace
// and metrics on free ports of 127.0.0.1 (not the defaults 6444 and 8080,
// which another plugin may hold; the virtual workspace on SecurePort if
// given), and samples its memory until it exits. It does not wait until the
// plugin is ready. The caller must call Stop.
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
	if opts.Name == "" {
		opts.Name = "the plugin"
	}
	ports, err := freePorts(ctx, 2)
	if err != nil {
		return nil, err
	}
	vwPort, metricsPort := ports[0], ports[1]
	if opts.SecurePort > 0 {
		// The given port is not held by anyone yet: the free ones may be it.
		vwPort = opts.SecurePort
		if metricsPort == vwPort {
			metricsPort = ports[0]
		}
	}
	args, caFile := pluginArgs(opts, vwPort, metricsPort)
	started := time.Now()
	c, err := startChild(opts.Name, opts.Binary, args, opts.WorkDir, opts.LogPath)
	if err != nil {
		return nil, err
	}
	p := &Plugin{
		child: c, Name: opts.Name, LogPath: opts.LogPath, Started: started, Memory: &MemorySampler{pid: c.cmd.Process.Pid},
		VirtualWorkspaceURL: "https://127.0.0.1:" + strconv.Itoa(vwPort),
		CAFile:              caFile,
		MetricsURL:          "http://127.0.0.1:" + strconv.Itoa(metricsPort),
	}
	go p.Memory.run(opts.MemoryInterval, p.exited)
	return p, nil
}

// pluginArgs returns the command line of StartPlugin, and the CA file
// that trusts the virtual workspace's serving certificate.
func pluginArgs(opts PluginOptions, vwPort, metricsPort int) (args []string, caFile string) {
	certDir := filepath.Join(opts.WorkDir, "certificates")
	args = []string{"start"}
	if opts.RootKubeconfig != "" {
		args = append(args, "--root-kubeconfig", opts.RootKubeconfig, "--shards-kubeconfig", opts.ShardsKubeconfig)
	} else {
		args = append(args, "--kubeconfig", opts.Kubeconfig, "--context", "shard-base")
	}
	args = append(args,
		"--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(vwPort), "--cert-dir", certDir,
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metricsPort),
	)
	caFile = filepath.Join(certDir, "workspacemounts.crt")
	if opts.ServingCertFile != "" {
		args = append(args, "--tls-cert-file", opts.ServingCertFile, "--tls-private-key-file", opts.ServingKeyFile)
		caFile = opts.ServingCAFile
	}
	return append(args, opts.ExtraArgs...), caFile
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

// Exited is closed once the process has exited.
func (p *Plugin) Exited() <-chan struct{} {
	return p.exited
}

// ExitErr is what waiting for the process returned once it has exited
// (nil for exit code 0), and nil while it runs.
func (p *Plugin) ExitErr() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
		return nil
	}
}

// ExitCode is the process's exit code once it has exited, -1 while it runs
// or when a signal ended it.
func (p *Plugin) ExitCode() int {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Signal sends sig to the plugin's process group, e.g. SIGKILL to test a
// crash or SIGTERM to test a graceful stop without waiting for it as Stop
// does. A process group that is gone already is no error.
func (p *Plugin) Signal(sig syscall.Signal) error {
	return p.signal(sig)
}

// ScrapeMetrics scrapes the plugin's /metrics.
func (p *Plugin) ScrapeMetrics(ctx context.Context) (Metrics, error) {
	return ScrapeMetrics(ctx, metricsClient, p.MetricsURL+"/metrics")
}

// metricsClient scrapes the plugin's plain HTTP metrics listener.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// CheckRunning returns nil while the plugin runs, else an error with its exit status.
func (p *Plugin) CheckRunning() error {
	return p.checkRunning(p.LogPath)
}

// Stop sends SIGTERM to the plugin's process group, and SIGKILL if it has not
// exited after 15s. It is safe to call more than once.
func (p *Plugin) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(pluginStopTimeout) })
	return p.stopErr
}

// LogTail returns the last n lines of the plugin's log (of at most its last
// 64 KiB).
func (p *Plugin) LogTail(n int) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	defer f.Close()
	tail := newTailBuffer(logTailBytes)
	if _, err := io.Copy(tail, f); err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	return tail.lastLines(n)
}

// PrintLogTail writes the last n lines of the plugin's log to w.
func (p *Plugin) PrintLogTail(w io.Writer, n int) {
	fmt.Fprintf(w, "last lines of %s's log (%s):\n%s\n", p.Name, p.LogPath, p.LogTail(n))
}
