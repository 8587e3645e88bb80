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

// Command run is `make run` and `make run SHARDS=2` (hack/run.sh builds and
// runs it): a local kcp, the workspacemounts plugin and a demo of mounted
// workspaces in every state, until SIGINT (Ctrl-C) or SIGTERM, when it
// stops the plugin first (it releases its Lease while kcp still answers),
// then kcp. kcp and the plugin are started by test/framework, as the
// end-to-end tests and the benchmarks start them:
//   - --shards 1: one kcp process keeping its state in --state across runs,
//     with kcp's in-tree mounts controller (--feature-gates=WorkspaceMounts=true),
//     whose mini front-proxy sends /services/workspacemounts to the plugin;
//   - --shards 2 or more: a sharded kcp made afresh in <state>/sharded (a
//     cache server, the root shard, shard-2 and more, and a front-proxy whose
//     /services/workspacemounts/ goes to the plugin), as the sharded
//     end-to-end tests run it, and the plugin in sharded mode.
//
// The demo (demo.go) is made through kcp's API, on every shard; the
// kubectl plugin's lines to try, in the demo's context, then kubectl's, are printed once the plugin is ready. Where kcp has
// mount proxy flags, the demo's ready mounts point at a
// framework.MountProvider (provider.go), else at their own workspaces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// pluginReadyTimeout bounds how long the plugin may take to be ready once
// kcp is and the demo is made.
const pluginReadyTimeout = 3 * time.Minute

// config is the command line.
type config struct {
	state                                 string
	shards                                int
	kcpPort, etcdClientPort, etcdPeerPort int
	vwPort, metricsPort                   int
}

func main() {
	os.Exit(run())
}

func run() int {
	var c config
	flag.StringVar(&c.state, "state", "", "Directory of kcp's state, kept across runs (one shard), and of <state>/sharded, made afresh every time (more shards).")
	flag.IntVar(&c.shards, "shards", 1, "Shards, the root shard included: root, shard-2, shard-3, ...")
	flag.IntVar(&c.kcpPort, "kcp-port", 6443, "Port of kcp on 127.0.0.1: the kcp process's, or the front-proxy's of a sharded kcp.")
	flag.IntVar(&c.etcdClientPort, "etcd-client-port", 2379, "Port of kcp's embedded etcd for clients (one shard).")
	flag.IntVar(&c.etcdPeerPort, "etcd-peer-port", 2380, "Port of kcp's embedded etcd for peers (one shard).")
	flag.IntVar(&c.vwPort, "virtual-workspace-port", 6444, "Port of the plugin's virtual workspace on 127.0.0.1, behind kcp's /services/workspacemounts.")
	flag.IntVar(&c.metricsPort, "metrics-port", 8080, "Port of the plugin's metrics and health on 127.0.0.1.")
	flag.Parse()
	if c.state == "" || c.shards < 1 {
		fmt.Fprintln(os.Stderr, "Error: --state is required, --shards must be 1 or more")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

// local is the kcp this command started, one process or a sharded kcp.
type local struct {
	// url is where kcp serves: the kcp process, or the front-proxy.
	url string
	// admin is kcp-admin at url, kubeconfig the same for kubectl.
	admin      *rest.Config
	kubeconfig string
	// processes are kcp's processes.
	processes []*framework.Process
	// plugin runs the plugin against it, but for the ports.
	plugin framework.PluginOptions
	// places are the demo's workspaces.
	places []place
	// demo announces the demo, text is what to try, with the variables of
	// vars ($NAME).
	demo, text string
	vars       map[string]string
	stop       func() error
}

// run starts kcp, the plugin and the demo, prints what to try and waits
// until ctx is done or a process exits, then stops everything.
func (c config) run(ctx context.Context) error {
	var stops []func() error // the plugin's first, then kcp's
	defer func() {
		fmt.Println("\nStopping workspacemounts and kcp...")
		for _, stop := range stops {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "Warning:", err)
			}
		}
	}()
	binary, err := framework.KCPBinary()
	if err != nil {
		return err
	}
	release := "(release unknown)"
	if v, err := framework.KCPRelease(ctx, binary); err == nil {
		release = "v" + v.String()
	}
	provider, kcpArgs, err := c.startMountProvider(ctx, binary, release)
	if err != nil {
		return err
	}
	providerURL := ""
	if provider != nil {
		stops = append(stops, provider.Stop)
		providerURL = provider.URL
	}
	start := c.startOne
	if c.shards > 1 {
		start = c.startSharded
	}
	kcp, err := start(ctx, binary, release, kcpArgs)
	if err != nil {
		return err
	}
	stops = append([]func() error{kcp.stop}, stops...)

	opts := kcp.plugin
	opts.Name, opts.SecurePort, opts.MetricsPort = "workspacemounts", c.vwPort, c.metricsPort
	if err := os.MkdirAll(opts.WorkDir, 0o755); err != nil {
		return err
	}
	fmt.Printf("Starting workspacemounts (log %s)...\n", opts.LogPath)
	plugin, err := framework.StartPlugin(ctx, opts)
	if err != nil {
		return err
	}
	stops = append([]func() error{plugin.Stop}, stops...)
	fmt.Println(kcp.demo)
	if err := makeDemo(ctx, kcp.admin, kcp.url, providerURL, kcp.places); err != nil {
		return err
	}
	if err := plugin.WaitReady(ctx, pluginReadyTimeout); err != nil {
		return err
	}

	plugins, err := framework.KubectlPluginBinary()
	if err != nil {
		return err
	}
	demoKubeconfig := filepath.Join(filepath.Dir(kcp.kubeconfig), "demo.kubeconfig")
	if err := writeDemoKubeconfig(kcp.kubeconfig, kcp.url+"/clusters/root:demo-a", demoKubeconfig); err != nil {
		return err
	}
	vars := map[string]string{
		"BIN_DIR":         filepath.Dir(plugins),
		"PATH":            "$PATH", // as printed, for the shell
		"DEMO_KUBECONFIG": demoKubeconfig,
		"MOUNT_PROVIDER":  mountProviderText(provider != nil && c.shards == 1, kcp.kubeconfig, kcp.url),
		"KCP_URL":         kcp.url,
		"KUBECONFIG":      kcp.kubeconfig,
		"METRICS_URL":     plugin.MetricsURL,
		"PLUGIN_LOG":      plugin.LogPath,
	}
	maps.Copy(vars, kcp.vars)
	fmt.Print(os.Expand(kcp.text, func(name string) string { return vars[name] }))

	exited := make(chan *framework.Process, 1+len(kcp.processes))
	for _, p := range append(kcp.processes, plugin.Process) {
		go func() {
			<-p.Exited()
			exited <- p
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-exited:
		return p.CheckRunning()
	}
}

// startOne starts one kcp process in the state directory, whose mini
// front-proxy sends /services/workspacemounts to the plugin.
func (c config) startOne(ctx context.Context, binary, release string, kcpArgs []string) (*local, error) {
	logPath := filepath.Join(c.state, "kcp.log")
	fmt.Printf("Starting kcp %s (%s) on https://127.0.0.1:%d (state in %s, log %s)...\n", release, binary, c.kcpPort, c.state, logPath)
	s, err := framework.Start(ctx, framework.Options{
		Binary:          binary,
		RootDir:         c.state,
		SecurePort:      c.kcpPort,
		EtcdClientPort:  c.etcdClientPort,
		EtcdPeerPort:    c.etcdPeerPort,
		FeatureGates:    "WorkspaceMounts=true",
		ServiceMappings: []framework.ServiceMapping{framework.PluginServiceMapping(c.vwPort)},
		ExtraArgs:       kcpArgs,
		LogPath:         logPath,
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("kcp ready after %s\n", s.ReadyAfter.Round(time.Second))
	admin, err := s.BaseConfig("base")
	if err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return &local{
		url:        s.BaseURL,
		admin:      admin,
		kubeconfig: s.KubeconfigPath,
		processes:  []*framework.Process{s.Process},
		plugin: framework.PluginOptions{
			Kubeconfig: s.KubeconfigPath,
			WorkDir:    filepath.Join(c.state, "workspacemounts"),
			LogPath:    filepath.Join(c.state, "workspacemounts.log"),
		},
		places: []place{{parent: "root", name: "demo-a"}, {parent: "root", name: "demo-b"}},
		demo:   "Creating the demo: workspaces root:demo-a and root:demo-b, each with a KubeCluster mount kind...",
		text:   oneShardText,
		vars:   map[string]string{"KCP_LOG": logPath},
		stop:   s.Stop,
	}, nil
}

// startSharded starts a sharded kcp made afresh in <state>/sharded, whose
// front-proxy sends /services/workspacemounts/ to the plugin, which serves
// every shard.
func (c config) startSharded(ctx context.Context, binary, release string, kcpArgs []string) (*local, error) {
	dir := filepath.Join(c.state, "sharded")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	names := make([]string, 0, c.shards-1)
	for i := 2; i <= c.shards; i++ {
		names = append(names, "shard-"+strconv.Itoa(i))
	}
	kcpDir := filepath.Join(dir, "kcp")
	fmt.Printf("Starting a sharded kcp %s: cache server, shards root and %s, front-proxy (state and logs in %s, about a minute)...\n", release, strings.Join(names, ", "), kcpDir)
	s, err := framework.StartSharded(ctx, framework.ShardedOptions{
		KCPBinary:       binary,
		RootDir:         kcpDir,
		Shards:          names,
		FrontProxyPort:  c.kcpPort,
		ServiceMappings: []framework.ServiceMapping{framework.PluginServiceMapping(c.vwPort)},
		ShardArgs:       kcpArgs,
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("kcp ready after %s, front-proxy at %s\n", s.ReadyAfter.Round(time.Second), s.FrontProxyURL)
	plugin := s.PluginOptions(c.vwPort, filepath.Join(dir, "workspacemounts"))
	plugin.LogPath = filepath.Join(dir, "workspacemounts.log")
	processes := make([]*framework.Process, 0, len(s.Processes()))
	for _, p := range s.Processes() {
		processes = append(processes, p.Process)
	}
	return &local{
		url:        s.FrontProxyURL,
		admin:      s.FrontProxyConfig(),
		kubeconfig: s.AdminKubeconfigPath,
		processes:  processes,
		plugin:     plugin,
		places: []place{
			{parent: "root", name: "demo-a", shard: framework.RootShard},
			{parent: "root", name: "demo-b", shard: "shard-2"},
			{parent: "root:demo-a", name: "team", shard: "shard-2"},
		},
		demo: "Creating the demo: root:demo-a on the root shard, root:demo-b and root:demo-a:team (its parent on the root shard) on shard-2,\n" +
			"each with a KubeCluster mount kind and four mounted workspaces...",
		text: shardedText,
		vars: map[string]string{
			"SHARDS":      strconv.Itoa(c.shards),
			"SHARD_NAMES": strings.Join(append([]string{framework.RootShard}, names...), ", "),
			"SHARD_2_PID": strconv.Itoa(s.Shard("shard-2").Pid()),
			"KCP_DIR":     kcpDir,
		},
		stop: s.Stop,
	}, nil
}

// oneShardText is what to try on one kcp process.
const oneShardText = `
workspacemounts is running against a local kcp. Try the kubectl plugin in the demo's context, root:demo-a:

  export PATH=$BIN_DIR:$PATH KUBECONFIG=$DEMO_KUBECONFIG
  kubectl workspacemounts tree -A
  kubectl workspacemounts why connecting
  kubectl workspacemounts get -w

Or kubectl alone, through kcp's URL:

  # every mounted workspace you may see, in all logical clusters
  kubectl --kubeconfig $KUBECONFIG --server '$KCP_URL/services/workspacemounts/clusters/*' get workspacemounts -o wide

  # one workspace, by path; watch it change
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/services/workspacemounts/clusters/root:demo-a get wsm -w

  # the mount state of every mounted workspace in root:demo-a, from the annotations
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a get workspaces \
    -o custom-columns='NAME:.metadata.name,PHASE:.metadata.annotations.workspacemounts\.io/phase,MOUNT:.spec.mount.ref.name'

  # the whole status of one
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a get workspace connecting \
    -o jsonpath='{.metadata.annotations.workspacemounts\.io/status}'

  # flip a mount and watch the annotation follow
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a patch kubecluster connecting \
    --subresource=status --type=merge -p '{"status":{"phase":"Ready","URL":"https://example.com"}}'

$MOUNT_PROVIDER  # Prometheus metrics, and health
  curl -s $METRICS_URL/metrics | grep ^workspacemounts_
  curl -s $METRICS_URL/readyz

Logs: $KCP_LOG, $PLUGIN_LOG. Press Ctrl-C to stop.
`

// shardedText is what to try on a sharded kcp.
const shardedText = `
workspacemounts is running against a local kcp of $SHARDS shards ($SHARD_NAMES), behind its front-proxy $KCP_URL.
Try the kubectl plugin in the demo's context, root:demo-a (root:demo-a:team is on shard-2):

  export PATH=$BIN_DIR:$PATH KUBECONFIG=$DEMO_KUBECONFIG
  kubectl workspacemounts tree -A
  kubectl workspacemounts why root:demo-a:team:connecting
  kubectl workspacemounts get -w

Or kubectl alone, through the front-proxy:

  # every mounted workspace you may see, on every shard, by workspace path
  kubectl --kubeconfig $KUBECONFIG --server '$KCP_URL/services/workspacemounts/clusters/*' get workspacemounts

  # the same with the shard (and cluster, URL, reason) of each
  kubectl --kubeconfig $KUBECONFIG --server '$KCP_URL/services/workspacemounts/clusters/*' get workspacemounts -o wide

  # a workspace on shard-2 whose parent is on the root shard, by path; watch it change
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/services/workspacemounts/clusters/root:demo-a:team get wsm -w

  # only shard-2's
  kubectl --kubeconfig $KUBECONFIG --server '$KCP_URL/services/workspacemounts/clusters/*' get wsm --field-selector status.shard=shard-2

  # the mount state of every mounted workspace in root:demo-a:team, from the annotations on shard-2
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a:team get workspaces \
    -o custom-columns='NAME:.metadata.name,PHASE:.metadata.annotations.workspacemounts\.io/phase,MOUNT:.spec.mount.ref.name'

  # the whole status of one
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a:team get workspace connecting \
    -o jsonpath='{.metadata.annotations.workspacemounts\.io/status}'

  # flip a mount on shard-2 and watch the annotation follow
  kubectl --kubeconfig $KUBECONFIG --server $KCP_URL/clusters/root:demo-a:team patch kubecluster connecting \
    --subresource=status --type=merge -p '{"status":{"phase":"Ready","URL":"https://example.com"}}'

  # Prometheus metrics (each shard's last answer and sync), and health
  curl -s $METRICS_URL/metrics | grep -E '^workspacemounts_(shard|mounted)'
  curl -s $METRICS_URL/readyz

  # shard-2 away (the SHARD column and a warning tell after 30s), and back
  #   kill -STOP $SHARD_2_PID; kill -CONT $SHARD_2_PID

Logs: $KCP_DIR/*.log, $PLUGIN_LOG. Press Ctrl-C to stop.
`
