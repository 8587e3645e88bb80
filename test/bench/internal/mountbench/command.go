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

// Package mountbench is what the mount benchmarks share: starting kcp and the
// plugin, one real kcp per run, setting up N mount objects and the Workspaces
// that mount them spread over workspaces under root, and tracking what the
// Workspaces show. Each benchmark is a command of its own (Main):
// test/bench/controller times the controllers' flips (and with
// --mode=routing what kcp routes by), test/bench/virtual the plugin's virtual
// workspace (lists at * and watchers). See their README.md.
package mountbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// Benchmark is what a command measures, and names its flag set.
type Benchmark string

const (
	// Controller times how long the controllers take until every mounted
	// Workspace shows a flip of its mount object (bench.go), or with
	// --mode=routing what kcp routes by (routing.go).
	Controller Benchmark = "controller"
	// Virtual times the plugin's virtual workspace with N mounted
	// Workspaces: lists across all clusters and watchers (virtual.go).
	Virtual Benchmark = "virtual"
	// Sharded runs the plugin in sharded mode against a sharded kcp with N
	// mounted Workspaces on each shard: memory, lists across all clusters
	// through the front-proxy, and flip convergence on every shard (sharded.go).
	Sharded Benchmark = "sharded"
)

// The modes of the controller benchmark.
const (
	// modeAnnotations measures the plugin's annotations against what kcp's
	// in-tree controller writes, both on one kcp.
	modeAnnotations = "annotations"
	// modeRouting measures what kcp routes by (spec.URL, the phase), written
	// by the in-tree controller on one kcp and by the plugin on another (routing.go).
	modeRouting = "routing"
)

// options are the command line flags.
type options struct {
	benchmark   Benchmark
	mode        string
	workspaces  int
	clusters    int
	concurrency int
	timeout     time.Duration
	plugin      string
	pluginArgs  []string
	kcpLog      string
	pluginLog   string

	// inTree runs kcp's in-tree mounts controller and measures it too
	// (the controller benchmark only).
	inTree bool
	// listIterations is how often each list is timed, after listWarmUps.
	listIterations int
	// watchers is the number of concurrent watches the virtual workspace benchmark opens.
	watchers int
	// settle is how long the routing mode goes on counting writes after a step converged.
	settle time.Duration
	// flip flips the mount objects after the set-up (the annotations mode); false measures the set-up alone.
	flip bool
	// shards is the number of shards of the sharded benchmark, the root
	// shard included; workspaces and clusters are then per shard.
	shards int
	// dir, if set, is where the sharded benchmark keeps everything (kept).
	dir string
}

// routingOnly are the flags of the routing mode only.
var routingOnly = []string{"settle"}

// Main runs benchmark with the command line's flags and returns the exit
// code, so that deferred clean-up runs before the process exits.
func Main(benchmark Benchmark) int {
	opts, err := parseFlags(benchmark, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// parseFlags parses and validates the command line of benchmark.
func parseFlags(benchmark Benchmark, args []string) (options, error) {
	opts := options{benchmark: benchmark, mode: modeAnnotations, listIterations: 50, watchers: 100, settle: 10 * time.Second, shards: 1, flip: true}
	fs := flag.NewFlagSet(string(benchmark), flag.ContinueOnError)
	if benchmark == Sharded {
		fs.IntVar(&opts.workspaces, "workspaces", 5000, "Number of mounted Workspaces (and of mount objects) on each shard.")
		fs.IntVar(&opts.clusters, "clusters", 0, "Number of workspaces under root on each shard that hold its mount objects and mounted Workspaces. Default: workspaces/100, at least 1, at most 100.")
	} else {
		fs.IntVar(&opts.workspaces, "workspaces", 1000, "Number of mounted Workspaces (and of mount objects).")
		fs.IntVar(&opts.clusters, "clusters", 0, "Number of workspaces under root that hold the mount objects and mounted Workspaces. Default: workspaces/100, at least 1, at most 100.")
	}
	fs.IntVar(&opts.concurrency, "concurrency", 32, "Number of concurrent requests while setting up and flipping.")
	fs.DurationVar(&opts.timeout, "timeout", 10*time.Minute, "How long to wait for each convergence (initial state, then flip) before reporting what is missing.")
	fs.StringVar(&opts.plugin, "plugin", "", "The workspacemounts binary. Default: $WORKSPACEMOUNTS_BINARY, else <repo root>/bin/workspacemounts (make build).")
	fs.Func("plugin-args", "Extra arguments for `workspacemounts start`, separated by spaces, e.g. \"--workspace-workers=20\".", func(value string) error {
		opts.pluginArgs = append(opts.pluginArgs, strings.Fields(value)...)
		return nil
	})
	if benchmark != Sharded {
		fs.StringVar(&opts.kcpLog, "kcp-log", "", "Write kcp's log to this file and keep it. Default: a file in the temporary directory, removed at the end.")
	}
	fs.StringVar(&opts.pluginLog, "plugin-log", "", "Write the plugin's log to this file and keep it. Default: a file in the temporary directory, removed at the end.")
	switch benchmark {
	case Controller:
		fs.StringVar(&opts.mode, "mode", modeAnnotations, "What to measure: "+modeAnnotations+" (the plugin's annotations and kcp's in-tree controller on one kcp) or "+
			modeRouting+" (spec.URL and kcp's phase of the Workspaces: kcp's in-tree controller on one kcp, then the plugin with --workspace-condition --workspace-url on another).")
		fs.BoolVar(&opts.inTree, "in-tree", true, "Start kcp with --feature-gates=WorkspaceMounts=true and measure its in-tree mounts controller too. "+
			"false leaves it off: the plugin alone writes the Workspaces, and nothing waits for the slow in-tree controller. With --mode=routing: false measures the plugin only.")
		fs.DurationVar(&opts.settle, "settle", opts.settle, "With --mode=routing: how long to go on counting Workspace writes after every Workspace showed a step, before the next.")
		fs.BoolVar(&opts.flip, "flip", opts.flip, "With --mode=annotations: flip the mount objects after the set-up; false stops once the plugin showed every new Workspace (the set-up's rate).")
	case Virtual:
		fs.IntVar(&opts.listIterations, "list-iterations", opts.listIterations, "How often each list across all clusters is timed, after 3 warm-ups.")
		fs.IntVar(&opts.watchers, "watchers", opts.watchers, "Number of concurrent watches of the virtual workspace across all clusters.")
	case Sharded:
		opts.shards, opts.listIterations = 2, 20
		fs.IntVar(&opts.shards, "shards", opts.shards, "Number of shards, the root shard included (root, shard-2, shard-3, ...).")
		fs.IntVar(&opts.listIterations, "list-iterations", opts.listIterations, "How often each list across all clusters through the front-proxy is timed, after 3 warm-ups.")
		fs.StringVar(&opts.dir, "dir", "", "Keep everything (the sharded kcp's PKI, kubeconfigs, state and logs, the plugin's log) in this directory. Default: a temporary directory, removed at the end.")
	default:
		return options{}, fmt.Errorf("no benchmark %q", benchmark)
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if opts.workspaces < 1 || opts.concurrency < 1 || opts.clusters < 0 || opts.timeout <= 0 || opts.listIterations < 1 || opts.watchers < 1 || opts.settle <= 0 || opts.shards < 1 {
		return options{}, errors.New("--workspaces, --concurrency, --timeout, --list-iterations, --watchers, --settle and --shards must be positive, --clusters must not be negative")
	}
	switch opts.mode {
	case modeAnnotations:
		var misplaced error
		fs.Visit(func(f *flag.Flag) {
			if slices.Contains(routingOnly, f.Name) {
				misplaced = errors.Join(misplaced, fmt.Errorf("--%s has no effect with --mode=%s", f.Name, opts.mode))
			}
		})
		if misplaced != nil {
			return options{}, misplaced
		}
	case modeRouting:
		if !opts.flip {
			return options{}, fmt.Errorf("--flip has no effect with --mode=%s", opts.mode)
		}
	default:
		return options{}, fmt.Errorf("--mode must be %s or %s, not %q", modeAnnotations, modeRouting, opts.mode)
	}
	for _, arg := range opts.pluginArgs {
		for _, flag := range framework.PluginServingFlags {
			if arg == flag || strings.HasPrefix(arg, flag+"=") {
				return options{}, fmt.Errorf("--plugin-args must not set %s: the benchmark picks free ports and a temporary --cert-dir", flag)
			}
		}
	}
	if opts.benchmark == Sharded {
		for _, arg := range opts.pluginArgs {
			for _, flag := range shardedPluginFlags {
				if arg == flag || strings.HasPrefix(arg, flag+"=") {
					return options{}, fmt.Errorf("--plugin-args must not set %s: the sharded benchmark sets the plugin's kubeconfigs and serving behind the front-proxy", flag)
				}
			}
		}
	}
	if opts.clusters == 0 {
		opts.clusters = min(max(opts.workspaces/100, 1), 100)
	}
	if opts.mode == modeRouting {
		for _, arg := range opts.pluginArgs {
			for _, flag := range routingPluginArgs {
				if arg == flag || strings.HasPrefix(arg, flag+"=") {
					return options{}, fmt.Errorf("--plugin-args must not set %s: --mode=routing sets it", flag)
				}
			}
		}
	}
	if opts.plugin == "" {
		plugin, err := framework.PluginBinary()
		if err != nil {
			return options{}, fmt.Errorf("%w, or --plugin", err)
		}
		opts.plugin = plugin
	}
	return opts, nil
}

// run starts kcp and the plugin, runs the benchmark and prints the results
// to out. It stops both processes and removes its temporary directory before
// it returns, also when ctx is cancelled.
func run(ctx context.Context, opts options, out io.Writer) error {
	switch {
	case opts.mode == modeRouting:
		return runRouting(ctx, opts, out)
	case opts.benchmark == Sharded:
		return runSharded(ctx, opts, out)
	}
	dir, err := os.MkdirTemp("", "workspacemounts-bench-")
	if err != nil {
		return err
	}
	defer warnOnError(func() error { return os.RemoveAll(dir) })

	loadBefore := loadAverage()
	logf("starting kcp (root directory %s)", filepath.Join(dir, "kcp"))
	kcp, err := startKCP(ctx, opts.kcpLog, filepath.Join(dir, "kcp"), opts.inTree)
	if err != nil {
		return err
	}
	defer warnOnError(kcp.stop)
	logf("kcp at %s ready after %s", kcp.BaseURL, kcp.ReadyAfter.Round(time.Millisecond))

	pluginLog := opts.pluginLog
	if pluginLog == "" {
		pluginLog = filepath.Join(dir, "workspacemounts.log")
	}
	version := framework.PluginVersion(ctx, opts.plugin)
	plugin, err := framework.StartPlugin(ctx, framework.PluginOptions{Binary: opts.plugin, ExtraArgs: opts.pluginArgs, Kubeconfig: kcp.KubeconfigPath, LogPath: pluginLog, WorkDir: dir})
	if err != nil {
		return err
	}
	defer warnOnError(plugin.Stop)
	logf("plugin %s (version %s) started (pid %d), logging to %s, virtual workspace at %s, metrics at %s",
		opts.plugin, version, plugin.Pid(), pluginLog, plugin.VirtualWorkspaceURL, plugin.MetricsURL)

	b, err := newBench(kcp, plugin, opts)
	if err != nil {
		return err
	}
	run := b.runFlips
	if opts.benchmark == Virtual {
		run = b.runVirtual
	}
	res, err := run(ctx)
	if res != nil {
		res.pluginVersion, res.pluginArgs = version, opts.pluginArgs
		res.loadBefore, res.loadAfter = loadBefore, loadAverage()
		res.print(out)
	}
	if err != nil && ctx.Err() == nil {
		plugin.PrintLogTail(os.Stderr, 20)
		fmt.Fprintf(os.Stderr, "last lines of kcp's log:\n%s\n", kcp.LogTail(20))
	}
	return err
}

// warnOnError runs a clean-up step and reports its error as a warning: it
// does not change what was measured. (kcp v0.28.1, for one, stops its
// embedded etcd before its API server and then hangs until it is killed.)
func warnOnError(cleanUp func() error) {
	if err := cleanUp(); err != nil {
		logf("warning: %v", err)
	}
}

// logf prints a progress line with a timestamp to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// loadAverage returns the 1, 5 and 15 minute load averages of the machine, or
// "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	var one, five, fifteen string
	if _, err := fmt.Sscan(string(data), &one, &five, &fifteen); err != nil {
		return "unknown"
	}
	return one + " " + five + " " + fifteen
}
