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
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

func workspace(cluster, name, kind string, status *mount.Status) *tenancyv1alpha1.Workspace {
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name: name, ResourceVersion: "1",
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
	}}
	if kind != "" {
		ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "example.io/v1", Kind: kind, Name: name}}
	}
	if status != nil {
		// What the controller writes, unless the test says otherwise.
		if status.MountRef == (mount.Reference{}) && ws.Spec.Mount != nil {
			status.MountRef = mount.Reference(ws.Spec.Mount.Reference)
		}
		if status.Reason == "" {
			switch {
			case status.Ready:
				status.Reason = mount.ReasonMountReady
			case status.Phase == mount.PhaseReady:
				status.Reason = mount.ReasonMountURLMissing
			case status.Phase == mount.PhaseNotFound:
				status.Reason = mount.ReasonMountObjectNotFound
			default:
				status.Reason = mount.ReasonMountNotReady
			}
		}
		ws.Annotations[mount.PhaseAnnotationKey] = string(status.Phase)
		ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
	}
	return ws
}

func TestMountCollector(t *testing.T) {
	t.Parallel()
	store := cache.NewStore(kcpcache.MetaClusterNamespaceKeyFunc)
	for _, ws := range []*tenancyv1alpha1.Workspace{
		workspace("c1", "ready", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true}),
		workspace("c2", "ready", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true}),
		workspace("c1", "no-url", "KubeCluster", &mount.Status{Phase: mount.PhaseReady}),
		workspace("c1", "gone", "KubeCluster", &mount.Status{Phase: mount.PhaseNotFound}),
		workspace("c1", "pending", "Tunnel", nil), // not reached by the controller yet: Unknown, and its kind not known to resolve
		workspace("c1", "plain", "", nil),         // not mounted: not counted
	} {
		require.NoError(t, store.Add(ws))
	}
	collector := &mountCollector{store: store, kindLimit: func() int { return 100 }, parsed: map[string]parsedMount{}}

	expected := `
# HELP workspacemounts_mounted_workspaces [ALPHA] ` + mountedHelp + `
# TYPE workspacemounts_mounted_workspaces gauge
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Connecting"} 0
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Initializing"} 0
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Invalid"} 0
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="NotFound"} 0
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Ready"} 0
workspacemounts_mounted_workspaces{kind="(unresolved)",phase="Unknown"} 1
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Connecting"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Initializing"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Invalid"} 0
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="NotFound"} 1
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Ready"} 3
workspacemounts_mounted_workspaces{kind="KubeCluster",phase="Unknown"} 0
# HELP workspacemounts_ready_workspaces [ALPHA] ` + readyHelp + `
# TYPE workspacemounts_ready_workspaces gauge
workspacemounts_ready_workspaces{kind="(unresolved)"} 0
workspacemounts_ready_workspaces{kind="KubeCluster"} 2
`
	require.NoError(t, testutil.CustomCollectAndCompare(collector, strings.NewReader(expected),
		"workspacemounts_mounted_workspaces", "workspacemounts_ready_workspaces"))

	// A Workspace that changes is parsed again; one that goes is forgotten.
	changed := workspace("c1", "gone", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true})
	changed.ResourceVersion = "2"
	require.NoError(t, store.Update(changed))
	require.NoError(t, store.Delete(workspace("c1", "pending", "Tunnel", nil)))
	expected = `
# HELP workspacemounts_ready_workspaces [ALPHA] ` + readyHelp + `
# TYPE workspacemounts_ready_workspaces gauge
workspacemounts_ready_workspaces{kind="KubeCluster"} 3
`
	// (A collector registers once: a fresh one, with the same parse cache.)
	collector = &mountCollector{store: store, kindLimit: collector.kindLimit, parsed: collector.parsed}
	require.NoError(t, testutil.CustomCollectAndCompare(collector, strings.NewReader(expected), "workspacemounts_ready_workspaces"))
	require.Len(t, collector.parsed, 5)
}

// TestMountCollectorLegacyAnnotation: a Workspace mounted by the legacy
// annotation alone, with what the controller wrote when it honoured it,
// counts only with a rule that honours the annotation (--legacy-mount-annotation).
func TestMountCollectorLegacyAnnotation(t *testing.T) {
	t.Parallel()
	legacy := workspace("c1", "legacy", "", &mount.Status{Phase: mount.PhaseNotFound,
		MountRef: mount.Reference{APIVersion: "example.io/v1", Kind: "Legacy", Name: "legacy"}})
	legacy.Annotations[mount.LegacyAnnotationKey] = `{"spec":{"ref":{"apiVersion":"example.io/v1","kind":"Legacy","name":"legacy"}}}`
	for _, tc := range []struct {
		rule        mount.Rule
		wantMounted int
	}{
		{rule: mount.Rule{}, wantMounted: 0},
		{rule: mount.Rule{LegacyAnnotation: true}, wantMounted: 1},
	} {
		t.Run(fmt.Sprintf("legacy annotation honoured %v", tc.rule.LegacyAnnotation), func(t *testing.T) {
			t.Parallel()
			store := cache.NewStore(kcpcache.MetaClusterNamespaceKeyFunc)
			require.NoError(t, store.Add(legacy))
			collector := &mountCollector{store: store, rule: tc.rule, kindLimit: func() int { return 100 }, parsed: map[string]parsedMount{}}
			registry := k8smetrics.NewKubeRegistry()
			registry.CustomMustRegister(collector)
			families, err := registry.Gather()
			require.NoError(t, err)
			mounted := 0.0
			for _, family := range families {
				if family.GetName() == "workspacemounts_mounted_workspaces" {
					for _, m := range family.GetMetric() {
						mounted += m.GetGauge().GetValue()
					}
				}
			}
			require.InDelta(t, float64(tc.wantMounted), mounted, 0)
		})
	}
}

// TestMountCollectorKindLabel: nothing a tenant types becomes a kind value,
// unless the controller resolved it; and there are never more than the limit.
func TestMountCollectorKindLabel(t *testing.T) {
	t.Parallel()
	resolved := func(phase mount.Phase, reason string) *mount.Status {
		return &mount.Status{Phase: phase, Reason: reason}
	}
	forStale := resolved(mount.PhaseReady, mount.ReasonMountReady)
	forStale.MountRef = mount.Reference{APIVersion: "example.io/v1", Kind: "OldKind", Name: "stale"}
	legacy := workspace("c1", "legacy", "", resolved(mount.PhaseNotFound, mount.ReasonMountObjectNotFound))
	legacy.Annotations[mount.LegacyAnnotationKey] = `{"spec":{"ref":{"apiVersion":"example.io/v1","kind":"Legacy","name":"legacy"}}}`
	ref := mount.Reference{APIVersion: "example.io/v1", Kind: "Legacy", Name: "legacy"}
	legacyStatus := mount.Status{Phase: mount.PhaseNotFound, Reason: mount.ReasonMountObjectNotFound, MountRef: ref}
	legacy.Annotations[mount.StatusAnnotationKey] = legacyStatus.Encode()
	badName := workspace("c1", "bad", "", nil)
	badName.Annotations[mount.LegacyAnnotationKey] = `{"spec":{"ref":{"apiVersion":"example.io/v1","kind":"Bad","name":"a/b"}}}`
	badName.Annotations[mount.StatusAnnotationKey] = mount.Status{Phase: mount.PhaseReady, Ready: true, Reason: mount.ReasonMountReady,
		MountRef: mount.Reference{APIVersion: "example.io/v1", Kind: "Bad", Name: "a/b"}}.Encode()

	for _, tc := range []struct {
		name     string
		ws       *tenancyv1alpha1.Workspace
		wantKind string
	}{
		{name: "resolved, ready", ws: workspace("c1", "a", "Good", resolved(mount.PhaseReady, mount.ReasonMountReady)), wantKind: "Good"},
		{name: "resolved, no URL", ws: workspace("c1", "a", "Good", resolved(mount.PhaseReady, mount.ReasonMountURLMissing)), wantKind: "Good"},
		{name: "resolved, URL refused", ws: workspace("c1", "a", "Good", resolved(mount.PhaseReady, mount.ReasonMountURLInvalid)), wantKind: "Good"},
		{name: "resolved, not ready", ws: workspace("c1", "a", "Good", resolved(mount.PhaseConnecting, mount.ReasonMountNotReady)), wantKind: "Good"},
		{name: "resolved, phase unrecognized", ws: workspace("c1", "a", "Good", resolved(mount.PhaseUnknown, mount.ReasonMountPhaseUnrecognized)), wantKind: "Good"},
		{name: "resolved, heartbeat expired", ws: workspace("c1", "a", "Good", resolved(mount.PhaseUnknown, mount.ReasonMountHeartbeatExpired)), wantKind: "Good"},
		{name: "resolved, object missing (legacy)", ws: legacy, wantKind: "Legacy"},
		{name: "kind not served", ws: workspace("c1", "a", "MadeUp", resolved(mount.PhaseInvalid, mount.ReasonMountKindUnknown)), wantKind: KindUnresolved},
		{name: "reference invalid", ws: workspace("c1", "a", "MadeUp", resolved(mount.PhaseInvalid, mount.ReasonMountReferenceInvalid)), wantKind: KindUnresolved},
		{name: "over the informer limit", ws: workspace("c1", "a", "MadeUp", resolved(mount.PhaseUnknown, mount.ReasonMountInformerLimitReached)), wantKind: KindUnresolved},
		{name: "not reached", ws: workspace("c1", "a", "MadeUp", nil), wantKind: KindUnresolved},
		{name: "a reason the collector does not know", ws: workspace("c1", "a", "MadeUp", resolved(mount.PhaseUnknown, "Pending")), wantKind: KindUnresolved},
		{name: "a status of another reference", ws: workspace("c1", "stale", "MadeUp", forStale), wantKind: KindUnresolved},
		{name: "a forged status on an invalid reference", ws: badName, wantKind: KindUnresolved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := parse(mount.Rule{LegacyAnnotation: true}, tc.ws)
			require.True(t, p.mounted)
			mounted, _ := foldKinds(map[phaseKind]int{{p.phase, p.kind}: 1}, nil, 100)
			require.Len(t, mounted, 1)
			for pk := range mounted {
				require.Equal(t, tc.wantKind, pk.kind)
			}
		})
	}
}

// TestMountCollectorCardinality: 40 Workspaces naming 40 made-up kinds give
// one kind value; forged statuses give at most the limit, plus one.
func TestMountCollectorCardinality(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		forge     bool
		limit     int
		wantKinds int
	}{
		{name: "made-up kinds, as the controller writes them", limit: 100, wantKinds: 2},
		{name: "made-up kinds, statuses forged as resolved", forge: true, limit: 5, wantKinds: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := cache.NewStore(kcpcache.MetaClusterNamespaceKeyFunc)
			require.NoError(t, store.Add(workspace("c0", "good", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true})))
			require.NoError(t, store.Add(workspace("c0", "good2", "KubeCluster", &mount.Status{Phase: mount.PhaseReady, Ready: true})))
			for i := range 40 {
				status := &mount.Status{Phase: mount.PhaseInvalid, Reason: mount.ReasonMountKindUnknown}
				if tc.forge {
					status = &mount.Status{Phase: mount.PhaseReady, Ready: true}
				}
				require.NoError(t, store.Add(workspace("c1", fmt.Sprintf("ws-%d", i), fmt.Sprintf("MadeUp%d", i), status)))
			}
			collector := &mountCollector{store: store, kindLimit: func() int { return tc.limit }, parsed: map[string]parsedMount{}}
			registry := k8smetrics.NewKubeRegistry()
			registry.CustomMustRegister(collector)
			families, err := registry.Gather()
			require.NoError(t, err)
			kinds := map[string]bool{}
			total := 0
			for _, family := range families {
				if family.GetName() != "workspacemounts_mounted_workspaces" {
					continue
				}
				for _, m := range family.GetMetric() {
					for _, label := range m.GetLabel() {
						if label.GetName() == "kind" {
							kinds[label.GetValue()] = true
						}
					}
					total += int(m.GetGauge().GetValue())
				}
			}
			require.Len(t, kinds, tc.wantKinds)
			require.True(t, kinds["KubeCluster"], "the kind of the most Workspaces is kept")
			require.True(t, kinds[KindUnresolved])
			require.Equal(t, 42, total, "folding loses no Workspace")
		})
	}
}

// TestMountInformersAcrossShards: the mount informer gauges sum the
// controllers of all shards, and a shard forgotten leaves the sums.
func TestMountInformersAcrossShards(t *testing.T) {
	t.Parallel()
	Register()
	gauge := func(g k8smetrics.GaugeMetric) float64 {
		value, err := testutil.GetGaugeMetricValue(g)
		require.NoError(t, err)
		return value
	}
	SetMountInformers("root", 3, 1)
	SetMountInformers("shard-2", 2, 0)
	require.InDelta(t, 5, gauge(MountKindsWatched), 0)
	require.InDelta(t, 1, gauge(MountInformersDenied), 0)
	SetMountInformers("shard-2", 1, 2)
	require.InDelta(t, 4, gauge(MountKindsWatched), 0)
	require.InDelta(t, 3, gauge(MountInformersDenied), 0)
	SetClusterMountInformers("root", 500, 20)
	SetClusterMountInformers("shard-2", 7, 0)
	require.InDelta(t, 507, gauge(ClusterMountInformers), 0)
	require.InDelta(t, 20, gauge(ClusterMountInformersOverLimit), 0)
	ForgetShard("shard-2")
	require.InDelta(t, 3, gauge(MountKindsWatched), 0)
	require.InDelta(t, 1, gauge(MountInformersDenied), 0)
	require.InDelta(t, 500, gauge(ClusterMountInformers), 0)
	require.InDelta(t, 20, gauge(ClusterMountInformersOverLimit), 0)
	ForgetShard("root")
	require.InDelta(t, 0, gauge(MountKindsWatched), 0)
	require.InDelta(t, 0, gauge(ClusterMountInformers), 0)
	require.InDelta(t, 0, gauge(ClusterMountInformersOverLimit), 0)
}
