//go:build e2e

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

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

const (
	// watchAccessBound is docs/virtual-workspace.md's bound on how long a watch goes on
	// showing a cluster after its user's access there is revoked (the
	// registry's watchAccessBound: 20 s answers, a re-check every 30 s, each
	// over within 10 s).
	watchAccessBound = 60 * time.Second
	// watchAccessMargin is what kcp takes to apply a deleted binding to its
	// own authorizer, and the test's polling.
	watchAccessMargin = 10 * time.Second
)

// accessWatch is a watch of WorkspaceMounts as one user through the
// dynamic client, and what it has received.
type accessWatch struct {
	name string
	w    watch.Interface

	lock    sync.Mutex
	events  []string    // TYPE name@cluster
	times   []time.Time // when each of events was received
	endedAt time.Time
	done    chan struct{}
}

// watchAs watches the WorkspaceMounts of cluster (a name, a path or *) on
// the shared plugin's listener with a bearer token, from no resource
// version (the current objects first).
func watchAs(t *testing.T, name, cluster, token string) *accessWatch {
	t.Helper()
	client, err := dynamic.NewForConfig(&rest.Config{
		Host:            virtualWorkspaceURL + vwPrefix + cluster,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: vwCAFile()},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.Resource(wsmv1alpha1.SchemeGroupVersion.WithResource(wsmv1alpha1.Resource)).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err, "%s: watch as the user", name)
	aw := &accessWatch{name: name, w: w, done: make(chan struct{})}
	go func() {
		defer close(aw.done)
		for e := range w.ResultChan() {
			described := string(e.Type)
			if obj, ok := e.Object.(*unstructured.Unstructured); ok {
				described += " " + obj.GetName() + "@" + obj.GetAnnotations()[logicalcluster.AnnotationKey]
			}
			aw.lock.Lock()
			aw.events, aw.times = append(aw.events, described), append(aw.times, time.Now())
			aw.lock.Unlock()
		}
		aw.lock.Lock()
		aw.endedAt = time.Now()
		aw.lock.Unlock()
	}()
	t.Cleanup(w.Stop)
	return aw
}

// state tells whether and when the watch first received event (after the
// first skip events), whether and when it ended, and all it received.
func (w *accessWatch) state(event string, skip int) (foundAt, endedAt time.Time, events []string) {
	w.lock.Lock()
	defer w.lock.Unlock()
	for i, e := range w.events {
		if i >= skip && e == event && foundAt.IsZero() {
			foundAt = w.times[i]
		}
	}
	return foundAt, w.endedAt, append([]string(nil), w.events...)
}

// TestWatchAccess is issue 25's "every watch follows its access" against a
// real kcp: a tenant watches the WorkspaceMounts of one workspace, and of
// every workspace (*), through the shared plugin; its ClusterRoleBinding
// there is deleted; the watch of the one cluster ends, and the watch at *
// sends DELETED for the workspace's WorkspaceMount (or ends), each within
// the documented bound, whatever the answers the plugin had cached. A new
// watch of the cluster is then refused.
func TestWatchAccess(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "waccess")
	org.mountAll(t, []vwMount{{workspace: "watched", object: "watched", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	grantWorkspaceReader(t, org.path, hostileUser)
	waitKCPAllows(t, org.cluster, true)
	token := kcp.ConfigT(t, userContext).BearerToken
	key := "watched@" + org.cluster.String()

	// Both watches show the WorkspaceMount first (the plugin's cache and
	// answers may lag a moment behind kcp: watch again until they do).
	start := func(name, cluster string) *accessWatch {
		var w *accessWatch
		require.Eventually(t, func() bool {
			w = watchAs(t, name, cluster, token)
			deadline := time.After(5 * time.Second)
			for {
				if addedAt, _, _ := w.state(string(watch.Added)+" "+key, 0); !addedAt.IsZero() {
					return true
				}
				select {
				case <-deadline:
					w.w.Stop()
					return false
				case <-time.After(100 * time.Millisecond):
				}
			}
		}, vwConvergeTimeout, time.Second, "%s: ADDED %s", name, key)
		return w
	}
	watches := []*accessWatch{start("one cluster", org.cluster.String()), start("*", "*")}

	kube, err := kcpkubernetesclientset.NewForConfig(kcp.BaseConfigT(t, "base"))
	require.NoError(t, err)
	bindings := kube.Cluster(org.path).RbacV1().ClusterRoleBindings()
	skips := make([]int, 0, len(watches))
	for _, w := range watches {
		_, endedAt, events := w.state("", 0)
		require.True(t, endedAt.IsZero(), "%s: the watch ended before the revocation: %v", w.name, events)
		skips = append(skips, len(events))
	}
	revoked := time.Now()
	require.NoError(t, bindings.Delete(context.Background(), "vw-test-workspace-reader", metav1.DeleteOptions{}))
	waitKCPAllows(t, org.cluster, false)
	t.Logf("kcp denied the user %s after the ClusterRoleBinding's deletion", time.Since(revoked).Round(100*time.Millisecond))

	// The times are those at which the events arrived, taken by each
	// watch's goroutine: the checks below may run late (the suite's other
	// tests) without changing them.
	t.Run("after the revocation", func(t *testing.T) { //nolint:paralleltest // the times are the events', the checks may run one after the other
		for i, w := range watches {
			t.Run(w.name, func(t *testing.T) { //nolint:paralleltest // as above
				var took time.Duration
				require.Eventually(t, func() bool {
					deletedAt, endedAt, _ := w.state(string(watch.Deleted)+" "+key, skips[i])
					switch {
					case !endedAt.IsZero():
						took = endedAt.Sub(revoked)
						return true
					case !deletedAt.IsZero() && w.name == "*":
						took = deletedAt.Sub(revoked)
						return true
					}
					return false
				}, watchAccessBound+watchAccessMargin, 100*time.Millisecond, "%s: after the revocation, the end of the watch or DELETED %s%s", w.name, key, opLogs())
				_, endedAt, events := w.state("", 0)
				t.Logf("%s: the revocation took effect in the watch after %s (ended: %t; events after it: %v)",
					w.name, took.Round(100*time.Millisecond), !endedAt.IsZero(), events[skips[i]:])
				require.LessOrEqual(t, took, watchAccessBound+watchAccessMargin)
				if w.name == "one cluster" {
					require.False(t, endedAt.IsZero(), "a watch of one cluster ends")
				}
			})
		}
	})

	// Listing and watching again, as a client does when its watch ends: refused.
	client, err := dynamic.NewForConfig(&rest.Config{
		Host:            virtualWorkspaceURL + vwPrefix + org.cluster.String(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: vwCAFile()},
	})
	require.NoError(t, err)
	_, err = client.Resource(wsmv1alpha1.SchemeGroupVersion.WithResource(wsmv1alpha1.Resource)).Watch(context.Background(), metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "a new watch of the cluster: %v", err)
}
