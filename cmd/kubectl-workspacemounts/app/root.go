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

// Package app builds kubectl-workspacemounts, the kubectl plugin of
// workspacemounts (kubectl workspacemounts get|tree|why): it finds the
// virtual workspace from the current kubeconfig context, as kcp's own
// plugins find kcp (cli-runtime's ConfigFlags), and prints what the virtual
// workspace and kcp serve with cli-runtime's printers.
package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/pkg/version"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

// Options are the flags every subcommand shares: the kubeconfig's (cli-runtime's
// ConfigFlags, without its --server, which is the virtual workspace's here) and
// where the virtual workspace is.
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Server is the virtual workspace's URL (--server), overriding the one
	// derived from the current context's kcp URL.
	Server string
	// All addresses every cluster the user may see (--all: the cluster segment *).
	All bool
}

// NewOptions returns the options with cli-runtime's kubeconfig flags.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	flags := genericclioptions.NewConfigFlags(true)
	// --server names the virtual workspace (Options.Server); kcp's URL is the
	// context's. No command takes a namespace.
	flags.APIServer = nil
	flags.Namespace = nil
	return &Options{ConfigFlags: flags, IOStreams: streams}
}

// NewCommand is kubectl-workspacemounts with its subcommands get, tree, why and version.
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
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.Server, "server", "", "The virtual workspace's URL, https://<host>/services/workspacemounts[/clusters/<path>], instead of the one derived from the current context's kcp URL.")
	root.PersistentFlags().BoolVar(&o.All, "all", false, "Every cluster you may see (the virtual workspace at *), not the current workspace.")
	root.AddCommand(newGetCommand(o), newTreeCommand(o), newWhyCommand(o), newVersionCommand(o))
	return root
}

func newVersionCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(o.Out, "kubectl-"+version.Get().String())
			return err
		},
	}
}

// target resolves where the requests go (ResolveTarget) from the current
// context's server and the flags.
func (o *Options) target() (Target, *rest.Config, error) {
	config, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return Target{}, nil, err
	}
	t, err := ResolveTarget(config.Host, o.Server, o.All)
	if err != nil {
		return Target{}, nil, err
	}
	return t, config, nil
}

// requireKCP fails for a command that asks kcp when the context's server is not kcp's.
func (t Target) requireKCP(config *rest.Config) error {
	if t.KCP.Base == "" {
		_, err := ParseKCPURL(config.Host)
		return fmt.Errorf("this command asks kcp for Workspaces, and the current context's server %w: switch to a context of a kcp workspace (kubectl ws)", err)
	}
	return nil
}

// scheme decodes the virtual workspace's objects and v1 Tables.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := wsmv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// vwClient is a REST client of the virtual workspace at one cluster segment,
// with the context's credentials.
func vwClient(config *rest.Config, t Target, cluster string) (*rest.RESTClient, error) {
	c := rest.CopyConfig(config)
	c.Host = t.URL(cluster)
	c.APIPath = "/apis"
	c.GroupVersion = &wsmv1alpha1.SchemeGroupVersion
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
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

func newKCPClients(config *rest.Config, t Target) (kcpClients, error) {
	c := rest.CopyConfig(config)
	c.Host = t.KCP.Base
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return kcpClients{}, err
	}
	return newKCPClientsFor(c, httpClient)
}

func newKCPClientsFor(c *rest.Config, httpClient *http.Client) (kcpClients, error) {
	kcp, err := kcpclientset.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return kcpClients{}, err
	}
	kube, err := kcpkubernetesclientset.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return kcpClients{}, err
	}
	return kcpClients{kcp: kcp, kube: kube}, nil
}

// contextOf is the command's context (ExecuteContext's: main's, cancelled on SIGINT).
func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
