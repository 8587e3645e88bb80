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

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	logsapiv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/doctor"
	"github.com/workspacemounts/workspacemounts/server"
)

// doctorStartFlags are the flags of start that doctor and cleanup take too.
var doctorStartFlags = []string{
	"kubeconfig", "context", "root-kubeconfig", "shards-kubeconfig", "all-shards",
	"leader-election-cluster", "leader-election-namespace", "leader-election-id",
}

// DoctorOptions are doctor's own flags.
type DoctorOptions struct {
	FrontProxyURL       string
	FrontProxyCAFile    string
	Token               string
	TokenFile           string
	VirtualWorkspaceURL string
	Output              string
	Timeout             time.Duration
}

// DoctorFlags registers the flags of `workspacemounts doctor` on fs:
// start's for kcp and the Lease, doctor's own, and logging.
func DoctorFlags(fs *pflag.FlagSet) (*server.Options, *DoctorOptions, *logsapiv1.LoggingConfiguration) {
	options := startFlagsNamed(fs, doctorStartFlags)
	d := &DoctorOptions{Output: "table", Timeout: time.Minute}
	fs.StringVar(&d.FrontProxyURL, "front-proxy-url", d.FrontProxyURL,
		"kcp's front-proxy, where tenants reach the plugin (https://...). Without it, the front-proxy's checks are skipped.")
	fs.StringVar(&d.FrontProxyCAFile, "front-proxy-ca-file", d.FrontProxyCAFile,
		"The CA of the front-proxy's serving certificate; the kubeconfig's CA if empty.")
	fs.StringVar(&d.Token, "token", d.Token, "A tenant's bearer token, sent to the front-proxy.")
	fs.StringVar(&d.TokenFile, "token-file", d.TokenFile, "A file holding a tenant's bearer token, instead of --token.")
	fs.StringVar(&d.VirtualWorkspaceURL, "virtual-workspace-url", d.VirtualWorkspaceURL,
		"The plugin's own HTTPS address (its Service, https://workspacemounts.<namespace>.svc:6443), whose serving certificate's expiry is checked. Without it, that check is skipped.")
	fs.StringVarP(&d.Output, "output", "o", d.Output, "table, or json (an array of {check, status, detail, fix}).")
	fs.DurationVar(&d.Timeout, "timeout", d.Timeout, "How long doctor may take in all.")
	logging := logsapiv1.NewLoggingConfiguration()
	logsapiv1.AddFlags(logging, fs)
	return options, d, logging
}

// Validate tells what is wrong with doctor's own flags.
func (d *DoctorOptions) Validate() error {
	var errs []error
	for flag, value := range map[string]string{"--front-proxy-url": d.FrontProxyURL, "--virtual-workspace-url": d.VirtualWorkspaceURL} {
		if value == "" {
			continue
		}
		if u, err := url.Parse(value); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s must be an https:// URL, not %q", flag, value))
		}
	}
	if d.Token != "" && d.TokenFile != "" {
		errs = append(errs, errors.New("--token and --token-file exclude each other"))
	}
	if d.FrontProxyURL == "" && (d.Token != "" || d.TokenFile != "" || d.FrontProxyCAFile != "") {
		errs = append(errs, errors.New("--token, --token-file and --front-proxy-ca-file apply with --front-proxy-url only"))
	}
	if d.Output != "table" && d.Output != "json" {
		errs = append(errs, fmt.Errorf("--output must be table or json, not %q", d.Output))
	}
	if d.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, not %s", d.Timeout))
	}
	return errors.Join(errs...)
}

func newDoctorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the installation (kcp's shards, the plugin's Lease, the front-proxy, the serving certificate) and print what to fix",
		Long: `Check, reading only, what the plugin needs of the kcp around it, and print one
row per check: CHECK, STATUS (OK, FAIL, WARN or SKIP), DETAIL and FIX.

  kcp-version             each shard's kcp release (GET /version)
  kcp-mounts-release      not v0.31.3-v0.31.5 or v0.32.1-v0.32.2, whose mounts answer 401
                          through the front-proxy (kcp-dev/kcp#4237, #4238)
  kcp-mount-url-contract  which mount URLs each shard's kcp release routes (https only from
                          v0.33, http too before) and what --mount-url-contract makes of it
  workspacemounts-gate    kcp's feature gate WorkspaceMounts on a shard (from its /metrics)
                          while the plugin runs with --workspace-url (level 3): FAIL
  plugin-lease            the leader Lease is held, and what its holder published: version,
                          level, whether it believes request headers
  front-proxy-mapping     a list through --front-proxy-url at /services/workspacemounts/...
                          is answered by the plugin's virtual workspace, not a 404
  front-proxy-identity-headers
                          the front-proxy deletes client-sent X-Remote-* (GHSA-c8w2-fgvx-vhv4;
                          v0.32.1 and later): FAIL only when the plugin believes request headers
  serving-certificate     --virtual-workspace-url presents a certificate valid for 30 days more
                          (WARN under 30 days, FAIL expired)

It exits 1 when any check is FAIL, else 0: WARN (holds for now, or cannot be
told for sure) and SKIP (a flag of doctor's not given) do not fail it.
It takes start's flags for kcp and the Lease, with the same defaults.`,
		Args: cobra.NoArgs,
	}
	options, d, logging := DoctorFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logsapiv1.ValidateAndApply(logging, nil); err != nil {
			return err
		}
		return RunDoctor(klog.NewContext(cmd.Context(), klog.Background()), options, d, cmd.OutOrStdout())
	}
	return cmd
}

// RunDoctor runs `workspacemounts doctor`: it gathers the facts, judges
// them, prints the table to out, and fails when a check is FAIL.
func RunDoctor(ctx context.Context, options *server.Options, d *DoctorOptions, out io.Writer) error {
	if err := d.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	facts, err := gatherDoctorFacts(ctx, options, d)
	if err != nil {
		return err
	}
	results := doctor.Judge(facts)
	if err := doctor.Print(out, results, d.Output); err != nil {
		return err
	}
	if failed := doctor.Failures(results); failed > 0 {
		return fmt.Errorf("%d of %d checks FAIL", failed, len(results))
	}
	return nil
}

// gatherDoctorFacts asks kcp, the front-proxy and the plugin what doctor
// judges, with the plugin's own clients of kcp.
func gatherDoctorFacts(ctx context.Context, options *server.Options, d *DoctorOptions) (doctor.Facts, error) {
	le, config, err := leaseConfig(options)
	if err != nil {
		return doctor.Facts{}, err
	}
	token := d.Token
	if d.TokenFile != "" {
		data, err := os.ReadFile(d.TokenFile)
		if err != nil {
			return doctor.Facts{}, fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	var frontProxy *http.Client
	if d.FrontProxyURL != "" {
		if frontProxy, err = frontProxyClient(*options, d.FrontProxyCAFile); err != nil {
			return doctor.Facts{}, err
		}
	}

	facts := doctor.Facts{Now: time.Now()}
	shardsCtx, cancel := context.WithTimeout(ctx, d.Timeout/3)
	targets, err := config.ListShards(shardsCtx)
	cancel()
	facts.ShardsErr = err
	for _, target := range targets {
		facts.Shards = append(facts.Shards, shardFacts(ctx, target.Name, target.BaseURL, target.Config))
	}
	lease, err := getLease(ctx, config, le)
	facts.Lease = doctor.LeaseFactsOf(leaseName(le), lease, err)
	if frontProxy != nil {
		facts.FrontProxy = doctor.FrontProxy(ctx, frontProxy, d.FrontProxyURL, token)
	}
	if d.VirtualWorkspaceURL != "" {
		facts.ServingCertificate = doctor.ServingCertificate(ctx, d.VirtualWorkspaceURL)
	}
	return facts, nil
}

// shardFacts are one shard's release and gate, asked with cfg.
func shardFacts(ctx context.Context, name, baseURL string, cfg *rest.Config) doctor.ShardFacts {
	f := doctor.ShardFacts{Name: name, BaseURL: baseURL}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		f.VersionErr, f.GateErr = err, err
		return f
	}
	discovery := client.Discovery().RESTClient()
	f.GitVersion, f.VersionErr = doctor.ShardVersion(ctx, discovery)
	gateCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f.Gate, f.GateErr = server.InTreeMountsControllerRuns(gateCtx, discovery)
	return f
}

// frontProxyClient is an HTTP client of the front-proxy that trusts caFile,
// else the kubeconfig's CA, and presents no credential of the kubeconfig's.
func frontProxyClient(o server.Options, caFile string) (*http.Client, error) {
	tls := rest.TLSClientConfig{CAFile: caFile}
	if caFile == "" {
		path, context := o.Kubeconfig, o.Context
		if o.Sharded() {
			path, context = o.RootKubeconfig, ""
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("the kubeconfig's CA, for the front-proxy: %w", err)
		}
		tls = rest.TLSClientConfig{CAFile: cfg.CAFile, CAData: cfg.CAData, Insecure: cfg.Insecure}
	}
	transport, err := rest.TransportFor(&rest.Config{TLSClientConfig: tls})
	if err != nil {
		return nil, fmt.Errorf("the front-proxy's CA: %w", err)
	}
	return &http.Client{Transport: transport}, nil
}

// startFlagsNamed registers start's flags of names on fs, with their
// definitions, and returns the options they set.
func startFlagsNamed(fs *pflag.FlagSet, names []string, more ...string) *server.Options {
	options := server.NewOptions()
	all := pflag.NewFlagSet("start", pflag.ContinueOnError)
	options.AddFlags(all)
	for _, name := range append(slices.Clone(names), more...) {
		fs.AddFlag(all.Lookup(name))
	}
	return options
}

// leaseConfig is the config of doctor and cleanup, which read the Lease and
// run no virtual workspace.
func leaseConfig(options *server.Options) (server.LeaderElectionOptions, *server.Config, error) {
	o := *options
	o.RunController, o.RunVirtualWorkspace = true, false
	o.LeaderElection.Enabled = true
	completed, err := o.Complete()
	if err != nil {
		return o.LeaderElection, nil, err
	}
	config, err := server.NewConfig(completed)
	return o.LeaderElection, config, err
}

func getLease(ctx context.Context, config *server.Config, le server.LeaderElectionOptions) (*coordinationv1.Lease, error) {
	return config.LeaseClusterClient.Cluster(logicalcluster.NewPath(le.Cluster)).CoordinationV1().Leases(le.Namespace).Get(ctx, le.ID, metav1.GetOptions{})
}

func leaseName(le server.LeaderElectionOptions) string {
	return strings.Join([]string{le.Cluster, le.Namespace, le.ID}, "/")
}
