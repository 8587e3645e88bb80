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

package framework

import (
	"os"
	"testing"
)

// SlowEnv opts into the slow parts of the end-to-end tests, which make test
// leaves out so that a cold run on CI stays within its hour: kcp's
// 2-minute outages in TestResilience, a shard's return in TestSharded, the
// framework's own sharded kcp (TestShardedServer; TestSharded starts the
// same). make test-slow and make test-sharded set it; make test keeps a
// quick check of each (DEVELOPMENT.md's Tests section lists both).
const SlowEnv = "WORKSPACEMOUNTS_E2E_SLOW"

// Slow tells whether SlowEnv is set.
func Slow() bool {
	return os.Getenv(SlowEnv) != ""
}

// SkipUnlessSlow skips t unless SlowEnv is set, naming the make target that
// sets it.
func SkipUnlessSlow(t testing.TB, target string) {
	t.Helper()
	if !Slow() {
		t.Skipf("set %s=1 (%s) to run it", SlowEnv, target)
	}
}
