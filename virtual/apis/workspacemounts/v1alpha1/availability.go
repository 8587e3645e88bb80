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

package v1alpha1

import (
	"strconv"
	"time"
)

// This file holds the one formula of a mount's availability at a time:
// the virtual workspace's answers, its Table and the kubectl plugin use it.

// CurrentStateSecondsAt is how long the current state, which began at
// Since plus ObservedSeconds (the lastTransitionTime), has lasted at now,
// in seconds: 0 for a now before it (a clock behind the controller's).
func (a MountAvailability) CurrentStateSecondsAt(now time.Time) int64 {
	return max(0, now.Unix()-(a.Since.Unix()+a.ObservedSeconds))
}

// RatioAt is the share of the time from Since to now that the mount was
// ready: ReadySeconds, plus the current state's seconds if it is ready
// (currentReady, status.ready), over ObservedSeconds plus the current
// state's seconds (CurrentStateSecondsAt). Written as Ratio is, a decimal
// with 4 digits, rounded down so that 1.0000 means never not ready; with
// no second observed yet, 1.0000 for a ready mount, else 0.0000.
func (a MountAvailability) RatioAt(now time.Time, currentReady bool) string {
	current := a.CurrentStateSecondsAt(now)
	ready, observed := max(0, a.ReadySeconds), max(0, a.ObservedSeconds)+current
	if currentReady {
		ready += current
	}
	var tenThousandths int64
	switch {
	case observed == 0 && currentReady:
		tenThousandths = 10000
	case observed > 0:
		// ready ≤ observed ≤ the seconds since year 1: no overflow.
		tenThousandths = min(ready, observed) * 10000 / observed
	}
	b := strconv.AppendInt(make([]byte, 0, 6), tenThousandths/10000, 10)
	fraction := strconv.AppendInt(nil, 10000+tenThousandths%10000, 10) // 1xxxx: the leading zeros
	return string(append(append(b, '.'), fraction[1:]...))
}

// At is a with Ratio and CurrentStateSeconds as of now, for a mount whose
// current state is ready or not (currentReady).
func (a MountAvailability) At(now time.Time, currentReady bool) MountAvailability {
	a.Ratio = a.RatioAt(now, currentReady)
	a.CurrentStateSeconds = a.CurrentStateSecondsAt(now)
	return a
}
