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
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	// MetricsPort is the metrics listener's port on 127.0.0.1. Default (0):
	// a free port.
	MetricsPort int
	// ServingCertFile and ServingKeyFile are the virtual workspace's serving
	// certificate (--tls-cert-file, --tls-private-key-file), ServingCAFile
	// the CA that signed it (Plugin.CAFile). Default: a self-signed pair in
	// the subdirectory certificates of WorkDir, its own CA.
	ServingCertFile, ServingKeyFile, ServingCAFile string
	// ExtraArgs are appended to the `start` command line.
	ExtraArgs []string
	// Args, when set, are the whole command line after `start`, as given
	// (e.g. KCPOperatorArgs): no flag is added, so Kubeconfig,
	// RootKubeconfig, ShardsKubeconfig, ServingCertFile, ServingKeyFile and
	// ExtraArgs are ignored; SecurePort and MetricsPort must be the ports
	// Args sets on 127.0.0.1 (--secure-port, --metrics-bind-address), and
	// ServingCAFile the CA of Args' serving certificate.
	Args []string
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

// Plugin is the workspacemounts binary running `start` as a Process.
type Plugin struct {
	// Process is the process; LogPath its log.
	*Process

	// Name names the plugin in messages.
	Name string
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
}

// PluginBinary returns the default workspacemounts executable:
// $WORKSPACEMOUNTS_BINARY, else <repo root>/bin/workspacemounts (`make build`).
func PluginBinary() (string, error) {
	return binaryPath("WORKSPACEMOUNTS_BINARY", "workspacemounts")
}

// KubectlPluginBinary returns the kubectl plugin's executable (kubectl
// workspacemounts): $KUBECTL_WORKSPACEMOUNTS_BINARY, else <repo
// root>/bin/kubectl-workspacemounts (`make build`), which must be an
// executable file.
func KubectlPluginBinary() (string, error) {
	return findBinary("", "KUBECTL_WORKSPACEMOUNTS_BINARY", "kubectl-workspacemounts", "build")
}

// StartPlugin runs `<binary> start` against the shard-base context of the
// kubeconfig (or, with RootKubeconfig, against a sharded kcp) with a high
// client rate limit (QPS 1000, burst 2000), serving the virtual workspace
// and metrics on free ports of 127.0.0.1 (not the defaults 6444 and 8080,
// which another plugin may hold; SecurePort and MetricsPort if given), and
// samples its memory until it exits. It does not wait until the plugin is
// ready (WaitReady). The caller must call Stop.
func StartPlugin(ctx context.Context, opts PluginOptions) (*Plugin, error) {
	var err error
	if opts.Binary, err = findBinary(opts.Binary, "WORKSPACEMOUNTS_BINARY", "workspacemounts", "build"); err != nil {
		return nil, err
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
	vwPort, metricsPort, err := pluginPorts(ctx, opts.SecurePort, opts.MetricsPort)
	if err != nil {
		return nil, err
	}
	args, caFile := pluginArgs(opts, vwPort, metricsPort)
	started := time.Now()
	process := newProcess(opts.Name, "", opts.Binary, args, opts.WorkDir, opts.LogPath, pluginStopTimeout)
	i, err := process.start()
	if err != nil {
		return nil, err
	}
	p := &Plugin{
		Process: process, Name: opts.Name, Started: started, Memory: &MemorySampler{pid: i.cmd.Process.Pid},
		VirtualWorkspaceURL: "https://127.0.0.1:" + strconv.Itoa(vwPort),
		CAFile:              caFile,
		MetricsURL:          "http://127.0.0.1:" + strconv.Itoa(metricsPort),
	}
	go p.Memory.run(opts.MemoryInterval, i.exited)
	return p, nil
}

// pluginPorts returns the ports of the virtual workspace and of the
// metrics listener: those given, and free ones for those not (0), all
// different.
func pluginPorts(ctx context.Context, vwPort, metricsPort int) (int, int, error) {
	free, err := freePorts(ctx, 3)
	if err != nil {
		return 0, 0, err
	}
	// A free port may be one given, which nobody holds yet.
	free = slices.DeleteFunc(free, func(port int) bool { return port == vwPort || port == metricsPort })
	if vwPort == 0 {
		vwPort, free = free[0], free[1:]
	}
	if metricsPort == 0 {
		metricsPort = free[0]
	}
	return vwPort, metricsPort, nil
}

// pluginArgs returns the command line of StartPlugin, and the CA file
// that trusts the virtual workspace's serving certificate.
func pluginArgs(opts PluginOptions, vwPort, metricsPort int) (args []string, caFile string) {
	if opts.Args != nil {
		return append([]string{"start"}, opts.Args...), opts.ServingCAFile
	}
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

// ScrapeMetrics scrapes the plugin's /metrics.
func (p *Plugin) ScrapeMetrics(ctx context.Context) (Metrics, error) {
	return ScrapeMetrics(ctx, metricsClient, p.MetricsURL+"/metrics")
}

// metricsClient scrapes the plugin's plain HTTP metrics listener.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// WaitReady waits until the plugin's /readyz answers 200 (it has synced
// its caches), for at most timeout or until ctx is done; an error at once
// if the plugin exits.
func (p *Plugin) WaitReady(ctx context.Context, timeout time.Duration) error {
	i, _ := p.last()
	return p.waitReady(ctx, i, timeout, func(ctx context.Context) (bool, string) {
		return probe(ctx, metricsClient, p.MetricsURL+"/readyz")
	})
}

// StartAgain starts the plugin after StopProcess or Kill with the command
// line of the first start (the same ports, flags and log, which it adds
// to), and samples the new process's memory. Like StartPlugin, it does not
// wait until the plugin is ready (WaitReady).
func (p *Plugin) StartAgain() error {
	last, err := p.current()
	if err != nil {
		return err
	}
	select {
	case <-last.exited:
	default:
		return fmt.Errorf("%s is still running (pid %d): stop it first", p.who(), last.cmd.Process.Pid)
	}
	i, err := p.start()
	if err != nil {
		return err
	}
	p.Started = time.Now()
	p.Memory = &MemorySampler{pid: i.cmd.Process.Pid}
	go p.Memory.run(defaultMemoryInterval, i.exited)
	return nil
}
