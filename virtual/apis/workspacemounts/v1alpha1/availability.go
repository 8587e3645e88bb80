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
	"fmt"
	"time"
)

// At is the mount's availability as of now, for clients: ratio is the share
// of the time since [MountAvailability.Since] the mount was ready, the
// current state (ready or not: currentReady) included, written with four
// digits and rounded down, so that 1.0000 means never not ready;
// currentStateSeconds is how long the current state has lasted, 0 for a
// clock behind the controller's.
func (a MountAvailability) At(now time.Time, currentReady bool) (ratio string, currentStateSeconds int64) {
	current := max(0, now.Unix()-(a.Since.Unix()+a.ObservedSeconds))
	ready, observed := max(0, a.ReadySeconds), max(0, a.ObservedSeconds)+current
	if currentReady {
		ready += current
	}
	var tenThousandths int64
	switch {
	case observed == 0 && currentReady:
		tenThousandths = 10000
	case observed > 0:
		tenThousandths = min(ready, observed) * 10000 / observed
	}
	return fmt.Sprintf("%d.%04d", tenThousandths/10000, tenThousandths%10000), current
}
