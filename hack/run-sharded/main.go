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

// Command run-sharded is the process behind `make run SHARDS=2`
// (hack/run-sharded.sh): it starts a sharded kcp with the test framework's
// StartSharded (a cache server, the root shard, shard-2 and more, and a
// front-proxy whose /services/workspacemounts/ goes to the plugin), then the
// plugin in sharded mode (--root-kubeconfig, --shards-kubeconfig), waits until
// the plugin is ready, writes what the script needs to know to an env file,
// and runs until SIGINT or SIGTERM, when it stops the plugin and then kcp.
// The demo is the script's, with kubectl through the front-proxy.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// pluginReadyTimeout bounds how long the plugin may take to be ready once
// kcp is.
const pluginReadyTimeout = 3 * time.Minute

func main() {
	os.Exit(run())
}

func run() int {
	dir := flag.String("dir", "", "Directory for everything (PKI, kubeconfigs, logs, each process's state): emptied first.")
	shards := flag.Int("shards", 2, "Shards, the root shard included: root, shard-2, shard-3, ...")
	vwPort := flag.Int("virtual-workspace-port", 0, "Port of the plugin's virtual workspace on 127.0.0.1, behind the front-proxy. 0: a free one.")
	envFile := flag.String("env-file", "", "Written once everything is ready: shell variable assignments for the script.")
	flag.Parse()
	if *dir == "" || *envFile == "" || *shards < 2 {
		fmt.Fprintln(os.Stderr, "Error: --dir and --env-file are required, --shards must be 2 or more")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, *dir, *shards, *vwPort, *envFile); err != nil {
		if ctx.Err() != nil {
			return 130
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// start starts everything, writes the env file and waits until ctx is done.
func start(ctx context.Context, dir string, shards, vwPort int, envFile string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if vwPort == 0 {
		var err error
		if vwPort, err = framework.FreePort(ctx); err != nil {
			return err
		}
	}
	names := make([]string, 0, shards-1)
	for i := 2; i <= shards; i++ {
		names = append(names, "shard-"+strconv.Itoa(i))
	}
	kcpDir := filepath.Join(dir, "kcp")
	fmt.Printf("Starting a sharded kcp v0.28.1: cache server, shards root and %s, front-proxy (state and logs in %s, about a minute)...\n", strings.Join(names, ", "), kcpDir)
	s, err := framework.StartSharded(ctx, framework.ShardedOptions{
		RootDir:         kcpDir,
		Shards:          names,
		ServiceMappings: []framework.ServiceMapping{framework.PluginServiceMapping(vwPort)},
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping kcp...")
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "Warning:", err)
		}
	}()
	fmt.Printf("kcp ready after %s, front-proxy at %s\n", s.ReadyAfter.Round(time.Second), s.FrontProxyURL)

	pluginDir := filepath.Join(dir, "workspacemounts")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return err
	}
	opts := s.PluginOptions(vwPort, pluginDir)
	opts.LogPath = filepath.Join(dir, "workspacemounts.log")
	fmt.Printf("Starting workspacemounts in sharded mode (log %s)...\n", opts.LogPath)
	plugin, err := framework.StartPlugin(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping workspacemounts...")
		if err := plugin.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "Warning:", err)
		}
	}()
	if err := waitReady(ctx, plugin); err != nil {
		return err
	}

	env := map[string]string{
		"FRONT_PROXY_URL":  s.FrontProxyURL,
		"ADMIN_KUBECONFIG": s.AdminKubeconfigPath,
		"METRICS_URL":      plugin.MetricsURL,
		"PLUGIN_LOG":       opts.LogPath,
		"KCP_DIR":          kcpDir,
		"SHARD_NAMES":      strings.Join(append([]string{framework.RootShard}, names...), ", "),
		"PLUGIN_PID":       strconv.Itoa(plugin.Pid()),
		"SHARD_2_PID":      strconv.Itoa(s.Shard("shard-2").Pid()),
	}
	var lines []string
	for key, value := range env {
		lines = append(lines, key+"="+strconv.Quote(value))
	}
	if err := framework.WriteFileAtomic(envFile, []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return err
	}

	select {
	case <-ctx.Done():
		return nil
	case <-plugin.Exited():
		return fmt.Errorf("workspacemounts exited: %w (log %s)", plugin.ExitErr(), opts.LogPath)
	}
}

// waitReady waits until the plugin's /readyz answers 200.
func waitReady(ctx context.Context, plugin *framework.Plugin) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(pluginReadyTimeout)
	for {
		if err := plugin.CheckRunning(); err != nil {
			return fmt.Errorf("%w; last lines:\n%s", err, plugin.LogTail(20))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, plugin.MetricsURL+"/readyz", http.NoBody)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workspacemounts not ready within %s; last lines of its log:\n%s", pluginReadyTimeout, plugin.LogTail(20))
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
