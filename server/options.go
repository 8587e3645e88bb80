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

package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
)

// Options are the flags of `workspacemounts start`: AddFlags registers them,
// Complete validates them and makes the CompletedOptions NewConfig takes.
type Options struct {
	Kubeconfig string
	Context    string
	// RootKubeconfig and ShardsKubeconfig, instead of Kubeconfig, serve a
	// sharded kcp, with the flags of kcp's front-proxy (see Sharded).
	RootKubeconfig   string
	ShardsKubeconfig string
	// AllShards serves a sharded kcp with Kubeconfig alone: it reaches the
	// root shard, and its credentials every shard (as RootKubeconfig and
	// ShardsKubeconfig both Kubeconfig, in Context; see Sharded).
	AllShards bool
	// ShardExternalURL and CacheKubeconfig are flags of kcp's own virtual
	// workspaces that kcp-operator passes to every VirtualWorkspace;
	// accepted and ignored (KCPOnlyFlagsSet).
	ShardExternalURL string
	CacheKubeconfig  string

	WorkspaceWorkers int
	QPS              float32
	Burst            int
	// RequestTimeout bounds each request of the controller to kcp
	// (workspacemounts.Options.RequestTimeout).
	RequestTimeout time.Duration
	// MaxMountInformers bounds the mount object informers the controller runs.
	MaxMountInformers int
	// MaxClusterMountInformers bounds the full-object informers of CRD
	// mount resources in one cluster each.
	MaxClusterMountInformers int
	// WorkspaceEventsPerHour bounds the events regarding one Workspace in
	// any hour (--max-workspace-events-per-hour); 0 records none.
	WorkspaceEventsPerHour int
	// MountHeartbeatTimeout expires mount objects whose heartbeat is older
	// (workspacemounts.Options.MountHeartbeatTimeout); 0 is off.
	MountHeartbeatTimeout time.Duration
	// WorkspaceCondition and WorkspaceURL: what the controller keeps beside
	// the annotations (workspacemounts.RoutingOptions).
	WorkspaceCondition bool
	WorkspaceURL       bool
	// WorkspaceConditionDelay and MaxUnavailable gate the condition
	// (workspacemounts.RoutingOptions.ConditionDelay and MaxUnavailable,
	// parsed by workspacemounts.ParseMaxUnavailable; "" is no limit).
	WorkspaceConditionDelay time.Duration
	MaxUnavailable          string
	// LegacyMountAnnotation honours kcp's legacy mount annotation (mountRule).
	LegacyMountAnnotation bool
	// WorkspaceURLAllowInternalHosts and WorkspaceURLAllowedHosts: which
	// mount URLs spec.URL takes (mount.URLRule).
	WorkspaceURLAllowInternalHosts bool
	WorkspaceURLAllowedHosts       []string
	// MountURLContract (--mount-url-contract) is the form of mount URL
	// levels 1 and 2 call routable: MountURLContractAuto, HTTPS or Legacy.
	MountURLContract string

	RunController       bool
	RunVirtualWorkspace bool
	VirtualWorkspace    *apiserver.Options

	// MetricsBindAddress serves /metrics, /healthz, /livez and /readyz; "0" turns it off.
	MetricsBindAddress string
	// Profiling serves net/http/pprof under /debug/pprof/ on MetricsBindAddress.
	Profiling      bool
	LeaderElection LeaderElectionOptions
}

// LeaderElectionOptions place the lease that elects the one replica running
// the writing controller.
type LeaderElectionOptions struct {
	Enabled       bool
	Cluster       string
	Namespace     string
	ID            string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		WorkspaceWorkers:         10,
		MaxMountInformers:        mount.DefaultMaxMountInformers,
		MaxClusterMountInformers: workspacemounts.DefaultMaxClusterMountInformers,
		WorkspaceEventsPerHour:   workspacemounts.DefaultMaxWorkspaceEventsPerHour,
		QPS:                      100,
		Burst:                    200,
		RequestTimeout:           workspacemounts.DefaultRequestTimeout,
		RunController:            true,
		RunVirtualWorkspace:      true,
		VirtualWorkspace:         apiserver.NewOptions(),
		MetricsBindAddress:       "127.0.0.1:8080",
		MountURLContract:         MountURLContractAuto,
		LeaderElection: LeaderElectionOptions{
			Enabled:       true,
			Cluster:       "root",
			Namespace:     "default",
			ID:            "workspacemounts",
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
		},
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Kubeconfig of the kcp shard. Its credentials must read Workspaces, CRDs, APIBindings, APIResourceSchemas and mount objects across all "+
			"logical clusters (system:masters, e.g. the shard-base context of kcp's admin.kubeconfig) and patch Workspaces. "+
			"The server URL may carry a /clusters/<name> path; the shard base URL is used. With --all-shards, the root shard's, for every shard.")
	fs.StringVar(&o.Context, "context", o.Context, "The --kubeconfig context to use; the current context if empty.")
	fs.StringVar(&o.RootKubeconfig, "root-kubeconfig", o.RootKubeconfig,
		"Instead of --kubeconfig, for a sharded kcp (as kcp's front-proxy): kubeconfig of the root shard (its current context), "+
			"where the Shard objects, the leader Lease and the tenancy APIExport are read and TokenReviews are sent. With --shards-kubeconfig.")
	fs.StringVar(&o.ShardsKubeconfig, "shards-kubeconfig", o.ShardsKubeconfig,
		"With --root-kubeconfig: kubeconfig whose current context's credentials every shard accepts, with the rights --kubeconfig needs; "+
			"its server is replaced by each Shard's spec.baseURL. The shards are followed from the Shard objects in root as they come and go.")
	fs.BoolVar(&o.AllShards, "all-shards", o.AllShards,
		"With --kubeconfig reaching the root shard (its context, or --context; any /clusters/<path>): serve every shard, as --root-kubeconfig and "+
			"--shards-kubeconfig both set to --kubeconfig: the Shard objects in root, each shard reached with --kubeconfig's credentials at its spec.baseURL. "+
			"For a kcp-operator VirtualWorkspace targeting the RootShard (spec.extraArgs), whose shards all trust the RootShard's client CA.")
	fs.StringVar(&o.ShardExternalURL, "shard-external-url", o.ShardExternalURL,
		"Ignored: a flag of kcp's own virtual workspaces, which kcp-operator passes to every VirtualWorkspace; accepted so that its arguments start the plugin.")
	fs.StringVar(&o.CacheKubeconfig, "cache-kubeconfig", o.CacheKubeconfig,
		"Ignored: a flag of kcp's own virtual workspaces (the cache server), which kcp-operator passes to a VirtualWorkspace whose shard has one; "+
			"accepted so that its arguments start the plugin.")
	fs.IntVar(&o.WorkspaceWorkers, "workspace-workers", o.WorkspaceWorkers, "Number of workers of the queue workspacemounts-workspaces (of each shard's controller), each reading one mount object and patching one Workspace at a time.")
	fs.IntVar(&o.MaxMountInformers, "max-mount-informers", o.MaxMountInformers,
		"Most mount resources (kind, version and APIExport identity) the controller watches: a bound one with one informer across all clusters, "+
			"a CRD one with its per-cluster informers and, while a cluster mounting it has none, a metadata informer across all clusters; "+
			"Workspaces mounting a kind beyond it get reason MountInformerLimitReached until a slot frees.")
	fs.IntVar(&o.MaxClusterMountInformers, "max-cluster-mount-informers", o.MaxClusterMountInformers,
		"Most full-object informers of CRD mount resources in one logical cluster each, one per (resource, cluster) pair mounted by some Workspace, "+
			"from which the controller reads mount objects instead of a GET per change (kcp serves CRD resources across clusters only as metadata; "+
			"bound resources need none: their one informer across all clusters holds full objects). Pairs beyond it are read with a GET per change, "+
			"on their resource's metadata informer across all clusters, which runs only then. 0 runs none.")
	fs.IntVar(&o.WorkspaceEventsPerHour, "max-workspace-events-per-hour", o.WorkspaceEventsPerHour,
		"Most events (events.k8s.io/v1, kubectl describe workspace) the controller records regarding one Workspace in any hour: one per change of its mount's phase or readiness, "+
			"Warning when not ready, Normal when ready, written in the Workspace's logical cluster (namespace default). Beyond it, and when the shard refuses them, "+
			"events are dropped and counted (workspacemounts_events_dropped_total), never retried and never holding a reconcile. 0 records none.")
	fs.DurationVar(&o.MountHeartbeatTimeout, "mount-heartbeat-timeout", o.MountHeartbeatTimeout,
		"A mount object whose status carries a heartbeat (status.lastHeartbeatTime, a status.conditions entry's lastHeartbeatTime, "+
			"or status.lastProxyHeartbeatTime; the newest counts) older than this is phase Unknown, reason "+mount.ReasonMountHeartbeatExpired+
			", whatever its status.phase says, until the heartbeat moves; one without any heartbeat is judged as before. "+
			"Providers should write the heartbeat at least every third of it. 0 (the default) is off; else at least 1s.")
	fs.BoolVar(&o.WorkspaceCondition, "workspace-condition", o.WorkspaceCondition,
		"Also keep the condition "+mount.ConditionType+" on every mounted Workspace: True when the mount is ready, else False with the reason "+
			"(kcp then marks the Workspace Unavailable and its proxies answer 503). Needs patch on workspaces/status. "+
			"Without it, the controller removes the condition wherever it finds it.")
	fs.DurationVar(&o.WorkspaceConditionDelay, "workspace-condition-delay", o.WorkspaceConditionDelay,
		"With --workspace-condition: how long a mount must be not ready, without a break, before its condition turns False "+
			"(since the status annotation's lastTransitionTime); meanwhile the condition is Unknown with reason "+mount.ReasonGateDelayed+
			", kcp keeps the Workspace Ready and sends its requests to the mount's URL. 0: at once.")
	fs.StringVar(&o.MaxUnavailable, "max-unavailable", o.MaxUnavailable,
		"With --workspace-condition: the most Workspaces of a shard whose condition may be False at once, a number (0: none) or a percentage "+
			"of the shard's mounted Workspaces (10%: rounded down, 10% of 25 is 2); beyond it the condition is Unknown with reason "+mount.ReasonGateHeld+
			", kcp keeps those Workspaces Ready and sends their requests to their mounts, and workspacemounts_gate_held_workspaces counts them. "+
			"A Workspace whose condition is False keeps its slot until its mount is ready again; then the Workspace held longest takes it. Empty: no limit.")
	fs.BoolVar(&o.WorkspaceURL, "workspace-url", o.WorkspaceURL,
		"Also set spec.URL of every Workspace with spec.mount to its mount object's status.URL when it is routable (see --workspace-url-allowed-hosts; kcp never lets it be unset), "+
			"and its phase from Scheduling to Ready once the mount is ready: what kcp's in-tree mounts controller (feature gate WorkspaceMounts) does, "+
			"which must be off: the plugin refuses to start when it runs. Needs patch on workspaces and workspaces/status.")
	fs.BoolVar(&o.LegacyMountAnnotation, "legacy-mount-annotation", o.LegacyMountAnnotation,
		"Also treat a Workspace without spec.mount as mounted by the legacy annotation "+mount.LegacyAnnotationKey+" (kcp up to v0.27). "+
			"kcp v0.28 and later mount by spec.mount.ref, which is immutable, while anyone who may patch a Workspace may write the annotation "+
			"(with --workspace-condition, a False condition takes the Workspace out of traffic). Without it, such a Workspace is not mounted: "+
			"the plugin neither reads nor lists it, and removes the annotations and condition it wrote there.")
	fs.BoolVar(&o.WorkspaceURLAllowInternalHosts, "workspace-url-allow-internal-hosts", o.WorkspaceURLAllowInternalHosts,
		"With --workspace-url, also route mounts to internal hosts: loopback (127.0.0.0/8, ::1, localhost), link-local (169.254.0.0/16, fe80::/10), "+
			"unspecified (0.0.0.0, ::) and the shards' own hosts, which are refused otherwise. For development (a kcp on 127.0.0.1) and for "+
			"operators whose mounts lead to workspaces of the same kcp; logged as a warning at start.")
	fs.StringSliceVar(&o.WorkspaceURLAllowedHosts, "workspace-url-allowed-hosts", o.WorkspaceURLAllowedHosts,
		"With --workspace-url, route mounts only to these hosts: CIDRs (10.0.0.0/8, fd00::/8) and IP addresses for hosts written as addresses, "+
			"DNS names for names equal to or under them (example.com: example.com and a.example.com, not badexample.com). No name is resolved. "+
			"Empty: any host that is not internal.")
	fs.StringVar(&o.MountURLContract, "mount-url-contract", o.MountURLContract,
		"Which mount URLs levels 1 and 2 call routable: https (kcp v0.33+: https, no query or fragment), legacy (kcp v0.27 to v0.32: http or https), "+
			"or auto, by each shard's kcp release (https when unknown); --workspace-url always writes the https form.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to kcp, across all clients.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to kcp above --kube-api-qps.")
	fs.DurationVar(&o.RequestTimeout, "kcp-request-timeout", o.RequestTimeout,
		"Timeout of each request of the controller to kcp (a read, a patch, a list of a mount resource in one cluster). "+
			"A mount resource whose reads in a cluster time out (a conversion webhook that never answers, say) gets its Workspaces phase Unknown, "+
			"reason MountKindNotAnswering, and is read again after a backoff.")
	fs.BoolVar(&o.RunController, "run-controller", o.RunController, "Run the controller that writes the mount status annotations.")
	fs.BoolVar(&o.RunVirtualWorkspace, "run-virtual-workspace", o.RunVirtualWorkspace, "Serve the workspacemounts virtual workspace.")
	o.VirtualWorkspace.AddFlags(fs)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"Address (host:port) serving Prometheus /metrics and /healthz, /livez, /readyz (ready once the caches synced) on plain HTTP; 0 turns it off. "+
			"An IPv6 address may come without brackets, as $(POD_IP):8080 expands: the port is after the last colon.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling,
		"Also serve net/http/pprof under /debug/pprof/ on --metrics-bind-address (heap, goroutine and CPU profiles, traces), "+
			"for whoever reaches that address: never route it to tenants.")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled,
		"Elect one replica to run the writing controller, through a Lease; every replica serves the virtual workspace and metrics.")
	fs.StringVar(&le.Cluster, "leader-election-cluster", le.Cluster, "Workspace path (or logical cluster) holding the Lease.")
	fs.StringVar(&le.Namespace, "leader-election-namespace", le.Namespace, "Namespace of the Lease.")
	fs.StringVar(&le.ID, "leader-election-id", le.ID, "Name of the Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-election-lease-duration", le.LeaseDuration,
		"How long a replica waits, after the last renewal it saw, before it takes the lease over.")
	fs.DurationVar(&le.RenewDeadline, "leader-election-renew-deadline", le.RenewDeadline, "How long the leader keeps trying to renew before it gives up.")
	fs.DurationVar(&le.RetryPeriod, "leader-election-retry-period", le.RetryPeriod, "How often replicas try to acquire or renew the lease.")
}

// Validate tells what is wrong with the options.
func (o *Options) Validate() error {
	var errs []error
	switch sharded := o.RootKubeconfig != "" || o.ShardsKubeconfig != ""; {
	case sharded && o.AllShards:
		errs = append(errs, errors.New("--all-shards serves every shard with --kubeconfig; --root-kubeconfig and --shards-kubeconfig do so with two kubeconfigs: use one or the other"))
	case o.AllShards && o.Kubeconfig == "":
		errs = append(errs, errors.New("--all-shards needs --kubeconfig, reaching the root shard with credentials every shard accepts"))
	case sharded && o.Kubeconfig != "":
		errs = append(errs, errors.New("--kubeconfig (one shard) and --root-kubeconfig/--shards-kubeconfig (a sharded kcp) exclude each other"))
	case sharded && (o.RootKubeconfig == "" || o.ShardsKubeconfig == ""):
		errs = append(errs, errors.New("--root-kubeconfig and --shards-kubeconfig go together"))
	case sharded && o.Context != "":
		errs = append(errs, errors.New("--context applies to --kubeconfig; --root-kubeconfig and --shards-kubeconfig use their current contexts"))
	case !sharded && o.Kubeconfig == "":
		errs = append(errs, errors.New("--kubeconfig (or, for a sharded kcp, --root-kubeconfig and --shards-kubeconfig) is required"))
	}
	if o.WorkspaceWorkers < 1 {
		errs = append(errs, fmt.Errorf("--workspace-workers must be at least 1, not %d", o.WorkspaceWorkers))
	}
	if err := (workspacemounts.Options{MaxMountInformers: o.MaxMountInformers, MaxClusterMountInformers: o.MaxClusterMountInformers,
		MaxWorkspaceEventsPerHour: o.WorkspaceEventsPerHour, MountHeartbeatTimeout: o.MountHeartbeatTimeout,
		Routing: workspacemounts.RoutingOptions{ConditionDelay: o.WorkspaceConditionDelay}}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := mount.ParseAllowedHosts(o.WorkspaceURLAllowedHosts); err != nil {
		errs = append(errs, fmt.Errorf("--workspace-url-allowed-hosts: %w", err))
	}
	if !o.WorkspaceURL && (o.WorkspaceURLAllowInternalHosts || len(o.WorkspaceURLAllowedHosts) > 0) {
		errs = append(errs, errors.New("--workspace-url-allow-internal-hosts and --workspace-url-allowed-hosts apply with --workspace-url only"))
	}
	if err := validateMountURLContract(o.MountURLContract); err != nil {
		errs = append(errs, err)
	}
	if _, err := workspacemounts.ParseMaxUnavailable(o.MaxUnavailable); err != nil {
		errs = append(errs, fmt.Errorf("--max-unavailable: %w", err))
	}
	if !o.WorkspaceCondition && (o.WorkspaceConditionDelay != 0 || o.MaxUnavailable != "") {
		errs = append(errs, errors.New("--workspace-condition-delay and --max-unavailable gate the condition of --workspace-condition, and apply with it only"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--kcp-request-timeout must be positive, not %s", o.RequestTimeout))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if o.MetricsBindAddress != "0" {
		if _, err := metricsBindAddress(o.MetricsBindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-bind-address: %w", err))
		}
	}
	if o.Profiling && o.MetricsBindAddress == "0" {
		errs = append(errs, errors.New("--profiling serves on --metrics-bind-address, which is 0 (off)"))
	}
	if !o.RunController && !o.RunVirtualWorkspace {
		errs = append(errs, errors.New("--run-controller=false and --run-virtual-workspace=false leave nothing to run"))
	}
	if o.RunVirtualWorkspace {
		errs = append(errs, o.VirtualWorkspace.Validate())
	}
	if le := o.LeaderElection; le.Enabled && (le.LeaseDuration <= le.RenewDeadline || le.RenewDeadline <= le.RetryPeriod || le.RetryPeriod <= 0) {
		errs = append(errs, fmt.Errorf("leader election needs --leader-election-lease-duration > --leader-election-renew-deadline > --leader-election-retry-period > 0"))
	}
	if le := o.LeaderElection; le.Enabled && (le.Cluster == "" || le.Namespace == "" || le.ID == "") {
		errs = append(errs, fmt.Errorf("leader election needs --leader-election-cluster, --leader-election-namespace and --leader-election-id"))
	}
	return errors.Join(errs...)
}

// mountRule is the one rule of the process for which Workspaces are
// mounted: the controller's, its indexes', the virtual workspace's and the
// metrics'.
func (o *Options) mountRule() mount.Rule {
	return mount.Rule{LegacyAnnotation: o.LegacyMountAnnotation}
}

// Sharded tells whether the options serve a sharded kcp: every Shard in
// root, each with its own clients, informers and controller.
func (o *Options) Sharded() bool { return o.RootKubeconfig != "" || o.AllShards }

// KCPOnlyFlagsSet names the flags of kcp's own virtual workspaces that are
// set (kcp-operator passes them to every VirtualWorkspace); they are
// accepted and ignored, which the start logs in one line.
func (o *Options) KCPOnlyFlagsSet() []string {
	var set []string
	if o.ShardExternalURL != "" {
		set = append(set, "--shard-external-url")
	}
	if o.CacheKubeconfig != "" {
		set = append(set, "--cache-kubeconfig")
	}
	return set
}

// CompletedOptions are valid Options; only Complete makes them.
type CompletedOptions struct {
	*completedOptions
}

type completedOptions struct {
	Options
	// AllowedHosts are WorkspaceURLAllowedHosts, parsed.
	AllowedHosts mount.AllowedHosts
	// maxUnavailable is MaxUnavailable, parsed; nil: no limit.
	maxUnavailable *intstr.IntOrString
}

// Complete validates the options and returns a copy of them. It writes and
// logs nothing: a start that is refused (a missing kubeconfig, kcp's in-tree
// mounts controller beside --workspace-url) says so in one line. The virtual
// workspace's serving certificate is settled when it starts
// (apiserver.Options.Complete).
func (o *Options) Complete() (*CompletedOptions, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	completed := &CompletedOptions{&completedOptions{Options: *o}}
	completed.AllowedHosts, _ = mount.ParseAllowedHosts(o.WorkspaceURLAllowedHosts)     // validated above
	completed.maxUnavailable, _ = workspacemounts.ParseMaxUnavailable(o.MaxUnavailable) // validated above
	if o.MetricsBindAddress != "0" {
		completed.MetricsBindAddress, _ = metricsBindAddress(o.MetricsBindAddress) // validated above
	}
	return completed, nil
}

// metricsBindAddress returns addr as net.Listen takes it: host:port,
// [IPv6]:port, or an IPv6 address written without brackets before its
// port, as $(POD_IP):8080 expands on an IPv6 cluster (fd00::5:8080 is
// [fd00::5]:8080: the port is after the last colon).
func metricsBindAddress(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		i := strings.LastIndex(addr, ":")
		if ip := net.ParseIP(addr[:max(i, 0)]); ip == nil || ip.To4() != nil {
			return "", fmt.Errorf("%q is not host:port: %w", addr, err)
		}
		host, port = addr[:i], addr[i+1:]
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("%q: the port %q is not a number from 0 to 65535", addr, port)
	}
	return net.JoinHostPort(host, port), nil
}
