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
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
)

// RootPath is the path of kcp's root workspace.
var RootPath = logicalcluster.NewPath("root")

// WaitTimeout bounds how long the helpers of this package wait for kcp to
// reconcile something (a workspace, a CRD, a binding).
var WaitTimeout = time.Minute

// pollInterval is how often the helpers of this package check again.
const pollInterval = 100 * time.Millisecond

// poll calls condition every interval until it is done, or until timeout or
// ctx is done. The error then carries the last reason why it was not done.
func poll(ctx context.Context, timeout, interval time.Duration, condition func(context.Context) (done bool, reason string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, reason := condition(ctx)
		last = reason
		return done, nil
	})
	if err != nil && wait.Interrupted(err) {
		if last == "" {
			last = "no reason given"
		}
		return fmt.Errorf("not done after %s: %s", timeout, last)
	}
	return err
}

// pollT polls condition (poll) for at most WaitTimeout, and fails t,
// saying what it waited for, if it is not done by then.
func pollT(t testing.TB, ctx context.Context, what string, condition func(context.Context) (done bool, reason string)) {
	t.Helper()
	if err := poll(ctx, WaitTimeout, pollInterval, condition); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// kcpClientT returns a cluster-aware kcp clientset for cfg (with or without
// a /clusters/ path), failing t if it cannot.
func kcpClientT(t testing.TB, cfg *rest.Config) kcpclientset.ClusterInterface {
	t.Helper()
	client, err := kcpclientset.NewForConfig(clusterAwareConfig(cfg))
	if err != nil {
		t.Fatalf("creating kcp clientset: %v", err)
	}
	return client
}

// UniqueName returns prefix followed by a dash and five random lowercase
// alphanumeric characters, e.g. "consumer-x7k2p", short enough for a workspace
// name.
func UniqueName(prefix string) string {
	const suffixLen = 6 // "-" and 5 characters
	prefix = strings.ToLower(prefix)
	if maxPrefix := 63 - suffixLen; len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + "-" + rand.String(suffixLen-1)
}
