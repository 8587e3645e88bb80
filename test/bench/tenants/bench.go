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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// wildcardList is the WorkspaceMount collection across all clusters.
	wildcardList = "/services/workspacemounts/clusters/*/apis/workspacemounts.io/v1alpha1/workspacemounts"
	// crdSettleTime is how long the set-up waits between the last CRD being
	// served and the first mounted Workspace.
	crdSettleTime = 15 * time.Second
)

// bench is one benchmark run against a started kcp and plugin.
type bench struct {
	kcp    *framework.Server
	plugin *framework.Plugin
	tokens tokenFile
	opts   options
	admin  adminClients
	// adminToken is kcp-admin's bearer token (root context).
	adminToken string
	// kcpClient reaches kcp as a user given by a bearer token (no client certificate).
	kcpClient *http.Client
	// kcpMetrics scrapes kcp's /metrics as the shard admin.
	kcpMetrics *http.Client
	// metricsClient scrapes the plugin's plain HTTP metrics listener.
	metricsClient *http.Client
	// clusters are the logical clusters of the cluster workspaces.
	clusters []logicalcluster.Name
	// saTokens are the --sa-tokens tokens of serviceAccountName, in the last cluster.
	saTokens []string
}

func newBench(kcp *framework.Server, plugin *framework.Plugin, tokens tokenFile, opts options) (*bench, error) {
	b := &bench{kcp: kcp, plugin: plugin, tokens: tokens, opts: opts, metricsClient: &http.Client{Timeout: 10 * time.Second}}
	base, err := kcp.BaseConfig("base")
	if err != nil {
		return nil, err
	}
	if b.admin, err = newAdminClients(base); err != nil {
		return nil, err
	}
	root, err := kcp.Config("root")
	if err != nil {
		return nil, err
	}
	b.adminToken = root.BearerToken
	anonymous := rest.AnonymousClientConfig(base)
	if b.kcpClient, err = rest.HTTPClientFor(anonymous); err != nil {
		return nil, err
	}
	b.kcpClient.Timeout = 30 * time.Second
	shardAdmin, err := kcp.BaseConfig("shard-base")
	if err != nil {
		return nil, err
	}
	if b.kcpMetrics, err = rest.HTTPClientFor(shardAdmin); err != nil {
		return nil, err
	}
	b.kcpMetrics.Timeout = 30 * time.Second
	return b, nil
}

// vwClient returns a new HTTP client, with its own connection, to the
// plugin's listener, trusting its self-signed certificate; the requests carry
// their bearer tokens themselves.
func (b *bench) vwClient() (*http.Client, error) {
	client, err := rest.HTTPClientFor(&rest.Config{Host: b.plugin.VirtualWorkspaceURL, TLSClientConfig: rest.TLSClientConfig{CAFile: b.plugin.CAFile}})
	if err != nil {
		return nil, err
	}
	client.Timeout = 30 * time.Second
	return client, nil
}

// run sets up, loads, idles and measures.
func (b *bench) run(ctx context.Context) (*result, error) {
	res := &result{opts: b.opts}
	if err := b.setup(ctx, res); err != nil {
		return nil, err
	}
	if b.opts.conns > 0 {
		if err := b.conns(ctx, res); err != nil {
			return res, err
		}
		return res, errors.Join(b.kcp.CheckRunning(), b.plugin.CheckRunning())
	}
	if err := b.load(ctx, res); err != nil {
		return res, err
	}
	logf("idling %s", b.opts.idle)
	select {
	case <-time.After(b.opts.idle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.idle = b.sampleMemory(ctx)
	return res, errors.Join(b.kcp.CheckRunning(), b.plugin.CheckRunning())
}

// setup creates the clusters, the CRD and the mounted Workspaces, grants the
// tenants and the honest user, and waits until the virtual workspace serves
// every WorkspaceMount in its final phase.
func (b *bench) setup(ctx context.Context, res *result) error {
	began := time.Now()
	b.clusters = make([]logicalcluster.Name, b.opts.clusters)
	logf("creating %d clusters with the %s CRD and %d mounted Workspaces each", b.opts.clusters, mountKind, b.opts.mountsPerCluster)
	var ready atomic.Int64
	err := benchsetup.ForEach(ctx, b.opts.clusters, setupConcurrency, func(ctx context.Context, i int) error {
		cluster, err := b.admin.CreateCluster(ctx, clusterName(i), "")
		if err != nil {
			return err
		}
		b.clusters[i] = cluster
		if n := ready.Add(1); n%20 == 0 {
			logf("%d/%d clusters ready after %s", n, b.opts.clusters, time.Since(began).Round(time.Second))
		}
		return b.admin.InstallMountCRD(ctx, cluster, mountGVR, mountKind)
	})
	if err != nil {
		return err
	}
	// kcp v0.28.1's own Workspace index maps the mount kind with a REST mapper
	// that may lag seconds behind discovery, and panics on a Workspace mounting
	// a kind it does not map yet: mount only once every CRD has settled.
	logf("all CRDs served; waiting %s before mounting", crdSettleTime)
	if !sleep(ctx, crdSettleTime) {
		return ctx.Err()
	}
	err = benchsetup.ForEach(ctx, b.opts.clusters, setupConcurrency, func(ctx context.Context, i int) error {
		return b.admin.createMountedWorkspaces(ctx, b.clusters[i], b.opts.mountsPerCluster)
	})
	if err != nil {
		return err
	}

	// Tenant i reads clusters i*g .. i*g+g-1 (modulo the clusters); the honest
	// user reads the first g clusters too.
	grants := map[int][]string{}
	for i, tenant := range b.tokens.tenants {
		for k := range b.opts.grantsPerUser {
			c := (i*b.opts.grantsPerUser + k) % b.opts.clusters
			grants[c] = append(grants[c], tenant.name)
		}
	}
	for k := range b.opts.grantsPerUser {
		grants[k] = append(grants[k], honestName)
	}
	saCluster := b.opts.clusters - 1
	if b.opts.saTokens > 0 {
		grants[saCluster] = append(grants[saCluster], serviceAccountUser)
	}
	logf("granting %d tenants %d clusters each, and the honest user %d", len(b.tokens.tenants), b.opts.grantsPerUser, b.opts.grantsPerUser)
	err = benchsetup.ForEach(ctx, b.opts.clusters, setupConcurrency, func(ctx context.Context, c int) error {
		if len(grants[c]) == 0 {
			return nil
		}
		return b.admin.grant(ctx, b.clusters[c], grants[c])
	})
	if err != nil {
		return err
	}
	// kcp's own authorization caches lag a little behind RBAC writes.
	err = benchsetup.ForEach(ctx, b.opts.clusters, setupConcurrency, func(ctx context.Context, c int) error {
		for _, name := range grants[c] {
			if name == serviceAccountUser {
				continue // below, with its tokens
			}
			if err := waitAllowed(ctx, b.kcpClient, b.kcp.BaseURL, b.clusters[c], b.tokens.byName(name).token); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	if b.opts.saTokens > 0 {
		logf("creating %d tokens of ServiceAccount %s in %s", b.opts.saTokens, serviceAccountName, b.clusters[saCluster])
		if b.saTokens, err = b.admin.serviceAccountTokens(ctx, b.clusters[saCluster], b.opts.saTokens); err != nil {
			return err
		}
		if err := waitAllowed(ctx, b.kcpClient, b.kcp.BaseURL, b.clusters[saCluster], b.saTokens[0]); err != nil {
			return err
		}
	}

	want := b.opts.clusters * b.opts.mountsPerCluster
	logf("waiting until the virtual workspace serves %d WorkspaceMounts in phase NotFound", want)
	client, err := b.vwClient()
	if err != nil {
		return err
	}
	var last string
	for {
		code, body, err := get(ctx, client, b.plugin.VirtualWorkspaceURL+wildcardList, b.adminToken)
		if err == nil && code == http.StatusOK {
			list, err := decodeMountList(body)
			if err != nil {
				return fmt.Errorf("decoding the list at *: %w", err)
			}
			settled := 0
			for _, item := range list.Items {
				if item.Status.Phase == "NotFound" {
					settled++
				}
			}
			if settled >= want {
				break
			}
			last = fmt.Sprintf("%d items, %d NotFound", len(list.Items), settled)
		} else {
			last = fmt.Sprintf("%d %v", code, err)
		}
		if err := errors.Join(b.kcp.CheckRunning(), b.plugin.CheckRunning()); err != nil {
			return err
		}
		if time.Since(began) > 3*benchsetup.ReadyTimeout {
			return fmt.Errorf("the virtual workspace does not serve %d WorkspaceMounts in phase NotFound after %s: %s", want, time.Since(began).Round(time.Second), last)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	res.setup = time.Since(began)
	logf("set-up done after %s", res.setup.Round(time.Second))
	return nil
}

// byName returns the user of that name.
func (f tokenFile) byName(name string) user {
	switch name {
	case honestName:
		return f.honest
	case flooderName:
		return f.flooder
	}
	for _, u := range f.tenants {
		if u.name == name {
			return u
		}
	}
	return user{name: name}
}

// get GETs url with a bearer token and returns the status code and body (at most 64 MiB).
func get(ctx context.Context, client *http.Client, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body, err
}
