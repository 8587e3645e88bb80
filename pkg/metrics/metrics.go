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

// Package metrics defines the Prometheus metrics of workspacemounts. They are
// registered in component-base's legacy registry, the one k8s.io/apiserver
// serves its own apiserver_request_* series and the workqueue_* series from,
// so that one /metrics endpoint has everything. No metric has a per-Workspace
// label (kcp runs 10^5 Workspaces), and none carries a URL, message or name.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/version"

	// rest_client_* series of every client-go client of the process (its
	// requests to kcp: rest_client_requests_total{code,host,method}), in
	// the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	// workqueue_* series of both queues, in the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

const namespace = "workspacemounts"

// Reconcile results.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultRequeue = "requeue"
)

// SubjectAccessReview results (authorization_reviews_total).
const (
	ReviewAllowed = "allowed"
	ReviewDenied  = "denied"
	ReviewError   = "error"
)

// Why an event was dropped (events_dropped_total): every value, fixed.
const (
	// EventDropRateLimited: the Workspace had --max-workspace-events-per-hour
	// events within the last hour.
	EventDropRateLimited = "rate_limited"
	// EventDropQueueFull: as many event writes to the shard were under way
	// as the controller allows at once.
	EventDropQueueFull = "queue_full"
	// EventDropRefused: the shard answered the write with an error status
	// (forbidden, no namespace default in the Workspace's cluster, invalid,
	// too many requests, ...).
	EventDropRefused = "refused"
	// EventDropUnreachable: the write got no answer (a transport error, its
	// timeout, the controller stopping).
	EventDropUnreachable = "unreachable"
	// EventDropWorkspaceDeleted: the Workspace was deleted before its event
	// (or its series' count) was written.
	EventDropWorkspaceDeleted = "workspace_deleted"
	// EventDropClusterSuspended: the writes of events in the Workspace's
	// logical cluster failed or timed out several times in a row, and
	// that cluster's events are skipped for a while (its circuit breaker).
	EventDropClusterSuspended = "cluster_suspended"
)

// EventDropReasons are every reason label of events_dropped_total.
var EventDropReasons = []string{EventDropRateLimited, EventDropQueueFull, EventDropRefused, EventDropUnreachable, EventDropWorkspaceDeleted, EventDropClusterSuspended}

// Annotation patch results.
const (
	PatchApplied  = "applied"
	PatchConflict = "conflict"
	PatchError    = "error"
)

var (
	// ReconcileTotal counts reconciles per queue (its name, as its
	// workqueue_* series' name) and result.
	ReconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "reconcile_total",
		Help: "Reconciles per queue (the work queue's name: workspacemounts-mounts, keyed by mount kind; workspacemounts-workspaces, keyed by Workspace; " +
			"with /<shard> for a shard's controller) and result (success, error, requeue).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue", "result"})

	// ReconcileDuration times reconciles per queue.
	ReconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: namespace, Name: "reconcile_duration_seconds",
		Help:           "Time one reconcile takes, per queue.",
		Buckets:        []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})

	// AnnotationPatches counts the patches of the two annotations (and with
	// --workspace-url spec.URL) per result.
	AnnotationPatches = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "annotation_patches_total",
		Help: "Patches of Workspaces: the mount status annotations, and with --workspace-url spec.URL, per result (applied, conflict, error). " +
			"A steady state adds none.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	// WorkspaceStatusPatches counts the patches of the Workspace status
	// subresource (the condition, the phase out of Scheduling) per result.
	WorkspaceStatusPatches = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "workspace_status_patches_total",
		Help: "Patches of the Workspace status subresource: the WorkspaceMountAvailable condition (--workspace-condition, or its removal) " +
			"and, with --workspace-url, the phase out of Scheduling; per result (applied, conflict, error). A steady state adds none.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	// PhaseTransitions counts written phase changes; ObservePhaseTransition
	// maps the annotation values into PhaseLabels.
	PhaseTransitions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "phase_transitions_total",
		Help: "Mount phase changes written to Workspaces, from and to: a phase of the contract, None where there was (or is) no phase annotation, " +
			"Other for an annotation value that is no phase (written by someone else).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"from", "to"})

	// StatusLatency times a mount object change until its Workspaces show it.
	StatusLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: namespace, Name: "status_latency_seconds",
		Help:           "Time from a mount object change being observed to the Workspace annotation being written.",
		Buckets:        []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	})

	// MountKindsWatched is the number of mount resources watched.
	MountKindsWatched = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "mount_kinds_watched",
		Help: "Mount resources (kind and version, and APIExport identity for bound ones) watched: a bound one by its informer across all clusters, " +
			"a CRD one by its informers per cluster and, while a cluster mounting it has none, its metadata informer across all clusters.",
		StabilityLevel: metrics.ALPHA,
	})

	// MountInformersDenied is the number of mount resources in use left
	// without an informer by --max-mount-informers.
	MountInformersDenied = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "mount_informers_denied",
		Help: "Mount resources referenced by Workspaces that have no informer because --max-mount-informers resources are watched; " +
			"their Workspaces have reason MountInformerLimitReached.",
		StabilityLevel: metrics.ALPHA,
	})

	// ClusterMountInformers is the number of running full-object informers
	// of a CRD resource in one cluster.
	ClusterMountInformers = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "cluster_mount_informers",
		Help: "Full-object informers of a CRD mount resource in one logical cluster running, one per (resource, cluster) pair in use, " +
			"at most --max-cluster-mount-informers: their Workspaces' mount objects are read from a cache.",
		StabilityLevel: metrics.ALPHA,
	})

	// ClusterMountInformersOverLimit is the number of (CRD resource,
	// cluster) pairs in use left without a full-object informer by
	// --max-cluster-mount-informers.
	ClusterMountInformersOverLimit = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "cluster_mount_informers_over_limit",
		Help: "(CRD mount resource, logical cluster) pairs in use without a full-object informer because --max-cluster-mount-informers run: " +
			"their Workspaces' mount objects are read with a GET per change, on their resource's metadata informer across all clusters, which runs while this is above 0.",
		StabilityLevel: metrics.ALPHA,
	})

	// MountInformersLimit is --max-mount-informers; set it with SetMountInformerLimit.
	MountInformersLimit = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "mount_informers_limit",
		Help: "The most mount resources the controller watches (--max-mount-informers), " +
			"and the most kind values the mount gauges take.",
		StabilityLevel: metrics.ALPHA,
	})

	// KCPLastContact is when kcp last answered this process.
	KCPLastContact = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "kcp_last_contact_timestamp_seconds",
		Help: "Unix time at which kcp last answered this process (any request, an HTTP status below 500; " +
			"a probe asks when nothing else did for 10s). 0 until the first answer.",
		StabilityLevel: metrics.ALPHA,
	})
	// ShardLastContact is, with a sharded kcp, when each shard last answered.
	ShardLastContact = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Name: "shard_last_contact_timestamp_seconds",
		Help: "With a sharded kcp (--root-kubeconfig): Unix time at which the shard last answered this process (as kcp_last_contact_timestamp_seconds, " +
			"per shard). While a shard does not answer, its WorkspaceMounts are served as last known and its Workspaces are not written.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"shard"})
	// ShardSynced is, with a sharded kcp, 1 for each shard served.
	ShardSynced = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Name: "shard_synced",
		Help: "With a sharded kcp (--root-kubeconfig): 1 once the shard's informer caches have synced and it is served and written, " +
			"0 while it starts; no series for a Shard deleted.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"shard"})
	// BuildInfo is 1, with this build's version, commit and Go version as labels.
	BuildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "1, labelled with the version (the VERSION file's release, or v0.1.0-N-g<sha> past it), the commit and the Go version of this " +
			"build of workspacemounts: the same as `workspacemounts version` and the virtual workspace's /version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"version", "revision", "goversion"})
	// GateHeldWorkspaces is, per shard, the Workspaces whose condition
	// --max-unavailable holds from False; set with SetGateHeld.
	GateHeldWorkspaces = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: namespace, Name: "gate_held_workspaces",
		Help: "With --workspace-condition and --max-unavailable: Workspaces of the shard (\"\" with one shard) whose mount is not ready but whose condition " +
			"WorkspaceMountAvailable is Unknown with reason GateHeld, not False, because --max-unavailable Workspaces of the shard already have it False: " +
			"kcp keeps them Ready and routes their requests to their mounts. 0 on a replica that does not lead.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"shard"})
	// Leader is 1 on the replica that holds the lease.
	Leader = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: namespace, Name: "leader",
		Help:           "1 on the replica that holds the leader lease and runs the writing controller, else 0.",
		StabilityLevel: metrics.ALPHA,
	})
	// EventsDropped counts the events of Workspace transitions (and the
	// controller's other events) that were not written, by reason
	// (EventDropReasons).
	EventsDropped = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "events_dropped_total",
		Help: "Events regarding Workspaces the controller did not write, by reason: rate_limited (the Workspace had --max-workspace-events-per-hour " +
			"within the last hour), queue_full (too many writes to the shard under way), refused (the shard answered with an error), " +
			"unreachable (no answer), workspace_deleted. A dropped event never fails or delays a reconcile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})

	// AuthorizationReviews counts the SubjectAccessReviews the virtual
	// workspace sent to kcp, by result: what its users' requests cost kcp
	// beyond the answers it keeps.
	AuthorizationReviews = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: namespace, Name: "authorization_reviews_total",
		Help: "SubjectAccessReviews the virtual workspace sent to kcp (answers it keeps are not counted), by result: " +
			"allowed, denied, error (kcp failed or did not answer within the review timeout).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

var registerOnce sync.Once

// Register registers the metrics above; later calls do nothing.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(ReconcileTotal, ReconcileDuration, AnnotationPatches, WorkspaceStatusPatches, PhaseTransitions, StatusLatency,
			MountKindsWatched, MountInformersDenied, MountInformersLimit, ClusterMountInformers, ClusterMountInformersOverLimit, Leader, KCPLastContact, ShardLastContact, ShardSynced, BuildInfo,
			AuthorizationReviews, GateHeldWorkspaces, EventsDropped, NotReadyDuration, TimeToReady)
		build := version.Get()
		BuildInfo.WithLabelValues(build.Version, build.Revision, build.GoVersion).Set(1)
		// Every result from the start, at 0: a sum over both patch
		// counters (the patch errors alert) needs both series.
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
		// A gauge set before it was registered kept nothing.
		MountInformersLimit.Set(float64(mountInformerLimit.Load()))
	})
}

// mountInformerLimit is --max-mount-informers, as far as this process knows.
var mountInformerLimit atomic.Int64

func init() {
	mountInformerLimit.Store(mount.DefaultMaxMountInformers)
}

// SetMountInformerLimit records --max-mount-informers: the
// mount_informers_limit gauge, and the number of kind values the mount gauges
// take at most. The controller sets it when it is created; a process without
// it keeps mount.DefaultMaxMountInformers.
func SetMountInformerLimit(limit int) {
	mountInformerLimit.Store(int64(limit))
	MountInformersLimit.Set(float64(limit))
}

// MountInformerLimit returns what SetMountInformerLimit recorded.
func MountInformerLimit() int {
	return int(mountInformerLimit.Load())
}

// ForgetShard drops the series of a shard that is no longer served, and its
// controller's mount informers from the sums.
func ForgetShard(shard string) {
	ShardLastContact.DeleteLabelValues(shard)
	ShardSynced.DeleteLabelValues(shard)
	GateHeldWorkspaces.DeleteLabelValues(shard)
	forgetTransitionShard(shard)
	mountInformers.Lock()
	defer mountInformers.Unlock()
	delete(mountInformers.byShard, shard)
	mountInformers.publishLocked()
}

// mountInformers are the mount informer counts of each controller (one per
// shard), summed into mount_kinds_watched, mount_informers_denied,
// cluster_mount_informers and cluster_mount_informers_over_limit.
var mountInformers = mountInformerCounts{byShard: map[string]informerCounts{}}

type mountInformerCounts struct {
	sync.Mutex
	byShard map[string]informerCounts
}

// informerCounts are one controller's informers: across all clusters
// (watched, denied by --max-mount-informers) and per cluster (running, over
// --max-cluster-mount-informers).
type informerCounts struct {
	watched, denied                  int
	clusterRunning, clusterOverLimit int
}

// SetMountInformers records the mount informers of the controller of shard
// ("" with one shard): running, and denied by --max-mount-informers.
func SetMountInformers(shard string, watched, denied int) {
	mountInformers.Lock()
	defer mountInformers.Unlock()
	counts := mountInformers.byShard[shard]
	counts.watched, counts.denied = watched, denied
	mountInformers.byShard[shard] = counts
	mountInformers.publishLocked()
}

// SetClusterMountInformers records the full-object informers of CRD
// resources per cluster of the controller of shard ("" with one shard):
// running, and the pairs in use beyond --max-cluster-mount-informers.
func SetClusterMountInformers(shard string, running, overLimit int) {
	mountInformers.Lock()
	defer mountInformers.Unlock()
	counts := mountInformers.byShard[shard]
	counts.clusterRunning, counts.clusterOverLimit = running, overLimit
	mountInformers.byShard[shard] = counts
	mountInformers.publishLocked()
}

func (c *mountInformerCounts) publishLocked() {
	var total informerCounts
	for _, counts := range c.byShard {
		total.watched += counts.watched
		total.denied += counts.denied
		total.clusterRunning += counts.clusterRunning
		total.clusterOverLimit += counts.clusterOverLimit
	}
	MountKindsWatched.Set(float64(total.watched))
	MountInformersDenied.Set(float64(total.denied))
	ClusterMountInformers.Set(float64(total.clusterRunning))
	ClusterMountInformersOverLimit.Set(float64(total.clusterOverLimit))
}

// SetGateHeld records the Workspaces the controller of shard ("" with one
// shard) holds from a False condition (--max-unavailable).
func SetGateHeld(shard string, held int) {
	GateHeldWorkspaces.WithLabelValues(shard).Set(float64(held))
}

// ObserveReconcile records one reconcile.
func ObserveReconcile(queue, result string, began time.Time) {
	ReconcileTotal.WithLabelValues(queue, result).Inc()
	ReconcileDuration.WithLabelValues(queue).Observe(time.Since(began).Seconds())
}
