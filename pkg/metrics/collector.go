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

package metrics

import (
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

const (
	mountedHelp = "Mounted Workspaces per mount phase (Ready, Initializing, Connecting, Unknown, NotFound, Invalid) and mount kind, " +
		"from the Workspace cache at scrape time. A Workspace the controller has not reached yet counts as Unknown."
	readyHelp = "Mounted Workspaces whose mount is ready (traffic can flow), per mount kind, from the Workspace cache at scrape time."
)

var (
	mountedDesc = metrics.NewDesc(namespace+"_mounted_workspaces", mountedHelp, []string{"phase", "kind"}, nil, metrics.ALPHA, "")
	readyDesc   = metrics.NewDesc(namespace+"_ready_workspaces", readyHelp, []string{"kind"}, nil, metrics.ALPHA, "")
)

// mountCollector computes the mount gauges from the Workspace cache at each
// scrape, so they cannot drift from what the Workspaces say. A Workspace's
// annotation is parsed again only when its resourceVersion changed.
type mountCollector struct {
	metrics.BaseStableCollector
	store cache.Store

	lock   sync.Mutex
	parsed map[string]parsedMount // by store key
}

type parsedMount struct {
	resourceVersion string
	mounted         bool
	kind            string
	phase           mount.Phase
	ready           bool
}

var collectorOnce sync.Once

// RegisterMountCollector registers the mounted and ready gauges over a
// Workspace informer's store. Only the first call in a process counts.
func RegisterMountCollector(store cache.Store) {
	collectorOnce.Do(func() {
		legacyregistry.CustomMustRegister(&mountCollector{store: store, parsed: map[string]parsedMount{}})
	})
}

// DescribeWithStability implements metrics.StableCollector.
func (c *mountCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- mountedDesc
	ch <- readyDesc
}

// CollectWithStability implements metrics.StableCollector.
func (c *mountCollector) CollectWithStability(ch chan<- metrics.Metric) {
	type phaseKind struct {
		phase mount.Phase
		kind  string
	}
	mounted := map[phaseKind]int{}
	ready := map[string]int{}

	c.lock.Lock()
	seen := make(map[string]bool, len(c.parsed))
	for _, obj := range c.store.List() {
		ws, ok := obj.(*tenancyv1alpha1.Workspace)
		if !ok {
			continue
		}
		key := clusterKey(ws)
		seen[key] = true
		p, found := c.parsed[key]
		if !found || p.resourceVersion != ws.ResourceVersion {
			p = parse(ws)
			c.parsed[key] = p
		}
		if !p.mounted {
			continue
		}
		mounted[phaseKind{p.phase, p.kind}]++
		if p.ready {
			ready[p.kind]++
		}
	}
	for key := range c.parsed {
		if !seen[key] {
			delete(c.parsed, key)
		}
	}
	c.lock.Unlock()

	// Every phase of every kind in use, zeros included, so that series do
	// not vanish when the last Workspace leaves a phase.
	kinds := map[string]bool{}
	for pk := range mounted {
		kinds[pk.kind] = true
	}
	for kind := range kinds {
		for _, phase := range mount.Phases {
			ch <- metrics.NewLazyConstMetric(mountedDesc, metrics.GaugeValue, float64(mounted[phaseKind{phase, kind}]), string(phase), kind)
		}
		ch <- metrics.NewLazyConstMetric(readyDesc, metrics.GaugeValue, float64(ready[kind]), kind)
	}
}

func parse(ws *tenancyv1alpha1.Workspace) parsedMount {
	p := parsedMount{resourceVersion: ws.ResourceVersion}
	if !mount.IsMounted(ws) {
		return p
	}
	p.mounted = true
	ref, _ := mount.ReferenceOf(ws)
	p.kind = ref.Kind
	p.phase = mount.PhaseUnknown
	if status, found := mount.StatusOf(ws.Annotations); found {
		p.phase, p.ready = status.Phase, status.Ready
		if p.kind == "" {
			p.kind = status.MountRef.Kind
		}
	}
	return p
}

func clusterKey(ws *tenancyv1alpha1.Workspace) string {
	key, _ := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	return key
}
