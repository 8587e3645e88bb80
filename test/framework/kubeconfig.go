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

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig to path (atomically) with one context
// for each of contexts, named by its key and with a cluster and a user of
// the same name, from the rest.Config's host, CA file, client certificate
// and key files and bearer token; current is its current context. Data in
// the rest.Config (CAData, CertData, ...) is not written.
func writeKubeconfig(path string, contexts map[string]*rest.Config, current string) error {
	if _, ok := contexts[current]; !ok {
		return fmt.Errorf("writing %s: the current context %q is not one of its contexts", path, current)
	}
	kubeconfig := clientcmdapi.NewConfig()
	for name, cfg := range contexts {
		kubeconfig.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile}
		kubeconfig.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile, Token: cfg.BearerToken}
		kubeconfig.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kubeconfig.CurrentContext = current
	data, err := clientcmd.Write(*kubeconfig)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return WriteFileAtomic(path, data)
}
