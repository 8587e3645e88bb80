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
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"k8s.io/client-go/rest"
)

// inTreeMountsQueue is the work queue of kcp's in-tree mounts controller
// (pkg/reconciler/tenancy/workspacemounts, v0.27 to v0.32.3). kcp creates
// it, and so its workqueue_* series, only when the feature gate
// WorkspaceMounts is on.
const inTreeMountsQueue = "kcp-workspace-mounts"

// inTreeConflict is why --workspace-url cannot run beside kcp's in-tree
// mounts controller.
const inTreeConflict = "--workspace-url cannot be used on this shard: kcp's in-tree mounts controller runs there " +
	"(feature gate WorkspaceMounts; its work queue " + inTreeMountsQueue + " is in kcp's /metrics) and writes spec.URL too; " +
	"turn the gate off, or drop --workspace-url (--workspace-condition works beside it)"

// InTreeMountsControllerRuns tells whether kcp's in-tree mounts controller
// (which does what --workspace-url does, and writes kcp's condition
// WorkspaceMountReady) runs on the shard client talks to, from the shard's /metrics: its work
// queue's series are there exactly when it runs. client needs the shard's
// /metrics (system:masters, or a ClusterRole with the non-resource URL).
func InTreeMountsControllerRuns(ctx context.Context, client rest.Interface) (bool, error) {
	body, err := client.Get().AbsPath("/metrics").
		SetHeader("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain))).
		Stream(ctx)
	if err != nil {
		return false, fmt.Errorf("reading kcp's /metrics to tell whether its in-tree mounts controller runs: %w", err)
	}
	defer body.Close()
	return inTreeMountsQueueIn(body)
}

// inTreeMountsQueueIn tells whether metrics, in the Prometheus text
// format, have a workqueue series of kcp's in-tree mounts controller.
func inTreeMountsQueueIn(metrics io.Reader) (bool, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(metrics)
	if err != nil {
		return false, fmt.Errorf("parsing kcp's /metrics: %w", err)
	}
	for name, family := range families {
		if !strings.HasPrefix(name, "workqueue_") {
			continue
		}
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "name" && label.GetValue() == inTreeMountsQueue {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// errInTreeConflict: --workspace-url beside kcp's in-tree mounts controller.
var errInTreeConflict = errors.New(inTreeConflict)
