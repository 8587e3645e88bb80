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
	"fmt"
	"time"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// heartbeatField names a heartbeat of a mount object's status.
type heartbeatField uint8

const (
	heartbeatNone heartbeatField = iota
	heartbeatStatus
	heartbeatProxy
	heartbeatCondition
)

// String is the field as messages name it.
func (f heartbeatField) String() string {
	switch f {
	case heartbeatStatus:
		return "status.lastHeartbeatTime"
	case heartbeatProxy:
		return "status.lastProxyHeartbeatTime"
	case heartbeatCondition:
		return "status.conditions[*].lastHeartbeatTime"
	}
	return "no heartbeat"
}

// heartbeat is what the rule reads of a mount object: its newest heartbeat and where it is, and the first field that
// holds something that is not a time.
type heartbeat struct {
	// seconds and nanos are the newest heartbeat's time: 12 bytes, where a time.Time takes 24.
	seconds int64
	nanos   int32
	// newest is the field of the newest heartbeat, heartbeatNone if none.
	newest heartbeatField
	// unreadable is the first field, in the order below, whose value is not an RFC 3339 time.
	unreadable heartbeatField
}

// at is the newest heartbeat's time.
func (h heartbeat) at() time.Time { return time.Unix(h.seconds, int64(h.nanos)).UTC() }

// heartbeatOf reads the heartbeats of a mount object's status (its status field, any value): status.lastHeartbeatTime,
// then status.lastProxyHeartbeatTime, then each condition's lastHeartbeatTime.
func heartbeatOf(status interface{}) heartbeat {
	var h heartbeat
	fields, ok := status.(map[string]interface{})
	if !ok {
		return h
	}
	h.read(heartbeatStatus, fields, "lastHeartbeatTime")
	h.read(heartbeatProxy, fields, "lastProxyHeartbeatTime")
	if conditions, ok := fields["conditions"].([]interface{}); ok {
		for _, item := range conditions {
			if condition, ok := item.(map[string]interface{}); ok {
				h.read(heartbeatCondition, condition, "lastHeartbeatTime")
			}
		}
	}
	return h
}

// read takes the heartbeat in fields[name], as field.
func (h *heartbeat) read(field heartbeatField, fields map[string]interface{}, name string) {
	value, present := fields[name]
	if !present || value == nil || value == "" {
		return
	}
	s, _ := value.(string)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if h.unreadable == heartbeatNone {
			h.unreadable = field
		}
		return
	}
	if h.newest == heartbeatNone || t.After(h.at()) {
		h.newest, h.seconds, h.nanos = field, t.Unix(), int32(t.Nanosecond()) //nolint:gosec // G115: a nanosecond is under 1e9.
	}
}

// restore writes h into a status rebuilt from a trimmed mount object, so that [heartbeatOf] reads h from it again: the
// newest heartbeat in its field, and a value that is no time in the unreadable field.
func (h heartbeat) restore(status map[string]interface{}) {
	put := func(field heartbeatField, value interface{}) {
		switch field {
		case heartbeatStatus:
			status["lastHeartbeatTime"] = value
		case heartbeatProxy:
			status["lastProxyHeartbeatTime"] = value
		case heartbeatCondition:
			conditions, _ := status["conditions"].([]interface{})
			status["conditions"] = append(conditions, map[string]interface{}{"lastHeartbeatTime": value})
		}
	}
	put(h.unreadable, false)
	put(h.newest, h.at().Format(time.RFC3339Nano))
}

// heartbeatRule is --mount-heartbeat-timeout and the time of the judgement, the reconciler's clock.
type heartbeatRule struct {
	timeout time.Duration
	now     time.Time
}

// apply judges the heartbeat h of the mount object what, whose status the rest of the contract found.
func (r heartbeatRule) apply(status mount.Status, h heartbeat, what string) (mount.Status, time.Duration) {
	if r.timeout <= 0 {
		return status, 0
	}
	if h.newest == heartbeatNone {
		if h.unreadable != heartbeatNone {
			status.Message += fmt.Sprintf(" Its %s is not an RFC 3339 time, so it is no heartbeat (--mount-heartbeat-timeout=%s).", h.unreadable, r.timeout)
		}
		return status, 0
	}
	at := h.at().Format(time.RFC3339)
	switch ahead := h.at().Sub(r.now); {
	case ahead > r.timeout:
		status.Message = fmt.Sprintf("%s has its newest heartbeat (%s) at %s, more than --mount-heartbeat-timeout=%s ahead of the plugin's clock: "+
			"the clocks disagree, or its provider writes wrong times; it counts as expired until it is within the timeout. Before, it said: %s",
			what, h.newest, at, r.timeout, status.Message)
		return expired(status), ahead - r.timeout
	case ahead > -r.timeout:
		// Fresh: a heartbeat ahead of the clock counts as now.
		return status, ahead + r.timeout
	default:
		status.Message = fmt.Sprintf("%s has not heartbeated since %s (%s), longer than --mount-heartbeat-timeout=%s: its provider may be gone. Before, it said: %s",
			what, at, h.newest, r.timeout, status.Message)
		return expired(status), 0
	}
}

// expired is status as a mount whose heartbeat expired: Unknown, not ready, its URL and conditions kept for whoever
// looks.
func expired(status mount.Status) mount.Status {
	status.Phase, status.Ready, status.Reason = mount.PhaseUnknown, false, mount.ReasonMountHeartbeatExpired
	return status
}
