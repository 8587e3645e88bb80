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
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	logsapiv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/controllers/cleanup"
	"github.com/workspacemounts/workspacemounts/pkg/clients"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/server"
)

// CleanupFlags registers the flags of `workspacemounts cleanup` on fs:
// start's for kcp and the Lease, logging, and --yes.
func CleanupFlags(fs *pflag.FlagSet) (*server.Options, *logsapiv1.LoggingConfiguration, *bool) {
	options := startFlagsNamed(fs, doctorStartFlags, "leader-election-lease-duration", "leader-election-renew-deadline", "leader-election-retry-period")
	logging := logsapiv1.NewLoggingConfiguration()
	logsapiv1.AddFlags(logging, fs)
	yes := fs.Bool("yes", false, "Write; without it, cleanup only prints what it would change.")
	return options, logging, yes
}

func newCleanupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove the plugin's annotations and condition from every Workspace of every shard (a dry run without --yes)",
		Long: `Remove what workspacemounts wrote from every Workspace of every cluster of every
shard: the annotations ` + mount.PhaseAnnotationKey + ` and ` + mount.StatusAnnotationKey + `, and the
condition ` + mount.ConditionType + ` (with the phase kcp's rule then gives: a Workspace
Unavailable only for it is Ready again). spec.URL, set with --workspace-url, is
left as it is: kcp refuses to unset it ("URL cannot be unset").

Without --yes nothing is written: every Workspace that would change is printed.
It refuses to run while a plugin holds the leader Lease: stop the plugin first
(kubectl scale deployment workspacemounts --replicas=0); a plugin stopped so
releases the Lease, one killed leaves it to expire (--leader-election-lease-duration).
It then holds the Lease itself until it is done, so that a plugin started
meanwhile waits, and releases it at the end. Interrupted (SIGINT, SIGTERM, or
the Lease lost), it stops before the next Workspace and prints what it changed
and what it did not reach; run it again.
It takes start's flags for kcp and the Lease.`,
		Args: cobra.NoArgs,
	}
	options, logging, yes := CleanupFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logsapiv1.ValidateAndApply(logging, nil); err != nil {
			return err
		}
		return RunCleanup(klog.NewContext(cmd.Context(), klog.Background()), options, *yes, cmd)
	}
	return cmd
}

// RunCleanup runs `workspacemounts cleanup` with start's options, printing
// to cmd's output.
func RunCleanup(ctx context.Context, options *server.Options, yes bool, cmd *cobra.Command) error {
	le, config, err := leaseConfig(options)
	if err != nil {
		return err
	}
	getLease := func(ctx context.Context) (*coordinationv1.Lease, error) { return getLease(ctx, config, le) }
	c := &cleanup.Cleanup{
		GetLease:  getLease,
		LeaseName: leaseName(le),
		Hold: func(ctx context.Context, clean func(context.Context) error) error {
			identity, err := os.Hostname()
			if err != nil {
				return err
			}
			// Expired, client-go's elector waits for the duration written in it.
			wait := le.LeaseDuration
			if lease, err := getLease(ctx); err == nil && lease.Spec.LeaseDurationSeconds != nil {
				wait = max(wait, time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second)
			}
			return server.HoldLease(ctx, &le, config.LeaseClusterClient, "cleanup_"+identity+"_"+uuid.NewString(), wait+2*le.RetryPeriod, clean)
		},
		Shards: func(ctx context.Context) ([]cleanup.Shard, error) {
			return cleanupShards(ctx, config)
		},
		Now: time.Now,
		Out: cmd.OutOrStdout(),
		Yes: yes,
	}
	_, err = c.Run(ctx)
	return err
}

// cleanupShards are the shards of the config, each with the tenancy
// identity resolved; one that cannot be reached does not stop the others.
func cleanupShards(ctx context.Context, config *server.Config) ([]cleanup.Shard, error) {
	targets, err := config.ListShards(ctx)
	if err != nil {
		return nil, err
	}
	found := make([]cleanup.Shard, 0, len(targets))
	for _, target := range targets {
		shard, err := cleanupShard(ctx, target.Name, target.Config, config.ClientConfig)
		if err != nil {
			shard = unreachableShard(target.Name, err)
		}
		found = append(found, shard)
	}
	return found, nil
}

func unreachableShard(name string, err error) cleanup.Shard {
	return cleanup.Shard{
		Name: name,
		ListWorkspaces: func(context.Context, metav1.ListOptions) (*tenancyv1alpha1.WorkspaceList, error) {
			return nil, err
		},
	}
}

// inTreeMountsController tells whether kcp's in-tree mounts controller runs
// on the shard cfg reaches, taken to run when that cannot be told.
func inTreeMountsController(ctx context.Context, name string, cfg *rest.Config) bool {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err == nil {
		var runs bool
		if runs, err = server.InTreeMountsControllerRuns(ctx, client.Discovery().RESTClient()); err == nil {
			return runs
		}
	}
	klog.FromContext(ctx).Info("cannot tell whether kcp's in-tree mounts controller runs: its condition "+
		string(tenancyv1alpha1.MountConditionReady)+" is left as it is", "shard", cleanup.Shard{Name: name}.String(), "err", err.Error())
	return true
}

// cleanupShard is one shard's Workspaces.
func cleanupShard(ctx context.Context, name string, cfg, root *rest.Config) (cleanup.Shard, error) {
	tenancy := tenancyv1alpha1.SchemeGroupVersion.Group
	identityConfig, resolve := clients.NewConfigWithWildcardIdentities(cfg, root, map[string]string{tenancy: tenancy})
	if err := resolve(ctx); err != nil {
		return cleanup.Shard{}, fmt.Errorf("shard %q: cannot read the tenancy identity to list Workspaces across clusters: %w", name, err)
	}
	client, err := kcpclientset.NewForConfig(identityConfig)
	if err != nil {
		return cleanup.Shard{}, err
	}
	workspaces := client.TenancyV1alpha1().Workspaces()
	return cleanup.Shard{
		Name:                   name,
		InTreeMountsController: inTreeMountsController(ctx, name, cfg),
		ListWorkspaces:         workspaces.List,
		GetWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
			return workspaces.Cluster(cluster.Path()).Get(ctx, name, metav1.GetOptions{})
		},
		PatchWorkspace: func(ctx context.Context, cluster logicalcluster.Name, name string, patch []byte, subresources ...string) (*tenancyv1alpha1.Workspace, error) {
			return workspaces.Cluster(cluster.Path()).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, subresources...)
		},
	}, nil
}
