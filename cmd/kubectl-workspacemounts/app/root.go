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

// Package app is kubectl-workspacemounts, the kubectl plugin of workspacemounts, in the shape of kcp's cli: each
// command has an Options type with BindFlags, Complete, Validate and Run, and finds the virtual workspace from the
// current kubeconfig context as kcp's plugins find kcp.
package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/pkg/version"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Options are the flags every command shares: cli-runtime's kubeconfig flags, without --server and --namespace,
// and where the virtual workspace is. Complete resolves them into Target and Config.
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Server string
	All    bool

	Target Target
	Config *rest.Config
}

// NewOptions returns the options with cli-runtime's kubeconfig flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	flags := genericclioptions.NewConfigFlags(true)
	flags.APIServer, flags.Namespace = nil, nil
	return &Options{ConfigFlags: flags, IOStreams: streams}
}

// BindFlags binds the shared flags to the persistent flags of cmd.
func (o *Options) BindFlags(cmd *cobra.Command) {
	o.ConfigFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.Server, "server", "", "The virtual workspace's URL, https://<host>/services/workspacemounts[/clusters/<path>], instead of the one derived from the current context's kcp URL.")
	cmd.PersistentFlags().BoolVar(&o.All, "all", false, "Every cluster you may see (the virtual workspace at *), not the current workspace.")
}

// Complete reads the kubeconfig and resolves the target with [ResolveTarget].
func (o *Options) Complete() error {
	config, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	o.Config = config
	o.Target, err = ResolveTarget(config.Host, o.Server, o.All)
	return err
}

// requireKCP fails for a command that asks kcp when the context's server is not kcp's.
func (o *Options) requireKCP() error {
	if o.Target.KCP.Base == "" {
		_, err := ParseKCPURL(o.Config.Host)
		return fmt.Errorf("this command asks kcp for Workspaces, and the current context's server %w: switch to a context of a kcp workspace (kubectl ws)", err)
	}
	return nil
}

// command is what each command's Options implement, as in kcp's cli.
type command interface {
	BindFlags(cmd *cobra.Command)
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// newCommand runs o's Complete, Validate and Run for cmd.
func newCommand(cmd *cobra.Command, o command) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context()) // cobra's Execute sets one
	}
	o.BindFlags(cmd)
	return cmd
}

// NewCommand is kubectl-workspacemounts with its commands get, tree, why and version.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	root := &cobra.Command{
		Use:   "kubectl-workspacemounts",
		Short: "Whether the mounts of kcp Workspaces are ready, and why not",
		Long: `kubectl workspacemounts reads the workspacemounts virtual workspace of the
kcp of the current kubeconfig context: the context's server
https://<host>/clusters/<path> is kcp's, the virtual workspace is at
https://<host>/services/workspacemounts/clusters/<path> (--all: at *,
--server: elsewhere).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	o.BindFlags(root)
	versionCmd := &cobra.Command{Use: "version", Short: "Print the version", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(o.Out, "kubectl-"+version.Get().String())
			return err
		}}
	root.AddCommand(newGetCommand(o), newTreeCommand(o), newWhyCommand(o), versionCmd)
	return root
}

// scheme decodes the virtual workspace's objects.
var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(wsmv1alpha1.AddToScheme(scheme))
}

// vwClient is a REST client of the virtual workspace at one cluster segment, with the context's credentials;
// unstructured decodes as served, for get's printers.
func (o *Options) vwClient(cluster string, unstructured bool) (*rest.RESTClient, error) {
	c := rest.CopyConfig(o.Config)
	c.Host = o.Target.URL(cluster)
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if unstructured {
		c.ContentConfig = resource.UnstructuredPlusDefaultContentConfig()
	}
	c.GroupVersion = &wsmv1alpha1.SchemeGroupVersion
	if c.UserAgent == "" {
		c.UserAgent = "kubectl-workspacemounts/" + version.Get().Version
	}
	return rest.RESTClientFor(c)
}

// kcpClients are kcp's cluster-aware clients at the context's kcp base.
type kcpClients struct {
	kcp  kcpclientset.ClusterInterface
	kube kcpkubernetesclientset.ClusterInterface
}

func (o *Options) kcpClients() (kcpClients, error) {
	c := rest.CopyConfig(o.Config)
	c.Host = o.Target.KCP.Base
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return kcpClients{}, err
	}
	kcp, err := kcpclientset.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return kcpClients{}, err
	}
	kube, err := kcpkubernetesclientset.NewForConfigAndClient(c, httpClient)
	return kcpClients{kcp: kcp, kube: kube}, err
}
