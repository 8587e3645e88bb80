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
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// hangingWorkspaces is how many Workspaces the hostile tenant mounts on a
// kind whose conversion webhook never answers; flipWithin is how soon the
// honest tenant's flips must reach its annotation.
const hangingWorkspaces, flipWithin = 40, 10 * time.Second

// TestTenantIsolationWorkers is issue 40's "fair workers" against the
// shared kcp and its plugin (10 workers): a tenant mounts 40 Workspaces on
// a CRD version served through a conversion webhook that accepts
// connections and never answers (objects at the storage version, Workspaces
// naming the other), whose every read waits for kcp's conversion timeout;
// another tenant's flips of its mount object still reach its annotation
// within 10 s, and the hostile Workspaces end Unknown, reason
// MountKindNotAnswering.
func TestTenantIsolationWorkers(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	cfg := kcp.BaseConfigT(t, "base")

	honest := newVWOrg(t, c, "honestworkers")
	ready := map[string]interface{}{"phase": "Ready", "URL": "https://honest.example.com/"}
	honest.mount(t, vwMount{workspace: "honest", object: "honest", status: ready})
	c.waitForMount(t, honest.path, "honest", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: "https://honest.example.com/"})

	// A webhook that accepts and never answers, until the test ends.
	stop := make(chan struct{})
	webhook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	webhook.StartTLS()
	t.Cleanup(webhook.Close)
	t.Cleanup(func() { close(stop) }) // before Close, which waits for the handlers
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw})
	url := webhook.URL + "/convert"

	hostileName := framework.UniqueName("hostileworkers")
	framework.CreateWorkspace(t, cfg, framework.RootPath, hostileName)
	hostile := framework.RootPath.Join(hostileName)
	hanging := mountKind{gvr: schema.GroupVersionResource{Group: "hang.example.com", Version: "v1", Resource: "hangs"}, kind: "Hang"}
	crd := framework.MountCRD(hanging.gvr.Group, hanging.kind, hanging.gvr.Resource, apiextensionsv1.ClusterScoped)
	v1 := crd.Spec.Versions[0]
	v1.Name = "v1"
	v2 := *v1.DeepCopy()
	v2.Name, v2.Storage = "v2", false
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v1, v2}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	framework.InstallCRD(t, cfg, hostile, crd)
	t.Cleanup(func() { // so that the suite's later tests share no failing Workspaces
		err := c.kcp.Cluster(hostile).TenancyV1alpha1().Workspaces().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil {
			t.Logf("deleting the hanging Workspaces: %v", err)
		}
	})
	atV2 := hanging
	atV2.gvr.Version = "v2"
	for i := range hangingWorkspaces {
		name := fmt.Sprint("hang-", i)
		c.createMountObject(t, hostile, hanging, name, map[string]interface{}{"phase": "Ready", "URL": "https://hang.example.com/"})
		c.createMountedWorkspace(t, hostile, name, atV2.ref(name))
	}
	t.Logf("%d Workspaces of %s mount %s at v2, whose conversion webhook never answers", hangingWorkspaces, hostile, hanging.kind)
	time.Sleep(2 * time.Second) // their reads under way

	flips := []map[string]interface{}{
		{"phase": "Connecting"},
		ready,
		{"phase": "Connecting"},
		ready,
	}
	for i, status := range flips {
		c.setMountStatus(t, honest.path, kubeClusters, "honest", status)
		began := time.Now()
		want := mount.Phase(status["phase"].(string))
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			ws, err := c.kcp.Cluster(honest.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "honest", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got := ws.Annotations[mount.PhaseAnnotationKey]
			return got == string(want), fmt.Sprintf("%s is %q, want %q", mount.PhaseAnnotationKey, got, want)
		}, flipWithin, 50*time.Millisecond, "flip %d of the honest tenant's mount object, while another tenant hangs %d Workspaces", i, hangingWorkspaces)
		t.Logf("flip %d to %s reached the annotation in %s", i, want, time.Since(began).Round(time.Millisecond))
	}

	for i := range hangingWorkspaces {
		name := fmt.Sprint("hang-", i)
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			ws, err := c.kcp.Cluster(hostile).TenancyV1alpha1().Workspaces().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s, found := mount.StatusOf(ws.Annotations)
			return found && s.Phase == mount.PhaseUnknown && s.Reason == mount.ReasonMountKindNotAnswering,
				fmt.Sprintf("%s: %s", mount.StatusAnnotationKey, ws.Annotations[mount.StatusAnnotationKey])
		}, convergeTimeout, 200*time.Millisecond, "hostile workspace %s|%s", hostile, name)
	}
}
