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

// Package app builds the workspacemounts command, its flags and its
// subcommands, as metrics-server's cmd/metrics-server/app does.
package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	cliflag "k8s.io/component-base/cli/flag"
	logsapiv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"

	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/server"

	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
)

// NewCommand is the workspacemounts command with its subcommands start,
// version, cleanup and doctor.
func NewCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "workspacemounts",
		Short:         "Shows, for every mounted kcp Workspace, whether its mount is ready",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newStartCommand(), newVersionCommand(), newCleanupCommand(), newDoctorCommand())
	return root
}

// StartFlags registers the flags of `workspacemounts start` on fs, and
// returns the options and the logging configuration they set.
func StartFlags(fs *pflag.FlagSet) (*server.Options, *logsapiv1.LoggingConfiguration) {
	options, logging, fss := startFlagSets()
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	return options, logging
}

// startFlagSets are the flags of `workspacemounts start` in the sections
// its help prints.
func startFlagSets() (*server.Options, *logsapiv1.LoggingConfiguration, cliflag.NamedFlagSets) {
	options := server.NewOptions()
	logging := logsapiv1.NewLoggingConfiguration()
	fss := options.Flags()
	logsapiv1.AddFlags(logging, fss.FlagSet(server.SectionLogging))
	return options, logging, fss
}

func newStartCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the controller that writes the mount status of every mounted Workspace, and the virtual workspace",
		Long: `Run workspacemounts against a kcp shard.

Every Workspace that mounts an object (spec.mount.ref, or with
--legacy-mount-annotation the legacy annotation experimental.tenancy.kcp.io/mount)
gets two annotations: workspacemounts.io/phase
and workspacemounts.io/status (JSON: phase, ready, url, reason, message, mountRef,
lastTransitionTime, conditions). With --workspace-condition it also gets the
condition WorkspaceMountAvailable, with --workspace-url its spec.URL.
Each flag is told in full in docs/flags.md.`,
		Args: cobra.NoArgs,
	}
	options, logging, fss := startFlagSets()
	for _, name := range fss.Order {
		cmd.Flags().AddFlagSet(fss.FlagSets[name])
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logsapiv1.ValidateAndApply(logging, nil); err != nil {
			return err
		}
		return Run(klog.NewContext(cmd.Context(), klog.Background()), options)
	}
	return cmd
}

// Run runs `workspacemounts start` with the options until ctx is done: it
// completes them, builds the config and the server, and runs it.
func Run(ctx context.Context, options *server.Options) error {
	completed, err := options.Complete()
	if err != nil {
		return err
	}
	config, err := server.NewConfig(completed)
	if err != nil {
		return err
	}
	s, err := server.New(config.Complete())
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit, and the Go and kcp library versions of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				fmt.Fprintln(cmd.OutOrStdout(), info)
			case "short":
				fmt.Fprintln(cmd.OutOrStdout(), info.Version)
			case "json":
				data, err := json.Marshal(info)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
			default:
				return fmt.Errorf("--output must be short or json, not %q", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "short (the version alone) or json; one line of text if empty")
	return cmd
}
