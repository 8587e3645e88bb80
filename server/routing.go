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
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// routingAttemptTimeout bounds one reading of kcp's /metrics: the first
// comes before the health endpoints are served.
const routingAttemptTimeout = 5 * time.Second

// routingOptions are --workspace-condition and --workspace-url, and whether
// kcp's in-tree mounts controller runs on the shard (known tells that it
// was asked), at every level: --workspace-url is refused beside it, and
// kcp's condition WorkspaceMountReady is the controller's to keep or remove
// only where it does not run (beside it, removing kcp's condition makes the
// two controllers rewrite the Workspace without end). With retry, kcp is
// asked again with backoff while it does not answer; without, once. When
// kcp refuses to tell (no right to read /metrics), the in-tree controller is
// taken to run, the safe answer for both conditions.
func routingOptions(ctx context.Context, o *CompletedOptions, cfg *rest.Config, retry bool) (routing workspacemounts.RoutingOptions, known bool, err error) {
	routing = workspacemounts.RoutingOptions{WorkspaceCondition: o.WorkspaceCondition, WorkspaceURL: o.WorkspaceURL}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return routing, false, err
	}
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, routingAttemptTimeout)
		runs, err := workspacemounts.InTreeMountsControllerRuns(attemptCtx, client.Discovery().RESTClient())
		cancel()
		switch {
		case err == nil:
			routing.InTreeMountsController = runs
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			if routing.WorkspaceURL {
				return routing, false, fmt.Errorf("--workspace-url needs to know that kcp's in-tree mounts controller does not run on the shard: %w", err)
			}
			logger.Error(err, "cannot tell whether kcp's in-tree mounts controller runs; taken to run: kcp's condition "+string(tenancyv1alpha1.MountConditionReady)+
				" is left as it is, and a mount that is Ready without URL gets condition "+mount.ConditionType+" Unknown, not False")
			routing.InTreeMountsController = true
		case ctx.Err() != nil:
			return routing, false, ctx.Err()
		case !retry:
			return routing, false, nil
		default:
			delay := backoff.Step()
			logger.Error(err, "waiting for kcp's /metrics, retrying", "retryIn", delay.Round(100*time.Millisecond))
			select {
			case <-ctx.Done():
				return routing, false, ctx.Err()
			case <-time.After(delay):
			}
			continue
		}
		if routing.InTreeMountsController && routing.WorkspaceURL {
			return routing, false, workspacemounts.InTreeConflict()
		}
		return routing, true, nil
	}
}

// logRouting logs the routing options once they are known.
func logRouting(logger klog.Logger, routing workspacemounts.RoutingOptions) {
	if routing.WorkspaceURL && !routing.WorkspaceCondition {
		logger.Info("--workspace-url without --workspace-condition: kcp's condition WorkspaceMountReady takes a mount that is not ready out of traffic, " +
			"as kcp's in-tree mounts controller does, but a mount whose kind is not served, or whose URL is not usable, keeps its last URL and takes traffic")
	}
	logger.Info("routing options", "workspaceCondition", routing.WorkspaceCondition, "workspaceURL", routing.WorkspaceURL,
		"inTreeMountsController", routing.InTreeMountsController)
}
