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

// This file holds the soak's mount churn: mount objects whose phase and URL
// change, deleted and re-created, from the seed, whatever kcp is going
// through; and every state each mount may have had, for the history check.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// chaosWriteTimeout bounds one write of the churn: kcp paused or stopped
// fails it, and the churn goes on.
const chaosWriteTimeout = 3 * time.Second

// chaosPhases are the phases the churn sets.
var chaosPhases = []string{"Ready", "Ready", "Connecting", "Initializing", "Unknown"}

// chaosState is a state a mount may have been in: what a transition records.
type chaosState struct {
	phase  mount.Phase
	ready  bool
	reason string
}

func (s chaosState) String() string { return fmt.Sprintf("%s/%t/%s", s.phase, s.ready, s.reason) }

func stateOf(s mount.Status) chaosState {
	return chaosState{phase: s.Phase, ready: s.Ready, reason: s.Reason}
}

// chaosChurn changes the mount objects until stopped.
type chaosChurn struct {
	e    *chaosEnv
	rng  *rand.Rand
	done chan struct{}

	// writes tried, and failed (not a NotFound or AlreadyExists, which
	// only tell that the object was gone or back).
	writes, failed atomic.Int64

	lock sync.Mutex
	// existed are the states each Workspace's mount may have had: of every
	// write tried (a failed one may have been applied), and NotFound.
	existed map[string]map[chaosState]bool
}

func newChaosChurn(e *chaosEnv, seed int64) *chaosChurn {
	c := &chaosChurn{e: e, rng: rand.New(rand.NewPCG(uint64(seed), 1)), done: make(chan struct{}), existed: map[string]map[chaosState]bool{}}
	for _, name := range e.names {
		c.existed[name] = map[chaosState]bool{stateOf(chaosNotFound): true}
		c.note(name, map[string]interface{}{"phase": "Connecting"}) // as created
	}
	return c
}

func (c *chaosChurn) stop() { close(c.done) }

// run changes a random mount object every up to size.churnEvery until
// stopped; the returned channel is closed once it has.
func (c *chaosChurn) run(t *testing.T) <-chan struct{} {
	finished := make(chan struct{})
	exists := map[string]bool{}
	for _, name := range c.e.names {
		exists[name] = true
	}
	go func() {
		defer close(finished)
		for {
			select {
			case <-c.done:
				return
			case <-time.After(time.Duration(c.rng.Int64N(int64(c.e.size.churnEvery))) + time.Millisecond):
			}
			name := c.e.names[c.rng.IntN(len(c.e.names))]
			var err error
			switch {
			case !exists[name]:
				err = c.create(t.Context(), name)
				exists[name] = err == nil || apierrors.IsAlreadyExists(err)
			case c.rng.IntN(6) == 0:
				err = c.delete(t.Context(), name)
				exists[name] = err != nil && !apierrors.IsNotFound(err)
			default:
				err = c.setStatus(t.Context(), name)
				if apierrors.IsNotFound(err) {
					exists[name] = false
				}
			}
			c.writes.Add(1)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
				// kcp paused or stopped: try again a little later, not
				// thousands of times a minute.
				c.failed.Add(1)
				time.Sleep(chaosWriteTimeout / 6)
			}
		}
	}()
	return finished
}

// status draws a mount object's status: a phase, and an https URL of one of
// a few hosts (or none).
func (c *chaosChurn) status() map[string]interface{} {
	status := map[string]interface{}{"phase": chaosPhases[c.rng.IntN(len(chaosPhases))]}
	if n := c.rng.IntN(4); n > 0 {
		status["URL"] = fmt.Sprintf("https://mount-%d.example.com/clusters/chaos", n)
	}
	return status
}

func (c *chaosChurn) create(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, chaosWriteTimeout)
	defer cancel()
	obj := chaosObject(name, nil)
	c.note(name, nil) // no status yet: MountPhaseUnrecognized, for a moment
	if _, err := c.e.c.dynamic.Cluster(c.e.org).Resource(kubeClusters.gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return err
	}
	return c.setStatus(ctx, name)
}

func (c *chaosChurn) delete(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, chaosWriteTimeout)
	defer cancel()
	return c.e.c.dynamic.Cluster(c.e.org).Resource(kubeClusters.gvr).Delete(ctx, name, metav1.DeleteOptions{})
}

// setStatus reads the mount object and writes a new status on it.
func (c *chaosChurn) setStatus(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, chaosWriteTimeout)
	defer cancel()
	resource := c.e.c.dynamic.Cluster(c.e.org).Resource(kubeClusters.gvr)
	obj, err := resource.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	status := c.status()
	c.note(name, status)
	obj.Object["status"] = status
	_, err = resource.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}

// note records the state a mount object with status gives its Workspace,
// by the contract (workspacemounts.StatusOfMountObject).
func (c *chaosChurn) note(name string, status map[string]interface{}) {
	s := chaosExpected(name, chaosObject(name, status))
	c.lock.Lock()
	defer c.lock.Unlock()
	c.existed[name][stateOf(s)] = true
}

// existedStates is existed of name, copied.
func (c *chaosChurn) existedStates(name string) map[chaosState]bool {
	c.lock.Lock()
	defer c.lock.Unlock()
	states := make(map[chaosState]bool, len(c.existed[name]))
	for s := range c.existed[name] {
		states[s] = true
	}
	return states
}

// chaosObject is the KubeCluster name, marked as a mount object, with
// status (nil: none).
func chaosObject(name string, status map[string]interface{}) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": kubeClusters.gvr.GroupVersion().String(),
		"kind":       kubeClusters.kind,
		"metadata": map[string]interface{}{
			"name":        name,
			"annotations": map[string]interface{}{mount.IsMountAnnotationKey: mount.IsMountAnnotationValue},
		},
		"spec": map[string]interface{}{},
	}}
	if status != nil {
		obj.Object["status"] = status
	}
	return obj
}

// chaosURLs is the rule of the replicas' URLs at level 3 (--workspace-url,
// a Workspace with spec.mount: hosts checked).
var chaosURLs = mount.URLRule{CheckHosts: true}

// chaosExpected is the status the contract gives the Workspace name whose
// mount object is obj (nil: none).
func chaosExpected(name string, obj *unstructured.Unstructured) mount.Status {
	if obj == nil {
		return chaosNotFound
	}
	ws := &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: kubeClusters.ref(name)}}}
	ref, err := mount.Rule{}.ReferenceOf(ws)
	if err != nil {
		panic(fmt.Sprintf("the reference of %s: %v", name, err))
	}
	return workspacemounts.StatusOfMountObject(ref, obj, chaosURLs)
}
