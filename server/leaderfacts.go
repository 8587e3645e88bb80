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
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

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
	}
}

// publishLeaderFacts writes facts, as the holder of lock, into the Lease's
// annotations: a merge patch of the annotations alone, so that it never
// conflicts with a renewal, which keeps them (LeaseLock updates the Lease it
// last read). It is best effort: failing, it logs and the leader leads on;
// doctor then reports facts that are missing or a former leader's.
func publishLeaderFacts(ctx context.Context, lock *resourcelock.LeaseLock, facts leaderfacts.Facts, timeout time.Duration) {
	facts.Identity = lock.Identity()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": facts.Annotations()}})
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err = lock.Client.Leases(lock.LeaseMeta.Namespace).Patch(ctx, lock.LeaseMeta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "cannot publish this leader's version and settings on the Lease; workspacemounts doctor will not see them", "lock", lock.Describe())
	}
}
