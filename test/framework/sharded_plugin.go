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

package framework

// PluginServiceName is the path segment under which the front-proxy serves
// the plugin's virtual workspace: /services/workspacemounts/.
const PluginServiceName = "workspacemounts"

// PluginServiceMapping is the front-proxy mapping of /services/workspacemounts/
// to a plugin whose virtual workspace listens on port of 127.0.0.1 (as
// ShardedServer.PluginOptions(port, ...) makes it): pick the port with
// FreePort, start the ShardedServer with this mapping, then the plugin.
func PluginServiceMapping(port int) ServiceMapping {
	return ServiceMapping{Name: PluginServiceName, Backend: localURL(port)}
}

// PluginServiceURL is where the front-proxy serves the plugin's virtual
// workspace for cluster (a logical cluster name, a workspace path or "*"):
// <FrontProxyURL>/services/workspacemounts/clusters/<cluster>.
func (s *ShardedServer) PluginServiceURL(cluster string) string {
	return s.FrontProxyURL + "/services/" + PluginServiceName + "/clusters/" + cluster
}

// PluginOptions returns the options of a plugin serving the whole sharded
// kcp behind its front-proxy's mapping PluginServiceMapping(port): it
// reads root and every shard with AdminUser's client certificate
// (RootKubeconfigPath, ShardsKubeconfigPath); its virtual workspace listens
// on port with the PKI's serving certificate, which the front-proxy trusts
// (ServiceMapping.BackendCAFile's default, ServingCAFile); it accepts the
// user in the front-proxy's X-Remote-User, X-Remote-Group and
// X-Remote-Extra-* headers from the front-proxy's client certificate only
// (RequestHeaderCAFile, common name FrontProxyClientName), and client
// certificates of ClientCAFile (AdminConfig at the plugin's own listener).
// workDir must exist; add ExtraArgs, Name or LogPath as needed.
func (s *ShardedServer) PluginOptions(port int, workDir string) PluginOptions {
	pki := s.PKI
	return PluginOptions{
		RootKubeconfig:   s.RootKubeconfigPath,
		ShardsKubeconfig: s.ShardsKubeconfigPath,
		SecurePort:       port,
		ServingCertFile:  pki.ServingCertFile,
		ServingKeyFile:   pki.ServingKeyFile,
		ServingCAFile:    pki.ServingCAFile,
		WorkDir:          workDir,
		ExtraArgs:        append([]string{"--client-ca-file=" + pki.ClientCAFile}, pki.requestHeaderArgs()...),
	}
}
