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
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kcp-dev/logicalcluster/v3"
)

// KCPOperatorFiles are the files kcp-operator mounts into the pod of a
// VirtualWorkspace and names in its arguments (KCPOperatorArgs); a test
// gives files of its own, KCPOperatorPodFiles are the operator's paths.
type KCPOperatorFiles struct {
	// ClientCAFile is the RootShard's client CA, which every shard of it
	// trusts (--client-ca-file).
	ClientCAFile string
	// ServingCertFile and ServingKeyFile are the VirtualWorkspace's serving
	// certificate (--tls-cert-file, --tls-private-key-file).
	ServingCertFile, ServingKeyFile string
	// RequestHeaderCAFile is the RootShard's request-header CA, which signs
	// the front-proxy's client certificate (--requestheader-client-ca-file).
	RequestHeaderCAFile string
	// Kubeconfig reaches the VirtualWorkspace's target (--kubeconfig): the
	// Secret of spec.kubeconfigSecretRef, e.g. of a Kubeconfig object
	// (WriteKCPOperatorKubeconfig), else the target's logical-cluster-admin
	// kubeconfig.
	Kubeconfig string
	// CacheKubeconfig is the cache server's kubeconfig
	// (--cache-kubeconfig), set when the target references a cache server;
	// "" for none.
	CacheKubeconfig string
}

// KCPOperatorPodFiles are the paths kcp-operator 406169b mounts the files
// at, for a VirtualWorkspace with spec.kubeconfigSecretRef and a cache
// server (internal/resources/compiledvirtualworkspace/deployment.go,
// getCAMountPath, getCertificateMountPath, getServerKubeconfigMountPath,
// getCacheServerKubeconfigMountPath).
var KCPOperatorPodFiles = KCPOperatorFiles{
	ClientCAFile:        "/etc/kcp/tls/ca/client/tls.crt",
	ServingCertFile:     "/etc/kcp/tls/server/tls.crt",
	ServingKeyFile:      "/etc/kcp/tls/server/tls.key",
	RequestHeaderCAFile: "/etc/kcp/tls/ca/requestheader-client/tls.crt",
	Kubeconfig:          "/etc/kcp/server-kubeconfig/kubeconfig",
	CacheKubeconfig:     "/etc/cache-server/kubeconfig/kubeconfig",
}

// KCPOperatorArgs is the one copy of the argument list kcp-operator
// generates for a VirtualWorkspace with spec.command, with files in place
// of the paths it mounts them at: getArgs in kcp-dev/kcp-operator
// internal/resources/compiledvirtualworkspace/deployment.go at commit
// 406169b (lines 383-422; the common names from internal/resources/
// resources.go, -v from internal/resources/utils/logging.go). logLevel is
// spec.logging.level (0: no -v); extraArgs are spec.extraArgs, appended
// last as the operator does, so that they override what comes before.
func KCPOperatorArgs(files KCPOperatorFiles, logLevel int, extraArgs ...string) []string {
	args := []string{
		"--client-ca-file=" + files.ClientCAFile,
		"--tls-private-key-file=" + files.ServingKeyFile,
		"--tls-cert-file=" + files.ServingCertFile,
		"--bind-address=0.0.0.0",
		"--secure-port=6443",
		"--requestheader-client-ca-file=" + files.RequestHeaderCAFile,
		"--requestheader-allowed-names=kcp-front-proxy,kcp-root-shard-proxy",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--kubeconfig=" + files.Kubeconfig,
		"--shard-external-url=https://127.0.0.1:6443",
	}
	if files.CacheKubeconfig != "" {
		args = append(args, "--cache-kubeconfig="+files.CacheKubeconfig)
	}
	if logLevel != 0 {
		args = append(args, fmt.Sprintf("-v=%d", logLevel))
	}
	return append(args, extraArgs...)
}

// WriteKCPOperatorKubeconfig writes to path the kubeconfig kcp-operator
// 406169b writes for a Kubeconfig object targeting a RootShard or a Shard
// (internal/resources/kubeconfig/secret.go, KubeconfigSecretReconciler,
// lines 83-118): the cluster and context "default" at
// <baseURL>/clusters/<workspace>, the cluster and context "base" at
// baseURL, the context "shard-base" on the cluster "base", all with one
// user (named user), and "default" current. The CA and the credentials are
// creds' (CAFile or CAData; CertFile and KeyFile, CertData and KeyData, or
// BearerToken), embedded as the operator embeds them.
func WriteKCPOperatorKubeconfig(path, baseURL string, workspace logicalcluster.Path, user string, creds *rest.Config) error {
	caData, err := fileOrData(creds.CAFile, creds.CAData)
	if err != nil {
		return err
	}
	certData, err := fileOrData(creds.CertFile, creds.CertData)
	if err != nil {
		return err
	}
	keyData, err := fileOrData(creds.KeyFile, creds.KeyData)
	if err != nil {
		return err
	}
	baseURL = strings.TrimSuffix(baseURL, "/")
	defaultURL, err := url.JoinPath(baseURL, workspace.RequestPath())
	if err != nil {
		return err
	}
	config := clientcmdapi.NewConfig()
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certData, ClientKeyData: keyData, Token: creds.BearerToken}
	config.Clusters["default"] = &clientcmdapi.Cluster{Server: defaultURL, CertificateAuthorityData: caData}
	config.Clusters["base"] = &clientcmdapi.Cluster{Server: baseURL, CertificateAuthorityData: caData}
	config.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: user}
	config.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: user}
	config.Contexts["shard-base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: user}
	config.CurrentContext = "default"
	data, err := clientcmd.Write(*config)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return WriteFileAtomic(path, data)
}

// fileOrData is the content of file if it is set, else data.
func fileOrData(file string, data []byte) ([]byte, error) {
	if file == "" {
		return data, nil
	}
	return os.ReadFile(file)
}

// KCPOperatorFiles are the files kcp-operator would mount into a
// VirtualWorkspace targeting this kcp's root shard (target.rootShardRef),
// in the operator's PKI: the client CA every shard trusts, the serving
// certificate (of the serving CA the front-proxy trusts), the
// request-header CA of the front-proxy's client certificate, the cache
// server's kubeconfig, and kubeconfig as --kubeconfig
// (WriteKCPOperatorKubeconfig at the root shard).
func (s *ShardedServer) KCPOperatorFiles(kubeconfig string) KCPOperatorFiles {
	return KCPOperatorFiles{
		ClientCAFile:        s.PKI.ClientCAFile,
		ServingCertFile:     s.PKI.ServingCertFile,
		ServingKeyFile:      s.PKI.ServingKeyFile,
		RequestHeaderCAFile: s.PKI.RequestHeaderCAFile,
		Kubeconfig:          kubeconfig,
		CacheKubeconfig:     s.kubeconfigPath("cache"),
	}
}
