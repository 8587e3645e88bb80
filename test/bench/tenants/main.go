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

// Command tenants puts the workspacemounts virtual workspace under the load
// of many tenants, some of them hostile, against one real kcp: 100 clusters
// with 1,000 mounted Workspaces, 50 static-token users each allowed in a few
// clusters listing and watching `*`, a flood of requests for made-up cluster
// names from one more user, and one honest user listing `*` whose latency is
// measured. It reports how many SubjectAccessReviews the plugin sent kcp per
// minute, the honest user's latency, the flood's response codes and the
// plugin's memory before, during and after the load. See
// README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// options are the command line flags.
type options struct {
	clusters         int
	mountsPerCluster int
	users            int
	grantsPerUser    int
	duration         time.Duration
	idle             time.Duration
	floodNames       int
	floodLongNames   int
	floodConcurrency int
	saTokens         int
	alone            time.Duration
	plugin           string
	pluginArgs       []string
	kcpLog           string
	pluginLog        string
	label            string
	// conns, when positive, replaces the load: that many connections of
	// the first tenant, each asking for a watch at * (conns.go).
	conns      int
	connsHTTP1 bool
}

func main() {
	os.Exit(mainWithCode())
}

// mainWithCode runs the benchmark and returns the exit code, so that deferred
// clean-up runs before the process exits.
func mainWithCode() int {
	opts, err := parseFlags(os.Args[1:])
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

// parseFlags parses and validates the command line.
func parseFlags(args []string) (options, error) {
	var opts options
	fs := flag.NewFlagSet("tenants", flag.ContinueOnError)
	fs.IntVar(&opts.clusters, "clusters", 100, "Workspaces under root that hold the mounted Workspaces.")
	fs.IntVar(&opts.mountsPerCluster, "mounts-per-cluster", 10, "Mounted Workspaces in each cluster.")
	fs.IntVar(&opts.users, "users", 50, "Static-token tenants listing and watching * during the load.")
	fs.IntVar(&opts.grantsPerUser, "grants-per-user", 2, "Clusters each tenant may read.")
	fs.DurationVar(&opts.duration, "duration", time.Minute, "How long the load lasts.")
	fs.DurationVar(&opts.idle, "idle", 30*time.Second, "How long the plugin idles after the load before its memory is read once more.")
	fs.IntVar(&opts.floodNames, "flood-names", 10000, "Distinct made-up cluster names (x00001z, ...) the flooder requests, each once.")
	fs.IntVar(&opts.floodLongNames, "flood-long-names", 100, "Distinct long system:a:a:... cluster names the flooder requests, each once.")
	fs.IntVar(&opts.floodConcurrency, "flood-concurrency", 16, "The flooder's requests in flight.")
	fs.IntVar(&opts.saTokens, "sa-tokens", 20, "Tokens of one ServiceAccount (in the last cluster) listing * and their cluster without pause during the load, one user for kcp; 0: none.")
	fs.DurationVar(&opts.alone, "alone", 10*time.Second, "How long the honest user lists alone before the load (its p50 and p99 then).")
	fs.StringVar(&opts.plugin, "plugin-binary", "", "The workspacemounts binary. Default: $WORKSPACEMOUNTS_BINARY, else <repo root>/bin/workspacemounts (make build).")
	fs.Func("plugin-args", "Extra arguments for `workspacemounts start`, separated by spaces; not the serving flags the benchmark sets.", func(value string) error {
		opts.pluginArgs = append(opts.pluginArgs, strings.Fields(value)...)
		return nil
	})
	fs.StringVar(&opts.kcpLog, "kcp-log", "", "Write kcp's log to this file and keep it. Default: a file in the temporary directory, removed at the end.")
	fs.StringVar(&opts.pluginLog, "plugin-log", "", "Write the plugin's log to this file and keep it. Default: a file in the temporary directory, removed at the end.")
	fs.StringVar(&opts.label, "label", "", "The first column of the tables, e.g. before or after. Default: the plugin's version.")
	fs.IntVar(&opts.conns, "conns", 0, "Instead of the load: open this many connections as the first tenant, each asking for a watch at *, "+
		"and report the answers, the connections the plugin left open and its memory with them.")
	fs.BoolVar(&opts.connsHTTP1, "conns-http1", false, "--conns speak HTTP/1.1 instead of HTTP/2 (what kubectl speaks).")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if opts.clusters < 1 || opts.mountsPerCluster < 1 || opts.users < 1 || opts.grantsPerUser < 1 || opts.duration <= 0 || opts.idle < 0 ||
		opts.floodNames < 0 || opts.floodLongNames < 0 || opts.floodConcurrency < 1 || opts.saTokens < 0 || opts.alone < 0 || opts.conns < 0 {
		return options{}, errors.New("--clusters, --mounts-per-cluster, --users, --grants-per-user, --duration and --flood-concurrency must be positive, --idle, --alone, --sa-tokens, --conns and --flood-* not negative")
	}
	if opts.grantsPerUser > opts.clusters {
		return options{}, errors.New("--grants-per-user must not exceed --clusters")
	}
	for _, arg := range opts.pluginArgs {
		for _, flag := range framework.PluginServingFlags {
			if arg == flag || strings.HasPrefix(arg, flag+"=") {
				return options{}, fmt.Errorf("--plugin-args must not set %s: the benchmark picks free ports and a temporary --cert-dir", flag)
			}
		}
	}
	if opts.plugin == "" {
		binary, err := framework.PluginBinary()
		if err != nil {
			return options{}, fmt.Errorf("%w (or set --plugin-binary)", err)
		}
		opts.plugin = binary
	}
	return opts, nil
}

// run starts kcp and the plugin, sets up the tenants, loads the virtual
// workspace and prints the results to out. It stops both processes and
// removes its temporary directory before it returns, also when ctx is cancelled.
func run(ctx context.Context, opts options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "workspacemounts-tenants-")
	if err != nil {
		return err
	}
	defer warnOnError(func() error { return os.RemoveAll(dir) })

	tokens, err := writeTokenFile(filepath.Join(dir, "tokens.csv"), opts.users)
	if err != nil {
		return err
	}
	kcpOpts := framework.Options{
		RootDir:   filepath.Join(dir, "kcp"),
		ExtraArgs: []string{"--token-auth-file=" + tokens.path},
		LogPath:   opts.kcpLog,
	}
	logf("starting kcp (root directory %s)", kcpOpts.RootDir)
	kcp, err := framework.Start(ctx, kcpOpts)
	if err != nil {
		return fmt.Errorf("starting kcp: %w", err)
	}
	defer warnOnError(kcp.Stop)
	logf("kcp at %s ready after %s", kcp.BaseURL, kcp.ReadyAfter.Round(time.Millisecond))

	version := framework.PluginVersion(ctx, opts.plugin)
	plugin, err := framework.StartPlugin(ctx, framework.PluginOptions{
		Binary: opts.plugin, Kubeconfig: kcp.KubeconfigPath, LogPath: opts.pluginLog, WorkDir: dir,
		// One replica needs no lease; and a leader that cannot renew its lease
		// in time on a loaded machine exits, which would end the benchmark.
		ExtraArgs:      append([]string{"--leader-elect=false"}, opts.pluginArgs...),
		MemoryInterval: 250 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	defer warnOnError(plugin.Stop)
	logf("plugin %s (version %s) started (pid %d), logging to %s, virtual workspace at %s, metrics at %s",
		opts.plugin, version, plugin.Pid(), plugin.LogPath, plugin.VirtualWorkspaceURL, plugin.MetricsURL)

	b, err := newBench(kcp, plugin, tokens, opts)
	if err != nil {
		return err
	}
	res, err := b.run(ctx)
	if res != nil {
		res.label, res.pluginVersion = opts.label, version
		if res.label == "" {
			res.label = version
		}
		res.print(out)
	}
	if err != nil && ctx.Err() == nil {
		plugin.PrintLogTail(os.Stderr, 20)
		fmt.Fprintf(os.Stderr, "last lines of kcp's log:\n%s\n", kcp.LogTail(20))
	}
	return err
}

// warnOnError runs a clean-up step and reports its error as a warning: it
// does not change what was measured.
func warnOnError(cleanUp func() error) {
	if err := cleanUp(); err != nil {
		logf("warning: %v", err)
	}
}

// logf prints a progress line with a timestamp to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
