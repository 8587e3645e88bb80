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

// Package metrics defines the metrics of workspacemounts, in component-base's legacy registry
// beside k8s.io/apiserver's; docs/metrics.md says how each label is bounded.
package metrics

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/version"

	_ "k8s.io/component-base/metrics/prometheus/restclient" // rest_client_* of every client-go client
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue_* of both queues
)

const namespace = "workspacemounts"

// Reconcile results.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultRequeue = "requeue"
)

// SubjectAccessReview results.
const (
	ReviewAllowed = "allowed"
	ReviewDenied  = "denied"
	ReviewError   = "error"
)

// The reasons of events_dropped_total (docs/metrics.md).
const (
	EventDropRateLimited      = "rate_limited"
	EventDropQueueFull        = "queue_full"
	EventDropRefused          = "refused"
	EventDropUnreachable      = "unreachable"
	EventDropWorkspaceDeleted = "workspace_deleted"
	EventDropClusterSuspended = "cluster_suspended"
)

var EventDropReasons = []string{EventDropRateLimited, EventDropQueueFull, EventDropRefused, EventDropUnreachable, EventDropWorkspaceDeleted, EventDropClusterSuspended}

// Annotation patch results.
const (
	PatchApplied  = "applied"
	PatchConflict = "conflict"
	PatchError    = "error"
)

func kubeOpts(name, help string) metrics.KubeOpts {
	return metrics.KubeOpts{Namespace: namespace, Name: name, Help: help, StabilityLevel: metrics.ALPHA}
}

func counterVec(name, help string, labels ...string) *metrics.CounterVec {
	opts := metrics.CounterOpts(kubeOpts(name, help))
	return metrics.NewCounterVec(&opts, labels)
}

func gauge(name, help string) *metrics.Gauge {
	opts := metrics.GaugeOpts(kubeOpts(name, help))
	return metrics.NewGauge(&opts)
}

func gaugeVec(name, help string, labels ...string) *metrics.GaugeVec {
	opts := metrics.GaugeOpts(kubeOpts(name, help))
	return metrics.NewGaugeVec(&opts, labels)
}

func histogramOpts(name string, buckets []float64, help string) *metrics.HistogramOpts {
	return &metrics.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets, StabilityLevel: metrics.ALPHA}
}

func histogram(name string, buckets []float64, help string) *metrics.Histogram {
	return metrics.NewHistogram(histogramOpts(name, buckets, help))
}

func histogramVec(name string, buckets []float64, help string, labels ...string) *metrics.HistogramVec {
	return metrics.NewHistogramVec(histogramOpts(name, buckets, help), labels)
}

// The metrics, each described by its Help.
var (
	ReconcileTotal = counterVec("reconcile_total", "Reconciles per queue (the work queue's name: workspacemounts-mounts, keyed by mount kind; workspacemounts-workspaces, keyed by Workspace; "+
		"with /<shard> for a shard's controller) and result (success, error, requeue).", "queue", "result")
	ReconcileDuration = histogramVec("reconcile_duration_seconds", []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}, "Time one reconcile takes, per queue.", "queue")
	AnnotationPatches = counterVec("annotation_patches_total", "Patches of Workspaces: the mount status annotations, and with --workspace-url spec.URL, per result (applied, conflict, error). "+
		"A steady state adds none.", "result")
	WorkspaceStatusPatches = counterVec("workspace_status_patches_total", "Patches of the Workspace status subresource: the WorkspaceMountAvailable condition (--workspace-condition, or its removal) "+
		"and, with --workspace-url, the phase out of Scheduling; per result (applied, conflict, error). A steady state adds none.", "result")
	PhaseTransitions = counterVec("phase_transitions_total", "Mount phase changes written to Workspaces, from and to: a phase of the contract, None where there was (or is) no phase annotation, "+
		"Other for an annotation value that is no phase (written by someone else).", "from", "to")
	StatusLatency     = histogram("status_latency_seconds", []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}, "Time from a mount object change being observed to the Workspace annotation being written.")
	MountKindsWatched = gauge("mount_kinds_watched", "Mount resources (kind and version, and APIExport identity for bound ones) watched: a bound one by its informer across all clusters, "+
		"a CRD one by its informers per cluster and, while a cluster mounting it has none, its metadata informer across all clusters.")
	MountInformersDenied = gauge("mount_informers_denied", "Mount resources referenced by Workspaces that have no informer because --max-mount-informers resources are watched; "+
		"their Workspaces have reason MountInformerLimitReached.")
	ClusterMountInformers = gauge("cluster_mount_informers", "Full-object informers of a CRD mount resource in one logical cluster running, one per (resource, cluster) pair in use, "+
		"at most --max-cluster-mount-informers: their Workspaces' mount objects are read from a cache.")
	ClusterMountInformersOverLimit = gauge("cluster_mount_informers_over_limit", "(CRD mount resource, logical cluster) pairs in use without a full-object informer because --max-cluster-mount-informers run: "+
		"their Workspaces' mount objects are read with a GET per change, on their resource's metadata informer across all clusters, which runs while this is above 0.")
	MountInformersLimit = gauge("mount_informers_limit", "The most mount resources the controller watches (--max-mount-informers), "+
		"and the most kind values the mount gauges take.")
	KCPLastContact = gauge("kcp_last_contact_timestamp_seconds", "Unix time at which kcp last answered this process (any request, an HTTP status below 500; "+
		"a probe asks when nothing else did for 10s). 0 until the first answer.")
	ShardLastContact = gaugeVec("shard_last_contact_timestamp_seconds", "With a sharded kcp (--root-kubeconfig): Unix time at which the shard last answered this process (as kcp_last_contact_timestamp_seconds, "+
		"per shard). While a shard does not answer, its WorkspaceMounts are served as last known and its Workspaces are not written.", "shard")
	ShardSynced = gaugeVec("shard_synced", "With a sharded kcp (--root-kubeconfig): 1 once the shard's informer caches have synced and it is served and written, "+
		"0 while it starts; no series for a Shard deleted.", "shard")
	BuildInfo = gaugeVec("build_info", "1, labelled with the version (the VERSION file's release, or v0.1.0-N-g<sha> past it), the commit and the Go version of this "+
		"build of workspacemounts: the same as `workspacemounts version` and the virtual workspace's /version.", "version", "revision", "goversion")
	GateHeldWorkspaces = gaugeVec("gate_held_workspaces", "With --workspace-condition and --max-unavailable: Workspaces of the shard (\"\" with one shard) whose mount is not ready but whose condition "+
		"WorkspaceMountAvailable is Unknown with reason GateHeld, not False, because --max-unavailable Workspaces of the shard already have it False: "+
		"kcp keeps them Ready and routes their requests to their mounts. 0 on a replica that does not lead.", "shard")
	Leader        = gauge("leader", "1 on the replica that holds the leader lease and runs the writing controller, else 0.")
	EventsDropped = counterVec("events_dropped_total", "Events regarding Workspaces the controller did not write, by reason: rate_limited (the Workspace had --max-workspace-events-per-hour "+
		"within the last hour), queue_full (too many writes to the shard under way), refused (the shard answered with an error), "+
		"unreachable (no answer), workspace_deleted. A dropped event never fails or delays a reconcile.", "reason")
	AuthorizationReviews = counterVec("authorization_reviews_total", "SubjectAccessReviews the virtual workspace sent to kcp (answers it keeps are not counted), by result: "+
		"allowed, denied, error (kcp failed or did not answer within the review timeout).", "result")
	NotReadyDuration = histogramVec("not_ready_duration_seconds", spellBuckets, "How long a mount that had been ready was not ready, observed when it became ready again (once per such transition written), "+
		"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).", "kind", "shard")
	TimeToReady = histogramVec("time_to_ready_seconds", spellBuckets, "Time from the controller first seeing a mount not ready to its first ready state, observed then (a mount ready when first seen is not), "+
		"per mount kind ((unresolved) beyond --max-mount-informers kinds) and shard (empty with one shard).", "kind", "shard")
)

var spellBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 604800}

var registerOnce sync.Once

// Register registers the metrics once, each result and reason at 0.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(ReconcileTotal, ReconcileDuration, AnnotationPatches, WorkspaceStatusPatches, PhaseTransitions, StatusLatency,
			MountKindsWatched, MountInformersDenied, MountInformersLimit, ClusterMountInformers, ClusterMountInformersOverLimit, Leader, KCPLastContact, ShardLastContact, ShardSynced, BuildInfo,
			AuthorizationReviews, GateHeldWorkspaces, EventsDropped, NotReadyDuration, TimeToReady)
		build := version.Get()
		BuildInfo.WithLabelValues(build.Version, build.Revision, build.GoVersion).Set(1)
		for _, result := range []string{PatchApplied, PatchConflict, PatchError} {
			AnnotationPatches.WithLabelValues(result)
			WorkspaceStatusPatches.WithLabelValues(result)
		}
		for _, result := range []string{ReviewAllowed, ReviewDenied, ReviewError} {
			AuthorizationReviews.WithLabelValues(result)
		}
		for _, reason := range EventDropReasons {
			EventsDropped.WithLabelValues(reason)
		}
		MountInformersLimit.Set(float64(mountInformerLimit.Load())) // a gauge set before registration kept nothing
	})
}

var mountInformerLimit atomic.Int64

func init() {
	mountInformerLimit.Store(mount.DefaultMaxMountInformers)
}

// SetMountInformerLimit records --max-mount-informers, which also bounds the kind labels.
func SetMountInformerLimit(limit int) {
	mountInformerLimit.Store(int64(limit))
	MountInformersLimit.Set(float64(limit))
}

func MountInformerLimit() int {
	return int(mountInformerLimit.Load())
}

// ForgetShard drops the series of a shard no longer served.
func ForgetShard(shard string) {
	ShardLastContact.DeleteLabelValues(shard)
	ShardSynced.DeleteLabelValues(shard)
	GateHeldWorkspaces.DeleteLabelValues(shard)
	forgetTransitionShard(shard)
	updateMountInformers(func(byShard map[string][4]int) { delete(byShard, shard) })
}

// mountInformers are each shard's informer counts, summed by updateMountInformers.
var mountInformers = struct {
	sync.Mutex
	byShard map[string][4]int
}{byShard: map[string][4]int{}}

func updateMountInformers(update func(byShard map[string][4]int)) {
	mountInformers.Lock()
	defer mountInformers.Unlock()
	update(mountInformers.byShard)
	var total [4]int
	for _, counts := range mountInformers.byShard {
		for i := range total {
			total[i] += counts[i]
		}
	}
	for i, g := range []*metrics.Gauge{MountKindsWatched, MountInformersDenied, ClusterMountInformers, ClusterMountInformersOverLimit} {
		g.Set(float64(total[i]))
	}
}

// SetMountInformers records shard's mount informers, running and denied.
func SetMountInformers(shard string, watched, denied int) {
	updateMountInformers(func(byShard map[string][4]int) {
		counts := byShard[shard]
		counts[0], counts[1] = watched, denied
		byShard[shard] = counts
	})
}

// SetClusterMountInformers records shard's per-cluster informers, running and over the limit.
func SetClusterMountInformers(shard string, running, overLimit int) {
	updateMountInformers(func(byShard map[string][4]int) {
		counts := byShard[shard]
		counts[2], counts[3] = running, overLimit
		byShard[shard] = counts
	})
}

// SetGateHeld records the Workspaces shard's gate holds from False.
func SetGateHeld(shard string, held int) {
	GateHeldWorkspaces.WithLabelValues(shard).Set(float64(held))
}

// ObserveReconcile records one reconcile.
func ObserveReconcile(queue, result string, began time.Time) {
	ReconcileTotal.WithLabelValues(queue, result).Inc()
	ReconcileDuration.WithLabelValues(queue).Observe(time.Since(began).Seconds())
}

// ObserveTransition records a written transition's [mount.Status.NotReadySpell] or
// [mount.Status.TimeToReady].
func ObserveTransition(shard string, status mount.Status) {
	if spell, ok := status.NotReadySpell(); ok {
		NotReadyDuration.WithLabelValues(transitionKinds.label(status), shard).Observe(spell.Seconds())
	}
	if took, ok := status.TimeToReady(); ok {
		TimeToReady.WithLabelValues(transitionKinds.label(status), shard).Observe(took.Seconds())
	}
}

func forgetTransitionShard(shard string) {
	for _, histogram := range []*metrics.HistogramVec{NotReadyDuration, TimeToReady} {
		if histogram.IsCreated() {
			histogram.DeletePartialMatch(map[string]string{"shard": shard})
		}
	}
}

// The phase labels beside [mount.Phases], for no annotation and for a value that is none of them.
const (
	PhaseNone  = "None"
	PhaseOther = "Other"
)

var PhaseLabels = func() []string {
	labels := []string{PhaseNone}
	for _, phase := range mount.Phases {
		labels = append(labels, string(phase))
	}
	return append(labels, PhaseOther)
}()

// PhaseLabel is the label of a phase annotation value.
func PhaseLabel(phase string) string {
	switch {
	case phase == "":
		return PhaseNone
	case slices.Contains(mount.Phases, mount.Phase(phase)):
		return phase
	default:
		return PhaseOther
	}
}

// ObservePhaseTransition counts a phase change the controller wrote.
func ObservePhaseTransition(from, to string) {
	PhaseTransitions.WithLabelValues(PhaseLabel(from), PhaseLabel(to)).Inc()
}

// requestPathMetrics are the apiserver series that take their resource labels from the path a
// client sent.
var requestPathMetrics = []string{"apiserver_request_total", "apiserver_request_terminations_total", "apiserver_request_aborts_total"}

var routeSubresources = []string{"", "/healthz", "/livez", "/readyz", "/api", "/apis"}

// UnexpectedLabel is component-base's value for a label outside its allow list.
const UnexpectedLabel = "unexpected"

var boundRequestPathLabelsOnce sync.Once

// BoundRequestPathLabels allows requestPathMetrics only the one resource served and
// [routeSubresources]; call it once, before serving.
func BoundRequestPathLabels(group, version, resource string) {
	boundRequestPathLabelsOnce.Do(func() {
		allowed := map[string][]string{
			"group":       {"", group},
			"version":     {"", version},
			"resource":    {"", resource},
			"subresource": routeSubresources,
		}
		lists := map[string]string{}
		for _, name := range requestPathMetrics {
			for label, values := range allowed {
				lists[name+","+label] = strings.Join(values, ",")
			}
		}
		metrics.SetLabelAllowList(lists)
	})
}
