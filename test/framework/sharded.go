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
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
)

const (
	// RootShard is the name of a ShardedServer's root shard.
	RootShard = "root"

	// frontProxyReadyPath is what the front-proxy must route before it is
	// ready: its /readyz always says ok.
	frontProxyReadyPath = "/clusters/root/apis/core.kcp.io/v1alpha1/shards"
	// cacheShardsPath is where the cache server serves what every shard
	// wrote to it, here the Shard objects.
	cacheShardsPath = "/services/cache/shards/*"
)

// ShardedOptions configures a sharded kcp started by StartSharded. The
// zero value is valid: the root shard and shard-2.
type ShardedOptions struct {
	// KCPBinary, CacheServerBinary and FrontProxyBinary are the executables
	// of kcp's commands kcp, cache-server and kcp-front-proxy, all of the same
	// kcp release (make kcp: v0.28.1 from hack/kcp, or KCP_SOURCE). Default: $KCP_BINARY,
	// $CACHE_SERVER_BINARY and $KCP_FRONT_PROXY_BINARY, else bin/kcp,
	// bin/cache-server and bin/kcp-front-proxy of the repo root (make builds them).
	KCPBinary, CacheServerBinary, FrontProxyBinary string
	// RootDir holds everything: the PKI, the kubeconfigs, each process's
	// root directory and log. Default: a new temporary directory, which Stop
	// removes. A given directory is never removed.
	RootDir string
	// Shards names the shards beside the root shard, started in this order.
	// Default (nil): "shard-2"; empty: the root shard alone.
	Shards []string
	// FeatureGates is passed to every shard as --feature-gates, e.g.
	// "WorkspaceMounts=true".
	FeatureGates string
	// Users are the users with a token (ShardedPKI.Tokens) beside AdminUser,
	// in no group. Default: "user-1" and "user-2".
	Users []string
	// ServiceMappings are front-proxy mapping entries beside kcp's own.
	ServiceMappings []ServiceMapping
	// FrontProxyPort is the front-proxy's port on 127.0.0.1. Default (0): a
	// free port.
	FrontProxyPort int
	// ShardArgs are appended to every shard's `kcp start` command line,
	// FrontProxyArgs to the front-proxy's.
	ShardArgs, FrontProxyArgs []string
}

// ServiceMapping routes the front-proxy's path /services/<Name>/ to a
// backend, as an entry of the front-proxy's --mapping-file does: the
// front-proxy authenticates the user and sends the request on with its
// client certificate (ShardedPKI.ProxyClientCertFile, by RequestHeaderCA)
// and the user in X-Remote-User, X-Remote-Group (system:masters dropped) and
// X-Remote-Extra-*. The path stays as it is.
type ServiceMapping struct {
	// Name is the path's segment after /services/, e.g. "workspacemounts".
	Name string
	// Backend is the backend's URL, e.g. https://127.0.0.1:<port>.
	Backend string
	// BackendCAFile is the CA the front-proxy trusts the backend's serving
	// certificate by. Default: ShardedPKI.ServingCAFile.
	BackendCAFile string
}

// ShardedServer is a sharded kcp on 127.0.0.1, every part a child process
// on free ports: a cache server, the root shard, further shards and a
// front-proxy in front of them, sharing one PKI made for it (ShardedPKI).
// Each shard can be stopped and started again alone (Shard's Server), and
// shards can be added (AddShard). Stop stops all.
//
// kcp-front-proxy v0.28.1 authenticates every request (anonymous ones get
// 401), but passes on the X-Remote-* headers a client sends beside the
// ones it adds: a user's token with "X-Remote-Group: system:masters" lists
// the Shards in root (measured: 200, and 403 without the header). What a
// test of access control sends through the front-proxy must not carry such
// headers; a hostile client belongs in front of a shard or the backend.
type ShardedServer struct {
	// RootDir holds the PKI (pki/), the kubeconfigs (kubeconfigs/), each
	// process's root directory (<name>/) and log (<name>.log).
	RootDir string
	// FrontProxyURL is the front-proxy's base URL, https://127.0.0.1:<port>.
	FrontProxyURL string
	// PKI is the CAs, certificates, keys and tokens, by path.
	PKI *ShardedPKI

	// AdminKubeconfigPath has the contexts "root" (the front-proxy at
	// /clusters/root) and "base" (its base URL) for AdminUser's client
	// certificate, "<shard>-base" for the same at each shard's base URL, and
	// "<user>" for each user's token at the front-proxy's /clusters/root.
	AdminKubeconfigPath string
	// RootKubeconfigPath is AdminUser at the root shard's base URL, context
	// "shard-base": a --root-kubeconfig (the front-proxy's, or a plugin's).
	RootKubeconfigPath string
	// ShardsKubeconfigPath is AdminUser at the root shard's base URL, to be
	// replaced by each Shard's spec.baseURL: a --shards-kubeconfig (the
	// front-proxy's, or a plugin's).
	ShardsKubeconfigPath string

	// CacheServer and FrontProxy are those two processes.
	CacheServer, FrontProxy *Server
	// ReadyAfter is how long StartSharded took until every part was ready.
	ReadyAfter time.Duration

	opts       ShardedOptions // completed
	ownRootDir bool
	admin      *http.Client // AdminUser's, for the readiness probes

	lock   sync.Mutex
	shards []*Shard // the root shard first, then in the order started
}

// Shard is one kcp shard of a ShardedServer. Its Server is its kcp process:
// StopProcess or Kill, StartAgain, Restart, Pause and Resume act on this
// shard alone, which keeps its ports and root directory. Its
// KubeconfigPath is kcp's own admin.kubeconfig, whose tokens only this
// shard accepts; ShardedServer.AdminConfig works on every shard.
type Shard struct {
	*Server
	// Name is the shard's name, that of its Shard object in root, which
	// kcp labels name=<Name> (OnShard selects it by that).
	Name string
}

// StartSharded starts a sharded kcp and waits until it is ready: each
// process in turn (the cache server, the root shard, the other shards, the
// front-proxy) ready, the front-proxy routing /clusters/root, and every
// Shard object in root and in the cache server, whence every shard's
// scheduler learns of it. It gives up after 3 minutes per process or when
// ctx is done, stopping what it started; the error has the tail of the log
// of what failed. The caller must call Stop.
func StartSharded(ctx context.Context, opts ShardedOptions) (*ShardedServer, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	return retryTakenPorts(opts.RootDir, func() (*ShardedServer, error) { return startSharded(ctx, opts) })
}

// complete fills in the defaults and checks the names.
func (o *ShardedOptions) complete() error {
	var err error
	if o.KCPBinary, err = findBinary(o.KCPBinary, "KCP_BINARY", "kcp", "kcp"); err != nil {
		return err
	}
	if o.CacheServerBinary, err = findBinary(o.CacheServerBinary, "CACHE_SERVER_BINARY", "cache-server", "kcp"); err != nil {
		return err
	}
	if o.FrontProxyBinary, err = findBinary(o.FrontProxyBinary, "KCP_FRONT_PROXY_BINARY", "kcp-front-proxy", "kcp"); err != nil {
		return err
	}
	if o.Shards == nil {
		o.Shards = []string{"shard-2"}
	}
	if o.Users == nil {
		o.Users = []string{"user-1", "user-2"}
	}
	for i, name := range o.Shards {
		if err := checkShardName(name, o.Shards[:i]); err != nil {
			return err
		}
	}
	users := map[string]bool{}
	for _, user := range o.Users {
		if msgs := validation.IsDNS1123Subdomain(user); len(msgs) > 0 || user == AdminUser {
			return fmt.Errorf("user %q: not a DNS-1123 subdomain other than %s: %s", user, AdminUser, strings.Join(msgs, ", "))
		}
		if users[user] {
			return fmt.Errorf("user %q is there twice", user)
		}
		users[user] = true
	}
	for _, m := range o.ServiceMappings {
		if msgs := validation.IsDNS1123Label(m.Name); len(msgs) > 0 {
			return fmt.Errorf("service mapping %q: %s", m.Name, strings.Join(msgs, ", "))
		}
	}
	return nil
}

// checkShardName checks that name can name a shard beside the root shard
// and those named taken.
func checkShardName(name string, taken []string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("shard %q: %s", name, strings.Join(msgs, ", "))
	}
	if name == RootShard || slices.Contains(taken, name) {
		return fmt.Errorf("shard %q is there twice", name)
	}
	return nil
}

// startSharded makes one attempt of StartSharded.
func startSharded(ctx context.Context, opts ShardedOptions) (*ShardedServer, error) {
	began := time.Now()
	rootDir, own, err := makeRootDir(opts.RootDir, "kcp-sharded-", "the sharded kcp")
	if err != nil {
		return nil, err
	}
	s := &ShardedServer{RootDir: rootDir, ownRootDir: own, opts: opts}
	if err := s.start(ctx); err != nil {
		return nil, startFailed(errors.Join(err, s.stopProcesses()), "the sharded kcp", rootDir, own)
	}
	s.ReadyAfter = time.Since(began)
	return s, nil
}

// start picks the ports, writes the configuration and starts every process
// in turn.
func (s *ShardedServer) start(ctx context.Context) error {
	var err error
	if s.PKI, err = newShardedPKI(filepath.Join(s.RootDir, "pki"), s.opts.Users); err != nil {
		return err
	}
	if s.admin, err = rest.HTTPClientFor(s.AdminConfig("")); err != nil {
		return fmt.Errorf("creating the admin's HTTP client: %w", err)
	}
	s.admin.Timeout = 5 * time.Second
	shardNames := append([]string{RootShard}, s.opts.Shards...)
	ports, err := freePorts(ctx, 1+3+3*len(shardNames))
	if err != nil {
		return err
	}
	if s.opts.FrontProxyPort != 0 {
		ports[0] = s.opts.FrontProxyPort
	}
	s.FrontProxyURL = localURL(ports[0])
	if s.CacheServer, err = s.newCacheServer(ports[1:4]); err != nil {
		return err
	}
	for i, name := range shardNames {
		shard, err := s.newShard(name, ports[4+3*i:7+3*i])
		if err != nil {
			return err
		}
		s.shards = append(s.shards, shard)
	}
	if err := s.writeKubeconfigs(); err != nil {
		return err
	}
	if s.FrontProxy, err = s.newFrontProxy(ports[0]); err != nil {
		return err
	}

	for _, p := range s.Processes() {
		if err := p.launch(ctx); err != nil {
			return err
		}
	}
	return s.waitForShards(ctx)
}

// waitForShards waits until root has a Shard object for every shard, and
// the cache server has them too.
func (s *ShardedServer) waitForShards(ctx context.Context) error {
	want := s.shardNames()
	slices.Sort(want)
	root, err := kcpclientset.NewForConfig(s.AdminConfig(s.shards[0].BaseURL))
	if err != nil {
		return fmt.Errorf("creating a kcp clientset for the root shard: %w", err)
	}
	cache, err := kcpclientset.NewForConfig(s.AdminConfig(s.CacheServer.BaseURL + cacheShardsPath))
	if err != nil {
		return fmt.Errorf("creating a kcp clientset for the cache server: %w", err)
	}
	where := []struct {
		name string
		list func(ctx context.Context) (*corev1alpha1.ShardList, error)
	}{
		{"root", func(ctx context.Context) (*corev1alpha1.ShardList, error) {
			return root.Cluster(RootPath).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
		}},
		{"the cache server", func(ctx context.Context) (*corev1alpha1.ShardList, error) {
			return cache.CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{}) // in all clusters
		}},
	}
	for _, w := range where {
		err := poll(ctx, readyTimeout, pollInterval, func(ctx context.Context) (bool, string) {
			shards, err := w.list(ctx)
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, shard := range shards.Items {
				got = append(got, shard.Name)
			}
			slices.Sort(got)
			return slices.Equal(got, want), fmt.Sprintf("Shards %v, not %v", got, want)
		})
		if err != nil {
			return fmt.Errorf("waiting for the Shard objects in %s: %w%s", w.name, err, s.LogTails(20))
		}
	}
	return nil
}

// AddShard starts one more shard, named name, on new ports, and waits
// until it is ready and its Shard object is in root and in the cache
// server. AdminKubeconfigPath gets its context. If the shard does not
// become ready, it is stopped, and its root directory stays.
func (s *ShardedServer) AddShard(ctx context.Context, name string) (*Shard, error) {
	if err := checkShardName(name, s.shardNames()); err != nil {
		return nil, err
	}
	ports, err := freePorts(ctx, 3)
	if err != nil {
		return nil, err
	}
	shard, err := s.newShard(name, ports)
	if err != nil {
		return nil, err
	}
	if err := shard.launch(ctx); err != nil {
		return nil, err
	}
	s.lock.Lock()
	s.shards = append(s.shards, shard)
	s.lock.Unlock()
	if err := s.writeAdminKubeconfig(); err != nil {
		return shard, err
	}
	return shard, s.waitForShards(ctx)
}

// Shards returns the shards, the root shard first, then in the order started.
func (s *ShardedServer) Shards() []*Shard {
	s.lock.Lock()
	defer s.lock.Unlock()
	return slices.Clone(s.shards)
}

// shardNames returns the names of the shards, in the order of Shards.
func (s *ShardedServer) shardNames() []string {
	shards := s.Shards()
	names := make([]string, 0, len(shards))
	for _, shard := range shards {
		names = append(names, shard.Name)
	}
	return names
}

// Shard returns the shard name, nil if there is none of that name.
func (s *ShardedServer) Shard(name string) *Shard {
	for _, shard := range s.Shards() {
		if shard.Name == name {
			return shard
		}
	}
	return nil
}

// Processes returns every process in the order started: the cache server,
// the shards, the front-proxy.
func (s *ShardedServer) Processes() []*Server {
	var processes []*Server
	if s.CacheServer != nil {
		processes = append(processes, s.CacheServer)
	}
	for _, shard := range s.Shards() {
		processes = append(processes, shard.Server)
	}
	if s.FrontProxy != nil {
		processes = append(processes, s.FrontProxy)
	}
	return processes
}

// AdminConfig returns a rest.Config for AdminUser's client certificate at
// host, e.g. a shard's BaseURL (there with the groups system:kcp:admin and
// system:masters, which wildcard requests need) or FrontProxyURL (there
// with system:kcp:admin only), with or without a /clusters/... path.
// Client-side rate limiting is relaxed (QPS 1000, burst 2000) for tests.
func (s *ShardedServer) AdminConfig(host string) *rest.Config {
	return &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   s.PKI.ServingCAFile,
			CertFile: s.PKI.AdminCertFile,
			KeyFile:  s.PKI.AdminKeyFile,
		},
		QPS:   1000,
		Burst: 2000,
	}
}

// FrontProxyConfig is AdminConfig at the front-proxy's base URL, as
// cluster-aware clients and CreateWorkspace need.
func (s *ShardedServer) FrontProxyConfig() *rest.Config {
	return s.AdminConfig(s.FrontProxyURL)
}

// UserConfig returns a rest.Config for user's token (one of
// ShardedOptions.Users, or AdminUser) at the front-proxy's base URL.
func (s *ShardedServer) UserConfig(user string) (*rest.Config, error) {
	token, ok := s.PKI.Tokens[user]
	if !ok {
		return nil, fmt.Errorf("no user %q: not one of ShardedOptions.Users", user)
	}
	return &rest.Config{
		Host:            s.FrontProxyURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.PKI.ServingCAFile},
		QPS:             1000,
		Burst:           2000,
	}, nil
}

// ShardOf returns the name of the shard that has the logical cluster,
// asking each shard directly for it: shards know only the logical clusters
// they have, by name (not by path).
func (s *ShardedServer) ShardOf(ctx context.Context, cluster logicalcluster.Name) (string, error) {
	var errs []error
	for _, shard := range s.Shards() {
		client, err := kcpclientset.NewForConfig(s.AdminConfig(shard.BaseURL))
		if err != nil {
			return "", fmt.Errorf("creating a kcp clientset for shard %s: %w", shard.Name, err)
		}
		_, err = client.Cluster(cluster.Path()).CoreV1alpha1().LogicalClusters().Get(ctx, corev1alpha1.LogicalClusterName, metav1.GetOptions{})
		switch {
		case err == nil:
			return shard.Name, nil
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("shard %s: %w", shard.Name, err))
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return "", fmt.Errorf("no shard has the logical cluster %s", cluster)
}

// CheckRunning returns nil while every process runs, else an error naming
// each that does not (as Server.CheckRunning).
func (s *ShardedServer) CheckRunning() error {
	processes := s.Processes()
	errs := make([]error, 0, len(processes))
	for _, p := range processes {
		errs = append(errs, p.CheckRunning())
	}
	return errors.Join(errs...)
}

// Memory reads the memory of every process, by name.
func (s *ShardedServer) Memory() (map[string]Memory, error) {
	memory := map[string]Memory{}
	for _, p := range s.Processes() {
		m, err := ReadMemory(p.Pid())
		if err != nil {
			return nil, fmt.Errorf("reading the memory of %s: %w", p.Name(), err)
		}
		memory[p.Name()] = m
	}
	return memory, nil
}

// LogTails formats, for a failure message, whether each process still runs
// and the last lines of its log.
func (s *ShardedServer) LogTails(lines int) LogTails {
	return LogTails{Lines: lines, Servers: s.Processes()}
}

// Stop stops every process as Server.Stop does, the front-proxy first and
// the cache server last, and removes the root directory if StartSharded
// created it. It is safe to call more than once.
func (s *ShardedServer) Stop() error {
	return errors.Join(s.stopProcesses(), removeRootDir(s.ownRootDir, s.RootDir, "the sharded kcp"))
}

// stopProcesses stops every process started, in the reverse order.
func (s *ShardedServer) stopProcesses() error {
	processes := s.Processes()
	errs := make([]error, 0, len(processes))
	for i := len(processes) - 1; i >= 0; i-- {
		if p := processes[i]; p.started() {
			errs = append(errs, p.Stop())
		}
	}
	return errors.Join(errs...)
}
