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
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAvailabilityAt(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	// Ready 600 of the 1000 seconds up to the current state's start.
	a := MountAvailability{Since: metav1.NewTime(since), ReadySeconds: 600, ObservedSeconds: 1000}
	start := since.Add(1000 * time.Second)
	for _, tc := range []struct {
		name    string
		now     time.Time
		ready   bool
		ratio   string
		current int64
	}{
		{name: "at the transition", now: start, ready: true, ratio: "0.6000"},
		{name: "ready since", now: start.Add(1000 * time.Second), ready: true, ratio: "0.8000", current: 1000},
		{name: "not ready since", now: start.Add(1000 * time.Second), ready: false, ratio: "0.3000", current: 1000},
		{name: "rounded down", now: start.Add(2 * time.Second), ready: false, ratio: "0.5988", current: 2},
		{name: "a clock behind the controller's", now: start.Add(-time.Hour), ready: true, ratio: "0.6000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ratio, current := a.At(tc.now, tc.ready)
			require.Equal(t, tc.ratio, ratio)
			require.Equal(t, tc.current, current)
		})
	}

	ratio := func(a MountAvailability, now time.Time, ready bool) string {
		r, _ := a.At(now, ready)
		return r
	}
	first := MountAvailability{Since: metav1.NewTime(since)}
	require.Equal(t, "1.0000", ratio(first, since, true), "nothing observed yet, ready")
	require.Equal(t, "0.0000", ratio(first, since, false))
	require.Equal(t, "1.0000", ratio(first, since.Add(time.Hour), true))
	almost := MountAvailability{Since: metav1.NewTime(since), ReadySeconds: 99999, ObservedSeconds: 100000}
	require.Equal(t, "0.9999", ratio(almost, since.Add(100000*time.Second), true), "never 1.0000 once not ready")
}
