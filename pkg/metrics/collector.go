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
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

const (
	mountedHelp = "Mounted Workspaces per mount phase (Ready, Initializing, Connecting, Unknown, NotFound, Invalid) and mount kind, " +
		"from the Workspace cache at scrape time. A Workspace the controller has not reached yet counts as Unknown. " +
		"kind is (unresolved) where the kind is not known to resolve."
	readyHelp = "Mounted Workspaces whose mount is ready (traffic can flow), per mount kind, from the Workspace cache at scrape time."
)

// KindUnresolved is the kind label of a kind not known to resolve, or beyond the limit.
const KindUnresolved = "(unresolved)"

var (
	mountedDesc = metrics.NewDesc(namespace+"_mounted_workspaces", mountedHelp, []string{"phase", "kind"}, nil, metrics.ALPHA, "")
	readyDesc   = metrics.NewDesc(namespace+"_ready_workspaces", readyHelp, []string{"kind"}, nil, metrics.ALPHA, "")
)

// mountCollector computes the mount gauges from the Workspace cache at each scrape, its kind label
// bounded by [foldKinds] (docs/metrics.md, "Cardinality").
type mountCollector struct {
	metrics.BaseStableCollector
	store     WorkspaceLister
	rule      mount.Rule
	kindLimit func() int // --max-mount-informers: no more kinds resolve

	lock   sync.Mutex
	parsed map[string]parsedMount // by store key
}

type parsedMount struct {
	resourceVersion string
	mounted         bool
	kind            string // "" where not known to resolve
	phase           mount.Phase
	ready           bool
}

var collectorOnce sync.Once

// WorkspaceLister lists Workspaces: an informer's store, or every shard's.
type WorkspaceLister interface {
	List() []interface{}
}

// RegisterMountCollector registers the mounted and ready gauges once per process.
func RegisterMountCollector(store WorkspaceLister, rule mount.Rule) {
	collectorOnce.Do(func() {
		legacyregistry.CustomMustRegister(&mountCollector{store: store, rule: rule, kindLimit: MountInformerLimit, parsed: map[string]parsedMount{}})
	})
}

func (c *mountCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- mountedDesc
	ch <- readyDesc
}

func (c *mountCollector) CollectWithStability(ch chan<- metrics.Metric) {
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
			p = parse(c.rule, ws)
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

	mounted, ready = foldKinds(mounted, ready, c.kindLimit())

	// Zeros included, so that no series vanishes with a phase's last Workspace.
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

type phaseKind struct {
	phase mount.Phase
	kind  string
}

// foldKinds keeps the limit kinds of the most Workspaces and counts the others as [KindUnresolved].
func foldKinds(mounted map[phaseKind]int, ready map[string]int, limit int) (map[phaseKind]int, map[string]int) {
	perKind := map[string]int{}
	for pk, n := range mounted {
		if pk.kind != "" {
			perKind[pk.kind] += n
		}
	}
	kinds := slices.SortedFunc(maps.Keys(perKind), func(a, b string) int {
		return cmp.Or(cmp.Compare(perKind[b], perKind[a]), strings.Compare(a, b))
	})
	if limit >= 0 && limit < len(kinds) {
		kinds = kinds[:limit]
	}
	kept := map[string]bool{}
	for _, kind := range kinds {
		kept[kind] = true
	}
	label := func(kind string) string {
		if kept[kind] {
			return kind
		}
		return KindUnresolved
	}
	foldedMounted := make(map[phaseKind]int, len(mounted))
	for pk, n := range mounted {
		foldedMounted[phaseKind{pk.phase, label(pk.kind)}] += n
	}
	foldedReady := make(map[string]int, len(ready))
	for kind, n := range ready {
		foldedReady[label(kind)] += n
	}
	return foldedMounted, foldedReady
}

// parse counts a Workspace's kind only if its status says it resolved for this very reference.
func parse(rule mount.Rule, ws *tenancyv1alpha1.Workspace) parsedMount {
	p := parsedMount{resourceVersion: ws.ResourceVersion}
	if !rule.IsMounted(ws) {
		return p
	}
	p.mounted = true
	status := mount.CurrentStatus(ws.Annotations)
	p.phase, p.ready = status.Phase, status.Ready
	if ref, err := rule.ReferenceOf(ws); err == nil && status.KindResolved() && status.MountRef == ref {
		p.kind = ref.Kind
	}
	return p
}

func clusterKey(ws *tenancyv1alpha1.Workspace) string {
	key, _ := kcpcache.MetaClusterNamespaceKeyFunc(ws)
	return key
}

// transitionKinds bounds the kind label of series that accumulate: the first kindLimit() resolved
// kinds seen keep a value of their own for the life of the process.
var transitionKinds = &kindSet{kindLimit: MountInformerLimit, seen: map[string]bool{}}

type kindSet struct {
	kindLimit func() int

	lock sync.Mutex
	seen map[string]bool
}

func (k *kindSet) label(status mount.Status) string {
	kind := status.MountRef.Kind
	if !status.KindResolved() || kind == "" {
		return KindUnresolved
	}
	k.lock.Lock()
	defer k.lock.Unlock()
	if !k.seen[kind] {
		if len(k.seen) >= k.kindLimit() {
			return KindUnresolved
		}
		k.seen[kind] = true
	}
	return kind
}
