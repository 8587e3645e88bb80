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

// Command workspacemounts shows, for every mounted kcp Workspace, whether its
// mount is ready.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	logsapiv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "workspacemounts",
		Short:         "Shows, for every mounted kcp Workspace, whether its mount is ready",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newStartCommand(), newVersionCommand())
	return root
}

func newStartCommand() *cobra.Command {
	options := server.NewOptions()
	logging := logsapiv1.NewLoggingConfiguration()
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the controller that writes the mount status of every mounted Workspace as annotations",
		Long: `Run the workspacemounts controller against a kcp shard.

Every Workspace that mounts an object (spec.mount.ref, or the legacy annotation
experimental.tenancy.kcp.io/mount) gets two annotations: workspacemounts.io/phase
and workspacemounts.io/status (JSON: phase, ready, url, reason, message, mountRef,
lastTransitionTime, conditions). Nothing else is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapiv1.ValidateAndApply(logging, nil); err != nil {
				return err
			}
			if err := options.Validate(); err != nil {
				return err
			}
			ctx := klog.NewContext(cmd.Context(), klog.Background())
			return server.Run(ctx, options)
		},
	}
	options.AddFlags(cmd.Flags())
	logsapiv1.AddFlags(logging, cmd.Flags())
	return cmd
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version)
		},
	}
}
