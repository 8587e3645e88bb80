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

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// repairLimitedError: the write is a repair, and the tenant's repairs are used up; the key is reconciled again in
// retryIn.
type repairLimitedError struct{ retryIn time.Duration }

func (e *repairLimitedError) Error() string {
	return fmt.Sprintf("the tenant's repairs of the mount annotations are rate limited; trying again in %s", e.retryIn)
}

// answerHash is what identifies the contract's answer for a Workspace, without its history (which follows the
// annotation found there).
func answerHash(state mountState) uint64 {
	return objectHash(state.status.Encode())
}

// allowRepair tells whether the controller may write updated's annotations over ws's now.
func (c *Controller) allowRepair(key string, ws, updated *tenancyv1alpha1.Workspace, state mountState) error {
	if c.repairs == nil || ws.Spec.URL != updated.Spec.URL || !state.mounted {
		return nil
	}
	written, found := c.written.get(key)
	if !found || written != answerHash(state) {
		return nil // a new answer: not a repair
	}
	if ok, retryIn := c.repairs.Allow(c.tenantOf(logicalcluster.From(ws))); !ok {
		return &repairLimitedError{retryIn: retryIn}
	}
	return nil
}

// noteWritten remembers the answer written for key, once the annotations are written.
func (c *Controller) noteWritten(key string, updated *tenancyv1alpha1.Workspace, state mountState) {
	if _, found := mount.StatusOf(updated.Annotations); !found {
		c.written.forget(key)
		return
	}
	c.written.put(key, answerHash(state))
}
