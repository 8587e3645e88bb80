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
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/virtual/apiserver"
)

// Options are the flags of `workspacemounts start`, in the sections of
// [Options.Flags]; [Options.Complete] validates them. docs/flags.md tells
// what each flag does in full.
type Options struct {
	Kubeconfig string
	Context    string
	// RootKubeconfig and ShardsKubeconfig serve a sharded kcp, as kcp's
	// front-proxy does; AllShards does so with Kubeconfig alone.
	RootKubeconfig   string
	ShardsKubeconfig string
	AllShards        bool
	// ShardExternalURL and CacheKubeconfig are accepted and ignored, see
	// [Options.KCPOnlyFlagsSet].
	ShardExternalURL string
	CacheKubeconfig  string

	WorkspaceWorkers         int
	QPS                      float32
	Burst                    int
	RequestTimeout           time.Duration
	MaxMountInformers        int
	MaxClusterMountInformers int
	WorkspaceEventsPerHour   int
	MountHeartbeatTimeout    time.Duration
	// The routing options, see [workspacemounts.RoutingOptions]; an empty
	// MaxUnavailable is no limit.
	WorkspaceCondition             bool
	WorkspaceURL                   bool
	WorkspaceConditionDelay        time.Duration
	MaxUnavailable                 string
	LegacyMountAnnotation          bool
	WorkspaceURLAllowInternalHosts bool
	WorkspaceURLAllowedHosts       []string
	MountURLContract               string

	RunController       bool
	RunVirtualWorkspace bool
	VirtualWorkspace    *apiserver.Options

	// MetricsBindAddress "0" serves no metrics and no health endpoints.
	MetricsBindAddress string
	Profiling          bool
	LeaderElection     LeaderElectionOptions
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

// The sections of `workspacemounts start --help`, in their order; the
// command adds [SectionLogging].
const (
	SectionKCP            = "connection to kcp"
	SectionController     = "controller"
	SectionRouting        = "routing"
	SectionServing        = "serving"
	SectionAuthentication = "authentication"
	SectionAuthorization  = "authorization"
	SectionShares         = "shares"
	SectionMetrics        = "metrics and leader election"
	SectionLogging        = "logging"
)

// Flags registers the options in the sections of `--help`, as
// metrics-server does; the virtual workspace's flags go by their names.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	for _, name := range []string{SectionKCP, SectionController, SectionRouting, SectionServing, SectionAuthentication, SectionAuthorization, SectionShares, SectionMetrics} {
		fss.FlagSet(name)
	}
	fs := fss.FlagSet(SectionKCP)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the kcp shard, whose credentials read and patch Workspaces and read mount objects across all clusters.")
	fs.StringVar(&o.Context, "context", o.Context, "The --kubeconfig context to use; the current context if empty.")
	fs.StringVar(&o.RootKubeconfig, "root-kubeconfig", o.RootKubeconfig, "Instead of --kubeconfig, for a sharded kcp: kubeconfig of the root shard, with --shards-kubeconfig.")
	fs.StringVar(&o.ShardsKubeconfig, "shards-kubeconfig", o.ShardsKubeconfig, "With --root-kubeconfig: kubeconfig whose credentials every shard accepts, its server replaced by each Shard's baseURL.")
	fs.BoolVar(&o.AllShards, "all-shards", o.AllShards, "Serve every shard of a sharded kcp with --kubeconfig, which reaches the root shard with credentials every shard accepts.")
	fs.StringVar(&o.ShardExternalURL, "shard-external-url", o.ShardExternalURL, "Ignored: a flag of kcp's own virtual workspaces that kcp-operator passes.")
	fs.StringVar(&o.CacheKubeconfig, "cache-kubeconfig", o.CacheKubeconfig, "Ignored: a flag of kcp's own virtual workspaces that kcp-operator passes.")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Queries per second to kcp, across all clients.")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of queries to kcp above --kube-api-qps.")
	fs.DurationVar(&o.RequestTimeout, "kcp-request-timeout", o.RequestTimeout, "Timeout of each request of the controller to kcp.")

	fs = fss.FlagSet(SectionController)
	fs.BoolVar(&o.RunController, "run-controller", o.RunController, "Run the controller that writes the mount status annotations.")
	fs.IntVar(&o.WorkspaceWorkers, "workspace-workers", o.WorkspaceWorkers, "Workers of each shard's controller, each patching one Workspace at a time.")
	fs.IntVar(&o.MaxMountInformers, "max-mount-informers", o.MaxMountInformers, "Most mount resources the controller watches; Workspaces mounting more get reason MountInformerLimitReached.")
	fs.IntVar(&o.MaxClusterMountInformers, "max-cluster-mount-informers", o.MaxClusterMountInformers, "Most full-object informers of CRD mount resources in one cluster each; beyond it, a GET per change.")
	fs.IntVar(&o.WorkspaceEventsPerHour, "max-workspace-events-per-hour", o.WorkspaceEventsPerHour, "Most events the controller records regarding one Workspace in any hour; 0 records none.")
	fs.DurationVar(&o.MountHeartbeatTimeout, "mount-heartbeat-timeout", o.MountHeartbeatTimeout, "A mount whose heartbeat is older is phase Unknown, reason "+mount.ReasonMountHeartbeatExpired+"; 0 is off.")
	fs.BoolVar(&o.LegacyMountAnnotation, "legacy-mount-annotation", o.LegacyMountAnnotation, "Also mount a Workspace without spec.mount by the annotation "+mount.LegacyAnnotationKey+" of kcp up to v0.27.")

	fs = fss.FlagSet(SectionRouting)
	fs.BoolVar(&o.WorkspaceCondition, "workspace-condition", o.WorkspaceCondition, "Also keep the condition "+mount.ConditionType+" on every mounted Workspace, which takes a mount that is not ready out of traffic.")
	fs.DurationVar(&o.WorkspaceConditionDelay, "workspace-condition-delay", o.WorkspaceConditionDelay, "How long a mount must be not ready before its condition turns False; meanwhile reason "+mount.ReasonGateDelayed+".")
	fs.StringVar(&o.MaxUnavailable, "max-unavailable", o.MaxUnavailable, "Most Workspaces of a shard whose condition may be False at once, a number or a percentage; empty: no limit.")
	fs.BoolVar(&o.WorkspaceURL, "workspace-url", o.WorkspaceURL, "Also set spec.URL of every mounted Workspace to its mount's routable URL, as kcp's in-tree mounts controller, which must be off.")
	fs.BoolVar(&o.WorkspaceURLAllowInternalHosts, "workspace-url-allow-internal-hosts", o.WorkspaceURLAllowInternalHosts, "With --workspace-url, also route mounts to loopback, link-local and unspecified addresses and the shards' hosts.")
	fs.StringSliceVar(&o.WorkspaceURLAllowedHosts, "workspace-url-allowed-hosts", o.WorkspaceURLAllowedHosts, "With --workspace-url, route mounts only to these CIDRs, addresses and DNS names; empty: any host that is not internal.")
	fs.StringVar(&o.MountURLContract, "mount-url-contract", o.MountURLContract, "Which mount URLs levels 1 and 2 call routable: https, legacy, or auto by each shard's kcp release.")

	fs = fss.FlagSet(SectionServing)
	fs.BoolVar(&o.RunVirtualWorkspace, "run-virtual-workspace", o.RunVirtualWorkspace, "Serve the workspacemounts virtual workspace.")
	virtual := pflag.NewFlagSet("", pflag.ContinueOnError)
	o.VirtualWorkspace.AddFlags(virtual)
	virtual.VisitAll(func(f *pflag.Flag) { fss.FlagSet(virtualWorkspaceSection(f.Name)).AddFlag(f) })

	fs = fss.FlagSet(SectionMetrics)
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address serving /metrics, /healthz, /livez and /readyz on plain HTTP; 0 turns it off.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Also serve net/http/pprof under /debug/pprof/ on --metrics-bind-address; never route it to tenants.")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "Elect one replica to run the writing controller, through a Lease; every replica serves the virtual workspace and metrics.")
	fs.StringVar(&le.Cluster, "leader-election-cluster", le.Cluster, "Workspace path (or logical cluster) holding the Lease.")
	fs.StringVar(&le.Namespace, "leader-election-namespace", le.Namespace, "Namespace of the Lease.")
	fs.StringVar(&le.ID, "leader-election-id", le.ID, "Name of the Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-election-lease-duration", le.LeaseDuration, "How long a replica waits, after the last renewal it saw, before it takes the lease over.")
	fs.DurationVar(&le.RenewDeadline, "leader-election-renew-deadline", le.RenewDeadline, "How long the leader keeps trying to renew before it gives up.")
	fs.DurationVar(&le.RetryPeriod, "leader-election-retry-period", le.RetryPeriod, "How often replicas try to acquire or renew the lease.")
	return fss
}

// virtualWorkspaceSection is the section of a flag of [apiserver.Options].
func virtualWorkspaceSection(name string) string {
	switch {
	case strings.HasPrefix(name, "authentication-"), strings.HasPrefix(name, "requestheader-"), name == "client-ca-file":
		return SectionAuthentication
	case strings.HasPrefix(name, "authorization-"):
		return SectionAuthorization
	case strings.HasPrefix(name, "max-"):
		return SectionShares
	}
	return SectionServing
}

// AddFlags registers every flag of [Options.Flags] on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fss := o.Flags()
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
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

// mountRule is the one rule of the process for which Workspaces are mounted.
func (o *Options) mountRule() mount.Rule {
	return mount.Rule{LegacyAnnotation: o.LegacyMountAnnotation}
}

// Sharded tells whether the options serve every Shard in root.
func (o *Options) Sharded() bool { return o.RootKubeconfig != "" || o.AllShards }

// KCPOnlyFlagsSet names the flags of kcp's own virtual workspaces that are
// set: kcp-operator passes them, the start logs that it ignores them.
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
	AllowedHosts   mount.AllowedHosts
	maxUnavailable *intstr.IntOrString // nil: no limit
}

// Complete validates the options and returns a parsed copy of them; it
// writes and logs nothing, so that a refused start says so in one line.
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

// metricsBindAddress returns addr as net.Listen takes it; an IPv6 address
// may come without brackets, as $(POD_IP):8080 expands, its port after the
// last colon.
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
