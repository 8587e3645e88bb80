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

package workspacemounts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// Options are the controller's settings.
type Options struct {
	// MaxMountInformers bounds the mount resources watched
	// (--max-mount-informers): a bound one by its informer across all
	// clusters, a CRD one by its full-object informers per cluster and, while
	// a cluster mounting it has none, its metadata informer across all
	// clusters. Resources beyond it are not watched, and their Workspaces get
	// reason mount.ReasonMountInformerLimitReached until a slot frees. At
	// least 1.
	MaxMountInformers int
	// Routing is what the controller keeps beside the annotations.
	Routing RoutingOptions
	// Shard names the shard the controller writes, with a sharded kcp (one
	// controller per shard): the mount informer gauges sum them.
	Shard string
	// MountRule says which Workspaces are mounted (--legacy-mount-annotation):
	// the rule InstallIndexers was given for the same informers.
	MountRule mount.Rule
	// MaxClusterMountInformers bounds the full-object informers of CRD
	// resources in one cluster each (--max-cluster-mount-informers), one
	// per (resource, cluster) pair in use: workspacemounts-workspaces reads a
	// pair's mount objects from it instead of a GET. Pairs beyond it are
	// read with a GET per change, on their resource's metadata events. 0
	// runs none.
	MaxClusterMountInformers int
	// MaxWorkspaceEventsPerHour bounds the events regarding one Workspace
	// in any hour (--max-workspace-events-per-hour): its transitions and
	// the controller's other events (recordEvent). 0 records none.
	MaxWorkspaceEventsPerHour int
	// MountHeartbeatTimeout (--mount-heartbeat-timeout): a mount object
	// whose status carries a heartbeat older than it is Unknown, reason
	// mount.ReasonMountHeartbeatExpired (workspacemounts_heartbeat.go). 0,
	// the default, is off; else at least MinMountHeartbeatTimeout.
	MountHeartbeatTimeout time.Duration
	// WriteFence, if set, is asked before each patch of a Workspace: an
	// error refuses it (leaderfence.Fence.Allow: the leader Lease was not
	// renewed in time, another replica may lead and write). The key is
	// then tried again, as after a failed patch.
	WriteFence func() error
	// RequestTimeout bounds each request the controller makes to kcp
	// (--kcp-request-timeout): a read of a mount object or a Workspace, a
	// patch, a list of a (resource, cluster) pair's informer. A pair whose
	// reads time out is behind a breaker (mountBreaker). 0 is
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRepairsPerSecond bounds, per tenant, the writes whose only cause is
	// that the annotations on a Workspace differ from what the controller
	// last wrote there (someone else changed them); bursts of up to 10
	// times as many. 0 is DefaultMaxRepairsPerSecond.
	MaxRepairsPerSecond float64
}

// DefaultRequestTimeout is the default of --kcp-request-timeout.
const DefaultRequestTimeout = 10 * time.Second

// DefaultMaxRepairsPerSecond is the default of Options.MaxRepairsPerSecond.
const DefaultMaxRepairsPerSecond = 1

// RoutingOptions are what the controller keeps on a Workspace, beside the
// annotations, for kcp to route by. Both are off by default.
//
// kcp (v0.27 to v0.32) marks a Workspace Unavailable while any condition
// whose type starts with "Workspace" is False, and its proxies answer 503
// for it; and it sends a mounted Workspace's requests to its spec.URL, once
// its phase is past Scheduling.
type RoutingOptions struct {
	// WorkspaceCondition (--workspace-condition) keeps the condition
	// mount.ConditionType on every mounted Workspace: True when the mount is
	// ready, else False (Unknown where the controller cannot tell).
	// Without it, the controller removes the condition wherever it finds it.
	WorkspaceCondition bool
	// WorkspaceURL (--workspace-url) sets spec.URL of every Workspace with
	// spec.mount to the mount object's status.URL (kept when the mount has
	// no routable URL: kcp refuses to unset it), and moves its phase from
	// Scheduling to Ready once the mount is ready, and keeps kcp's own
	// condition WorkspaceMountReady (applyKCPMountCondition), as kcp's
	// in-tree mounts controller does: what was written against that
	// controller (kcp's TestMountsMachinery, users' scripts) waits for it.
	// Without WorkspaceURL, and with kcp's controller off, the controller
	// removes WorkspaceMountReady wherever it finds it.
	WorkspaceURL bool
	// URLs is the rule for mount URLs: its Form is --mount-url-contract's,
	// for levels 1 and 2; its host rules (--workspace-url-allow-internal-hosts,
	// --workspace-url-allowed-hosts, the shards' hosts) are for the URLs
	// spec.URL takes, always in the https form; urlRule decides which
	// applies where.
	URLs mount.URLRule
	// InTreeMountsController tells that kcp's in-tree mounts controller
	// (feature gate WorkspaceMounts) runs on the shard. It marks a Workspace
	// Ready whenever its mount object's status.phase is Ready, so the
	// condition must not be False then: kcp's two controllers would flip the
	// phase between Ready and Unavailable without end (about 70 writes a
	// second, measured on kcp v0.28.1). WorkspaceURL must be off with it.
	InTreeMountsController bool
	// ConditionDelay (--workspace-condition-delay) is how long a mount must
	// be not ready before the condition turns False; meanwhile it is
	// Unknown, reason mount.ReasonGateDelayed (workspacemounts_gate.go). 0:
	// at once.
	ConditionDelay time.Duration
	// MaxUnavailable (--max-unavailable, ParseMaxUnavailable) bounds the
	// Workspaces of the shard whose condition is False at once: a number,
	// or a percentage of its mounted Workspaces. Beyond it the condition is
	// Unknown, reason mount.ReasonGateHeld. nil: no limit.
	MaxUnavailable *intstr.IntOrString
}

// Validate tells what is wrong with the options, naming the flags of
// `workspacemounts start` that set them.
func (o Options) Validate() error {
	var errs []error
	if o.MaxMountInformers < 1 {
		errs = append(errs, fmt.Errorf("--max-mount-informers must be at least 1, not %d", o.MaxMountInformers))
	}
	if o.MaxClusterMountInformers < 0 {
		errs = append(errs, fmt.Errorf("--max-cluster-mount-informers must not be negative, not %d", o.MaxClusterMountInformers))
	}
	if o.MaxWorkspaceEventsPerHour < 0 {
		errs = append(errs, fmt.Errorf("--max-workspace-events-per-hour must not be negative (0 records no events), not %d", o.MaxWorkspaceEventsPerHour))
	}
	if o.MountHeartbeatTimeout != 0 && o.MountHeartbeatTimeout < MinMountHeartbeatTimeout {
		errs = append(errs, fmt.Errorf("--mount-heartbeat-timeout must be 0 (off) or at least %s, not %s: heartbeats are written to the second",
			MinMountHeartbeatTimeout, o.MountHeartbeatTimeout))
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("--kcp-request-timeout must not be negative, not %s", o.RequestTimeout))
	}
	if o.MaxRepairsPerSecond < 0 {
		errs = append(errs, fmt.Errorf("the repairs per tenant and second must not be negative, not %v", o.MaxRepairsPerSecond))
	}
	if o.Routing.WorkspaceURL && o.Routing.InTreeMountsController {
		errs = append(errs, errors.New("--workspace-url cannot be kept beside kcp's in-tree mounts controller, which writes spec.URL too"))
	}
	if o.Routing.ConditionDelay < 0 {
		errs = append(errs, fmt.Errorf("--workspace-condition-delay must not be negative, not %s", o.Routing.ConditionDelay))
	}
	return errors.Join(errs...)
}

// MinMountHeartbeatTimeout is the smallest --mount-heartbeat-timeout other
// than 0: heartbeats are written to the second (metav1.Time).
const MinMountHeartbeatTimeout = time.Second

// ParseMaxUnavailable parses --max-unavailable: a number of Workspaces
// (0 or more), or a percentage of the mounted Workspaces of a shard (0% to
// 100%); "" is no limit (nil).
func ParseMaxUnavailable(value string) (*intstr.IntOrString, error) {
	if value == "" {
		return nil, nil
	}
	if number, isPercent := strings.CutSuffix(value, "%"); isPercent {
		percent, err := strconv.ParseUint(number, 10, 8)
		if err != nil || percent > 100 {
			return nil, fmt.Errorf("%q is not a percentage from 0%% to 100%%", value)
		}
		v := intstr.FromString(value)
		return &v, nil
	}
	n, err := strconv.ParseUint(value, 10, 31)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a number of Workspaces (0 or more) nor a percentage of the mounted Workspaces of a shard (like 10%%)", value)
	}
	v := intstr.FromInt32(int32(n))
	return &v, nil
}

