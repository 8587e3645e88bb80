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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"k8s.io/client-go/rest"
)

// newCacheServer prepares the cache server on ports (secure, etcd client,
// etcd peer).
func (s *ShardedServer) newCacheServer(ports []int) (*Server, error) {
	const name = "cache-server"
	args := append(serverArgs(s.processDir(name), ports),
		"--tls-cert-file="+s.PKI.ServingCertFile,
		"--tls-private-key-file="+s.PKI.ServingKeyFile,
	)
	// From kcp v0.31.0 (kcp 416922b09, "Enhance inter-shard
	// authentication") the cache server refuses to start without
	// --client-ca-file and admits client certificates of system:masters
	// only; before, it has neither the flag nor any authentication. Its
	// --help tells which (it has no --version).
	if hasFlag(s.opts.CacheServerBinary, "--client-ca-file") {
		args = append(args, "--client-ca-file="+s.PKI.ClientCAFile)
	}
	return s.newPart(name, s.opts.CacheServerBinary, localURL(ports[0]), "/readyz", args)
}

// hasFlag tells whether binary lists flag in its --help; a binary whose
// --help fails is started without it, and its own start says what it lacks.
func hasFlag(binary, flag string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--help").CombinedOutput()
	return err == nil && regexp.MustCompile(`(?m)^\s+(-\w, )?`+regexp.QuoteMeta(flag)+`\b`).Match(out)
}

// newShard prepares a shard on ports (secure, etcd client, etcd peer); it
// trusts the PKI, uses the cache server and, unless it is the root shard,
// the root shard.
func (s *ShardedServer) newShard(name string, ports []int) (*Shard, error) {
	dir := s.processDir(name)
	baseURL := localURL(ports[0])
	pki := s.PKI
	args := append([]string{"start", "--shard-name=" + name, "--kubeconfig-path=" + filepath.Join(dir, "admin.kubeconfig")}, serverArgs(dir, ports)...)
	args = append(args, pki.requestHeaderArgs()...)
	args = append(args,
		"--shard-base-url="+baseURL,
		"--shard-external-url="+s.FrontProxyURL,
		"--tls-cert-file="+pki.ServingCertFile,
		"--tls-private-key-file="+pki.ServingKeyFile,
		"--client-ca-file="+pki.ClientCAFile,
		"--service-account-key-file="+pki.ServiceAccountPublicKeyFile,
		"--service-account-private-key-file="+pki.ServiceAccountKeyFile,
		"--service-account-signing-key-file="+pki.ServiceAccountKeyFile,
		"--service-account-lookup=false",
		"--token-auth-file="+pki.TokenFile,
		"--cache-kubeconfig="+s.kubeconfigPath("cache"),
		"--logical-cluster-admin-kubeconfig="+s.kubeconfigPath("logical-cluster-admin"),
		"--external-logical-cluster-admin-kubeconfig="+s.kubeconfigPath("external-logical-cluster-admin"),
		// Ends the watches of the front-proxy and of the other shards at
		// SIGTERM: without, the HTTP server waits for them after etcd has
		// stopped, and the shard does not exit.
		"--shutdown-watch-termination-grace-period=2s",
	)
	if name != RootShard {
		args = append(args, "--root-shard-kubeconfig-file="+s.kubeconfigPath("root-shard"))
	}
	if s.opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+s.opts.FeatureGates)
	}
	args = append(args, s.opts.ShardArgs...)

	server, err := s.newPart(name, s.opts.KCPBinary, baseURL, "/readyz", args)
	if err != nil {
		return nil, err
	}
	server.KubeconfigPath = filepath.Join(dir, "admin.kubeconfig")
	return &Shard{Server: server, Name: name}, nil
}

// newFrontProxy prepares the front-proxy on port, after the kubeconfigs,
// and writes its mapping file.
func (s *ShardedServer) newFrontProxy(port int) (*Server, error) {
	const name = "front-proxy"
	mappingFile := filepath.Join(s.RootDir, "front-proxy-mapping.yaml")
	if err := writeMappingFile(mappingFile, s.frontProxyMappings()); err != nil {
		return nil, err
	}
	args := append([]string{
		"--root-directory=" + s.processDir(name),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--mapping-file=" + mappingFile,
		"--root-kubeconfig=" + s.RootKubeconfigPath,
		"--shards-kubeconfig=" + s.ShardsKubeconfigPath,
		"--client-ca-file=" + s.PKI.ClientCAFile,
		"--token-auth-file=" + s.PKI.TokenFile,
		"--tls-cert-file=" + s.PKI.ServingCertFile,
		"--tls-private-key-file=" + s.PKI.ServingKeyFile,
	}, s.opts.FrontProxyArgs...)
	return s.newPart(name, s.opts.FrontProxyBinary, s.FrontProxyURL, frontProxyReadyPath, args)
}

// pathMapping is an entry of the front-proxy's --mapping-file, and of kcp's
// --miniproxy-mapping-file.
type pathMapping struct {
	Path            string `json:"path"`
	Backend         string `json:"backend"`
	BackendServerCA string `json:"backend_server_ca,omitempty"`
	ProxyClientCert string `json:"proxy_client_cert,omitempty"`
	ProxyClientKey  string `json:"proxy_client_key,omitempty"`
}

// frontProxyMappings are the entries of the front-proxy's mapping file:
// the service mappings of the options, the rest of /services/ (kcp's own
// virtual workspaces) to the root shard, and /clusters/, which the
// front-proxy routes to each workspace's shard.
func (s *ShardedServer) frontProxyMappings() []pathMapping {
	root := s.shards[0].BaseURL
	mapping := func(path, backend, backendCA string) pathMapping {
		if backendCA == "" {
			backendCA = s.PKI.ServingCAFile
		}
		return pathMapping{Path: path, Backend: backend, BackendServerCA: backendCA,
			ProxyClientCert: s.PKI.ProxyClientCertFile, ProxyClientKey: s.PKI.ProxyClientKeyFile}
	}
	mappings := make([]pathMapping, 0, len(s.opts.ServiceMappings)+2)
	for _, m := range s.opts.ServiceMappings {
		mappings = append(mappings, mapping("/services/"+m.Name+"/", m.Backend, m.BackendCAFile))
	}
	return append(mappings, mapping("/services/", root, ""), mapping("/clusters/", root, ""))
}

// miniproxyMappings are the entries of a kcp's mini front-proxy's mapping
// file for the service mappings of its Options: /services/<name>, with the
// client's own credentials.
func miniproxyMappings(services []ServiceMapping) []pathMapping {
	mappings := make([]pathMapping, 0, len(services))
	for _, m := range services {
		mappings = append(mappings, pathMapping{Path: "/services/" + m.Name, Backend: m.Backend, BackendServerCA: m.BackendCAFile})
	}
	return mappings
}

// writeMappingFile writes a mapping file with these entries.
func writeMappingFile(path string, mappings []pathMapping) error {
	data, err := yaml.Marshal(mappings)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data)
}

// newPart prepares a Server for the process name of s, with its root
// directory <RootDir>/<name> and its log <RootDir>/<name>.log, ready once
// GET readyPath answers 200 to AdminUser.
func (s *ShardedServer) newPart(name, binary, baseURL, readyPath string, args []string) (*Server, error) {
	p := newServer(name, binary, args, s.processDir(name), baseURL, filepath.Join(s.RootDir, name+".log"))
	if err := os.MkdirAll(p.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the root directory of %s: %w", name, err)
	}
	p.newProbe = func(time.Time) readinessProbe {
		return func(ctx context.Context) (bool, string) {
			return probe(ctx, s.admin, baseURL+readyPath)
		}
	}
	return p, nil
}

// writeKubeconfigs writes what the processes read and AdminKubeconfigPath.
func (s *ShardedServer) writeKubeconfigs() error {
	root := s.shards[0].BaseURL
	pki := s.PKI
	withCert := func(host, certFile, keyFile string) *rest.Config {
		return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAFile: pki.ServingCAFile, CertFile: certFile, KeyFile: keyFile}}
	}
	if err := os.MkdirAll(filepath.Dir(s.kubeconfigPath("admin")), 0o755); err != nil {
		return fmt.Errorf("creating the kubeconfig directory: %w", err)
	}
	s.RootKubeconfigPath, s.ShardsKubeconfigPath = s.kubeconfigPath("root-shard"), s.kubeconfigPath("shards")
	kubeconfigs := []struct {
		path, context string
		config        *rest.Config
	}{
		// The admin (system:masters) for a cache server that authenticates
		// (kcp v0.31.0 and later); one before it does not ask for it.
		{s.kubeconfigPath("cache"), "cache", withCert(s.CacheServer.BaseURL, pki.AdminCertFile, pki.AdminKeyFile)},
		// --root-shard-kubeconfig-file needs the context shard-base.
		{s.RootKubeconfigPath, "shard-base", s.AdminConfig(root)},
		{s.ShardsKubeconfigPath, "base", s.AdminConfig(root)},
		{s.kubeconfigPath("logical-cluster-admin"), "base",
			withCert(root, pki.logicalClusterAdminCertFile, pki.logicalClusterAdminKeyFile)},
		{s.kubeconfigPath("external-logical-cluster-admin"), "base",
			withCert(s.FrontProxyURL, pki.externalLogicalClusterAdminCertFile, pki.externalLogicalClusterAdminKeyFile)},
	}
	for _, k := range kubeconfigs {
		if err := writeKubeconfig(k.path, map[string]*rest.Config{k.context: k.config}, k.context); err != nil {
			return err
		}
	}
	s.AdminKubeconfigPath = s.kubeconfigPath("admin")
	return s.writeAdminKubeconfig()
}

// writeAdminKubeconfig writes AdminKubeconfigPath for the shards there are.
func (s *ShardedServer) writeAdminKubeconfig() error {
	contexts := map[string]*rest.Config{
		"root": s.AdminConfig(s.FrontProxyURL + RootPath.RequestPath()),
		"base": s.FrontProxyConfig(),
	}
	for _, shard := range s.Shards() {
		contexts[shard.Name+"-base"] = s.AdminConfig(shard.BaseURL)
	}
	for _, user := range s.opts.Users {
		cfg, err := s.UserConfig(user)
		if err != nil {
			return err
		}
		cfg.Host += RootPath.RequestPath()
		if _, taken := contexts[user]; taken {
			return fmt.Errorf("user %q has the name of another context of %s", user, s.AdminKubeconfigPath)
		}
		contexts[user] = cfg
	}
	return writeKubeconfig(s.AdminKubeconfigPath, contexts, "root")
}

func (s *ShardedServer) kubeconfigPath(name string) string {
	return filepath.Join(s.RootDir, "kubeconfigs", name+".kubeconfig")
}

func (s *ShardedServer) processDir(name string) string {
	return filepath.Join(s.RootDir, name)
}

func localURL(port int) string {
	return "https://127.0.0.1:" + strconv.Itoa(port)
}
