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

package server

import (
	"context"
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/version"
)

// leaderFacts are what the leader publishes on its Lease
// (pkg/leaderfacts), for `workspacemounts doctor`.
func (o *Options) leaderFacts() leaderfacts.Facts {
	return leaderfacts.Facts{
		Version:              version.Get().Version,
		WorkspaceCondition:   o.WorkspaceCondition,
		WorkspaceURL:         o.WorkspaceURL,
		TrustsRequestHeaders: o.RunVirtualWorkspace && o.VirtualWorkspace.RequestHeader.ClientCAFile != "",
		MountURLContract:     o.MountURLContract,
	}
}

// publishLeaderFacts writes facts, as the holder of lock, into the Lease's
// annotations, with the verbs the leader has on its Lease already (get and
// update; deploy/kcp/leader-election.yaml). The next renewal, whose Lease is
// then stale, conflicts once and is made again from the Lease read anew
// (client-go's slow path), which keeps the annotations. It is best effort:
// failing, it logs and the leader leads on; doctor then reports facts that
// are missing or a former leader's.
func publishLeaderFacts(ctx context.Context, lock *resourcelock.LeaseLock, facts leaderfacts.Facts, timeout time.Duration) {
	facts.Identity = lock.Identity()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	leases := lock.Client.Leases(lock.LeaseMeta.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, lock.LeaseMeta.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != facts.Identity {
			return fmt.Errorf("the Lease is held by %v, not by this replica", ptr.Deref(lease.Spec.HolderIdentity, ""))
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		maps.Copy(lease.Annotations, facts.Annotations())
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "cannot publish this leader's version and settings on the Lease; workspacemounts doctor will not see them", "lock", lock.Describe())
	}
}
