//go:build e2e

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

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// urlEnv is the kcp and the plugin at level 3 (--workspace-condition
// --workspace-url) that the tests of kcp's newer URL contract share:
// the shared kcp of TestMain runs kcp's in-tree mounts controller, beside
// which level 3 is refused, so they have a kcp of their own, with the
// gate off. The first test that needs it starts it (sharedURLEnv);
// TestMain stops it (stopURLEnv). The tests keep to workspaces of their own.
type urlEnv struct {
	*condEnv
	plugin *framework.Plugin
	// shardAdmin is the shard admin (system:masters) at kcp's base URL:
	// kcp lets no one else change a Workspace's spec.URL.
	shardAdmin *rest.Config
}

var (
	urlEnvOnce sync.Once
	urlEnvErr  error
	urlEnvMu   sync.Mutex
	urlEnvNow  *urlEnv
)

// urlPluginFlags are the flags of the shared plugin: level 3, as
// TestWorkspaceConditionAndURL starts it, but with the plugin's host rules
// (no internal host is ever a mount's URL here).
var urlPluginFlags = []string{"--leader-elect=false", "-v=2", "--workspace-condition", "--workspace-url"}

// sharedURLEnv returns the shared urlEnv, started on first use.
func sharedURLEnv(t *testing.T) *urlEnv {
	t.Helper()
	urlEnvOnce.Do(func() {
		began := time.Now()
		e, err := startURLEnv(context.Background())
		urlEnvMu.Lock()
		urlEnvNow, urlEnvErr = e, err
		urlEnvMu.Unlock()
		if err == nil {
			t.Logf("kcp (gate WorkspaceMounts off) at %s and the plugin (%s) ready after %s",
				e.kcp.BaseURL, strings.Join(urlPluginFlags, " "), time.Since(began).Round(time.Second))
		}
	})
	require.NoError(t, urlEnvErr, "starting the kcp and the plugin of the URL contract tests")
	e := urlEnvNow
	require.NoError(t, e.plugin.CheckRunning(), "the shared plugin (log %s)", e.plugin.LogPath)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the shared plugin's log (%s):\n%s", e.plugin.LogPath, e.plugin.LogTail(40))
		}
	})
	return e
}

// startURLEnv starts a kcp with kcp's defaults (gate WorkspaceMounts off)
// and the plugin with urlPluginFlags, and waits until both are ready.
func startURLEnv(ctx context.Context) (e *urlEnv, err error) {
	dir, err := os.MkdirTemp("", "workspacemounts-url-")
	if err != nil {
		return nil, err
	}
	s, err := framework.Start(ctx, framework.Options{})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting kcp: %w", err), os.RemoveAll(dir))
	}
	e = &urlEnv{condEnv: &condEnv{kcp: s, dir: dir}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.stop())
		}
	}()
	cfg, err := s.BaseConfig("base")
	if err != nil {
		return e, err
	}
	if e.shardAdmin, err = s.BaseConfig("shard-base"); err != nil {
		return e, err
	}
	if e.c, err = newClientsOrError(cfg); err != nil {
		return e, err
	}
	if e.http, err = rest.HTTPClientFor(cfg); err != nil {
		return e, err
	}
	e.http.Timeout = 10 * time.Second
	workDir := filepath.Join(dir, "plugin")
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return e, err
	}
	e.plugin, err = framework.StartPlugin(ctx, framework.PluginOptions{
		Name: "the plugin at level 3", Kubeconfig: s.KubeconfigPath, WorkDir: workDir, ExtraArgs: urlPluginFlags,
	})
	if err != nil {
		return e, err
	}
	if err := e.plugin.WaitReady(ctx, condStartTimeout); err != nil {
		return e, fmt.Errorf("%w; last lines of its log:\n%s", err, e.plugin.LogTail(30))
	}
	return e, nil
}

// stop stops the plugin and kcp, and removes the plugin's directory.
func (e *urlEnv) stop() error {
	var errs []error
	if e.plugin != nil {
		errs = append(errs, e.plugin.Stop())
	}
	errs = append(errs, e.kcp.Stop(), os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// stopURLEnv stops the shared urlEnv if a test started it, and tells
// whether kcp and the plugin were still running until then.
func stopURLEnv() error {
	urlEnvMu.Lock()
	e := urlEnvNow
	urlEnvMu.Unlock()
	if e == nil {
		return nil
	}
	running := errors.Join(e.plugin.CheckRunning(), e.kcp.CheckRunning())
	return errors.Join(running, e.stop())
}

// newOrg creates root:<prefix>-xxxxx, serving the KubeCluster CRD, and
// returns its path and logical cluster.
func (e *urlEnv) newOrg(t *testing.T, prefix string) (logicalcluster.Path, logicalcluster.Name) {
	t.Helper()
	org := framework.UniqueName(prefix)
	cluster, _ := framework.CreateWorkspace(t, e.kcp.BaseConfigT(t, "base"), framework.RootPath, org)
	path := framework.RootPath.Join(org)
	// Served before any Workspace mounts it: kcp v0.28.1 panics otherwise.
	e.installDemoCRD(t, path)
	return path, cluster
}

// mounted creates a mount object Ready at url and a Workspace mounting it,
// both named name, in cluster.
func (e *urlEnv) mounted(t *testing.T, cluster logicalcluster.Path, name, url string) {
	t.Helper()
	e.c.createMountObject(t, cluster, kubeClusters, name, map[string]interface{}{"phase": "Ready", "URL": url})
	e.c.createMountedWorkspace(t, cluster, name, kubeClusters.ref(name))
}

// specURL returns the spec.URL of Workspace name in cluster.
func (e *urlEnv) specURL(t *testing.T, cluster logicalcluster.Path, name string) string {
	t.Helper()
	ws, err := e.c.kcp.Cluster(cluster).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return ws.Spec.URL
}

// kcpMetrics scrapes kcp's /metrics as the shard admin.
func (e *urlEnv) kcpMetrics(t *testing.T) framework.Metrics {
	t.Helper()
	client, err := rest.HTTPClientFor(e.shardAdmin)
	require.NoError(t, err)
	m, err := framework.ScrapeMetrics(context.Background(), client, e.kcp.BaseURL+"/metrics")
	require.NoError(t, err)
	return m
}

// pluginMetrics scrapes the shared plugin's /metrics.
func (e *urlEnv) pluginMetrics(t *testing.T) framework.Metrics {
	t.Helper()
	m, err := framework.ScrapeMetrics(context.Background(), opHTTP, e.plugin.MetricsURL+"/metrics")
	require.NoError(t, err)
	return m
}

// urlMountState is the status annotation of a Ready mount whose status.URL
// is url, with reason.
func urlMountState(url, reason string) mountState {
	return mountState{phase: mount.PhaseReady, ready: reason == mount.ReasonMountReady, reason: reason, url: url}
}

// newClientsOrError is newClientsFor without a test.
func newClientsOrError(cfg *rest.Config) (clients, error) {
	kcpClient, err := kcpclientset.NewForConfig(cfg)
	if err != nil {
		return clients{}, err
	}
	dynamicClient, err := kcpdynamic.NewForConfig(cfg)
	return clients{kcp: kcpClient, dynamic: dynamicClient}, err
}
