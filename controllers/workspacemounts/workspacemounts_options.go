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
	// MaxMountInformers bounds the mount resources watched (--max-mount-informers).
	MaxMountInformers int
	// Routing is what the controller keeps beside the annotations.
	Routing RoutingOptions
	// Shard names the shard the controller writes, with a sharded kcp (one controller per shard).
	Shard string
	// MountRule says which Workspaces are mounted (--legacy-mount-annotation).
	MountRule mount.Rule
	// MaxClusterMountInformers bounds the full-object informers of CRD resources in one cluster each
	// (--max-cluster-mount-informers), one per pair in use: workspacemounts-workspaces reads a pair's mount objects
	// from it instead of a GET.
	MaxClusterMountInformers int
	// MaxWorkspaceEventsPerHour bounds the events regarding one Workspace in any hour
	// (--max-workspace-events-per-hour): its transitions and the controller's other events.
	MaxWorkspaceEventsPerHour int
	// MountHeartbeatTimeout (--mount-heartbeat-timeout) expires a mount whose heartbeat is older; 0 is off.
	MountHeartbeatTimeout time.Duration
	// WriteFence, if set, is asked before each patch of a Workspace.
	WriteFence func() error
	// RequestTimeout bounds each request the controller makes to kcp (--kcp-request-timeout).
	RequestTimeout time.Duration
	// MaxRepairsPerSecond bounds, per tenant, the writes that only undo someone else's change of the annotations.
	MaxRepairsPerSecond float64
}

// DefaultRequestTimeout is the default of --kcp-request-timeout.
const DefaultRequestTimeout = 10 * time.Second

// DefaultMaxRepairsPerSecond is the default of Options.MaxRepairsPerSecond.
const DefaultMaxRepairsPerSecond = 1

// RoutingOptions are what the controller keeps on a Workspace, beside the annotations, for kcp to route by.
type RoutingOptions struct {
	// WorkspaceCondition (--workspace-condition) keeps the condition [mount.ConditionType] on every mounted Workspace:
	// True when the mount is ready, else False (Unknown where the controller cannot tell).
	WorkspaceCondition bool
	// WorkspaceURL (--workspace-url) keeps spec.URL, the phase out of Scheduling and kcp's condition
	// WorkspaceMountReady of every Workspace with spec.mount, as kcp's in-tree mounts controller does.
	WorkspaceURL bool
	// URLs is the rule for mount URLs: its Form is --mount-url-contract's, for levels 1 and 2.
	URLs mount.URLRule
	// InTreeMountsController tells that kcp's in-tree mounts controller runs on the shard.
	InTreeMountsController bool
	// ConditionDelay (--workspace-condition-delay) is how long a mount must be not ready before the condition turns
	// False; meanwhile it is Unknown, reason [mount.ReasonGateDelayed].
	ConditionDelay time.Duration
	// MaxUnavailable (--max-unavailable) bounds the Workspaces of the shard whose condition is False; nil: no limit.
	MaxUnavailable *intstr.IntOrString
}

// Validate tells what is wrong with the options, naming the flags of `workspacemounts start` that set them.
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

// MinMountHeartbeatTimeout is the smallest --mount-heartbeat-timeout other than 0: heartbeats are written to the
// second.
const MinMountHeartbeatTimeout = time.Second

// ParseMaxUnavailable parses --max-unavailable: a number of Workspaces (0 or more), or a percentage of the mounted
// Workspaces of a shard (0% to 100%); "" is no limit.
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
