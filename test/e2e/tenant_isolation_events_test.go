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
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// TestTenantIsolationEvents: a tenant whose cluster has an events webhook
// that never answers, and whose mounted Workspaces flap, costs another
// tenant's events nothing: the honest tenant's event regarding its
// Workspace is written within seconds of its mount's change, while the
// hostile cluster's writes hang (and are then skipped, counted as
// cluster_suspended).
func TestTenantIsolationEvents(t *testing.T) {
	t.Parallel()
	const hostileWorkspaces = 60
	c := newClients(t)
	cfg := kcp.BaseConfigT(t, "base")
	kube, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The honest tenant: one mounted Workspace, Ready.
	honestOrg := framework.UniqueName("honest-events")
	framework.CreateWorkspace(t, cfg, framework.RootPath, honestOrg)
	honest := framework.RootPath.Join(honestOrg)
	kind := installKubeClusters(t, honest)
	url := kcp.BaseURL + "/clusters/" + honestOrg
	ready := map[string]interface{}{"phase": "Ready", "URL": url}
	c.createMountObject(t, honest, kind, "proxy", ready)
	c.createMountedWorkspace(t, honest, "mounted", kind.ref("proxy"))
	c.waitForMount(t, honest, "mounted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: url})

	// The hostile tenant: an events webhook that never answers, in the
	// cluster where its mounted Workspaces live (and their events go).
	hostileOrg := framework.UniqueName("hostile-events")
	framework.CreateWorkspace(t, cfg, framework.RootPath, hostileOrg)
	hostile := framework.RootPath.Join(hostileOrg)
	installKubeClusters(t, hostile)
	installSilentEventsWebhook(t, ctx, kube, hostile)
	hostileURL := kcp.BaseURL + "/clusters/" + hostileOrg
	for i := range hostileWorkspaces {
		name := fmt.Sprintf("flap-%d", i)
		c.createMountObject(t, hostile, kind, name, map[string]interface{}{"phase": "Ready", "URL": hostileURL})
		c.createMountedWorkspace(t, hostile, name, kind.ref(name))
	}
	// Every flip is an event (up to --max-workspace-events-per-hour of
	// each Workspace), each write held by the webhook: dozens a second,
	// more than the 64 writes a shard allowed at once before.
	var flapping sync.WaitGroup
	for i := range hostileWorkspaces {
		flapping.Add(1)
		go func() {
			defer flapping.Done()
			for round := 0; ctx.Err() == nil; round++ {
				phase := map[bool]string{true: "Ready", false: "Connecting"}[round%2 == 1]
				setStatusQuietly(ctx, c, hostile, kind, fmt.Sprintf("flap-%d", i), map[string]interface{}{"phase": phase, "URL": hostileURL})
				select {
				case <-ctx.Done():
				case <-time.After(1500 * time.Millisecond):
				}
			}
		}()
	}
	t.Cleanup(flapping.Wait)
	t.Cleanup(cancel)
	time.Sleep(6 * time.Second) // the hostile writes pile up

	ws, err := c.kcp.Cluster(honest).TenancyV1alpha1().Workspaces().Get(ctx, "mounted", metav1.GetOptions{})
	require.NoError(t, err)
	flipped := time.Now()
	c.setMountStatus(t, honest, kind, "proxy", map[string]interface{}{"phase": "Connecting", "URL": url})
	var event eventsv1.Event
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		list, err := kube.Cluster(honest).EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.UID == ws.UID && e.Type == corev1.EventTypeWarning && e.Reason == mount.ReasonMountNotReady {
				event = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events in the honest cluster, none the Warning of its flip", len(list.Items))
	}, 15*time.Second, 200*time.Millisecond, "the honest tenant's event, while the hostile tenant's writes hang")
	t.Logf("the honest tenant's event was there %s after its mount's change", time.Since(flipped).Round(100*time.Millisecond))
	require.Contains(t, event.Note, "is Connecting")

	kcptestinghelpers.Eventually(t, func() (bool, string) {
		suspended := scrapePluginMetrics(t).Value("workspacemounts_events_dropped_total", map[string]string{"reason": "cluster_suspended"})
		return suspended > 0, fmt.Sprintf("cluster_suspended drops: %v", suspended)
	}, 30*time.Second, time.Second, "the hostile cluster's events are skipped")
}

// setStatusQuietly replaces the status of a mount object, ignoring
// failures (a flap missed is no matter).
func setStatusQuietly(ctx context.Context, c clients, cluster logicalcluster.Path, kind mountKind, name string, status map[string]interface{}) {
	resource := c.dynamic.Cluster(cluster).Resource(kind.gvr)
	obj, err := resource.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	obj.Object["status"] = status
	_, _ = resource.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
}

// installSilentEventsWebhook installs in cluster a validating webhook on
// the create and update of events (events.k8s.io and core) whose server, a
// TLS listener of the test on 127.0.0.1, accepts and never answers; it
// returns once kcp calls it (an event created in cluster gets no answer).
func installSilentEventsWebhook(t *testing.T, ctx context.Context, kube kcpkubernetesclientset.ClusterInterface, cluster logicalcluster.Path) {
	t.Helper()
	ca, err := framework.NewCA("silent-webhook-ca")
	require.NoError(t, err)
	serving, err := ca.ServingCert("127.0.0.1")
	require.NoError(t, err)
	cert, err := serving.TLSCertificate()
	require.NoError(t, err)
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	var conns sync.WaitGroup
	var held sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		_ = listener.Close()
		held.Lock()
		for _, conn := range open {
			_ = conn.Close()
		}
		held.Unlock()
		conns.Wait()
	})
	conns.Add(1)
	go func() {
		defer conns.Done()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			held.Lock()
			open = append(open, conn) // accepted, read, never answered
			held.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()

	url := "https://" + listener.Addr().String() + "/validate"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(30)
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "silent-events"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "silent-events.hostile.example",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: framework.CABundle(ca)},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"events.k8s.io", ""}, APIVersions: []string{"*"}, Resources: []string{"events"},
				},
			}},
		}},
	}
	_, err = kube.Cluster(cluster).AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, webhook, metav1.CreateOptions{})
	require.NoError(t, err)

	// kcp calls it once its informers have it: a create of an event then
	// gets no answer within a few seconds.
	probe := 0
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		probe++
		event := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", probe), Namespace: metav1.NamespaceDefault},
			EventTime:  metav1.NowMicro(), ReportingController: "example.com/probe", ReportingInstance: "probe",
			Action: "Probe", Reason: "Probe", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{Kind: "Namespace", Name: "default", APIVersion: "v1"},
		}
		probeCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := kube.Cluster(cluster).EventsV1().Events(metav1.NamespaceDefault).Create(probeCtx, event, metav1.CreateOptions{})
		if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) || (err != nil && probeCtx.Err() != nil) {
			return true, ""
		}
		return false, fmt.Sprintf("an event was answered (%v): the webhook is not called yet", err)
	}, time.Minute, 500*time.Millisecond, "the silent webhook in %s", cluster)
}
