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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
)

const (
	// identityProxyName is the common name of the front-proxy's client
	// certificate the test's plugin accepts X-Remote-* headers from.
	identityProxyName = "kcp-front-proxy"
	// deletedWatchWindow is how long another user's denials are watched
	// after a watched workspace is deleted: the watch's re-check comes
	// within 30 s, and a failing review made every denial 503 for a minute
	// after it.
	deletedWatchWindow = 70 * time.Second
	// deletedWatchPoll is the pause between two of those denials.
	deletedWatchPoll = 5 * time.Second
)

// identityEnv is what TestTenantIdentity's sub-tests share: a plugin process
// of their own (virtual workspace only) that accepts the front-proxy's
// X-Remote-* headers from a client certificate of the test's CA, and that
// client.
type identityEnv struct {
	c      clients
	plugin *framework.Plugin
	// proxy presents the front-proxy's client certificate.
	proxy *http.Client
}

// TestTenantIdentity is issue 33's two identity rules against a real kcp: a
// user of the front-proxy's headers carrying a group kcp's front-proxy never
// forwards (system:masters, system:kcp:logical-cluster-admin,
// system:kcp:initializer:*, system:kcp:terminator:*) sees what the same
// user without it sees; and a watched workspace deleted changes no other
// user's denials (403, never 503) while its watch ends.
func TestTenantIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, caFile := opRequestHeaderCA(t, dir, "identity-front-proxy-ca")
	e := &identityEnv{c: newClients(t)}
	e.plugin = opStartPlugin(t, t, dir, "identity", kcp.KubeconfigPath,
		append([]string{"--run-controller=false"}, framework.RequestHeaderArgs(caFile, identityProxyName)...)...)
	opWaitStarted(t, e.plugin)
	proxyCert, err := ca.ClientCert(identityProxyName)
	require.NoError(t, err)
	e.proxy = opVWClient(t, e.plugin, &rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: proxyCert.CertPEM, KeyData: proxyCert.KeyPEM}})
	e.proxy.Timeout = 30 * time.Second

	t.Run("dropped groups", func(t *testing.T) {
		t.Parallel()
		e.testDroppedGroups(t)
	})
	t.Run("deleted workspace", func(t *testing.T) {
		t.Parallel()
		e.testDeletedWorkspace(t)
	})
}

// as sends GET path to the plugin through the front-proxy's certificate, as
// user in groups.
func (e *identityEnv) as(t *testing.T, path, user string, groups ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.plugin.VirtualWorkspaceURL+path, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", user)
	for _, g := range groups {
		req.Header.Add("X-Remote-Group", g)
	}
	resp, err := e.proxy.Do(req)
	require.NoError(t, err, "GET %s as %s %v", path, user, groups)
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
	return resp.StatusCode, body.String()
}

// listedAt lists at cluster as user in groups: the code, and the items as
// name@cluster, sorted.
func (e *identityEnv) listedAt(t *testing.T, cluster, user string, groups ...string) (int, []string, string) {
	t.Helper()
	code, body := e.as(t, vwPrefix+cluster+vwResourcePath, user, groups...)
	if code != http.StatusOK {
		return code, nil, body
	}
	list := &wsmv1alpha1.WorkspaceMountList{}
	require.NoError(t, json.Unmarshal([]byte(body), list), body)
	items := []string{}
	for _, item := range list.Items {
		items = append(items, item.Name+"@"+item.Annotations[logicalcluster.AnnotationKey])
	}
	sort.Strings(items)
	return code, items, body
}

// testDroppedGroups: mallory, bound nowhere, with each group kcp's
// front-proxy drops sees at * what mallory without it sees (nothing of the
// org; before the fix, with system:masters, every mount) and is denied the
// org's cluster; a user kcp grants the org sees its mount the same way.
func (e *identityEnv) testDroppedGroups(t *testing.T) {
	org := newVWOrg(t, e.c, "rhgroups")
	org.mountAll(t, []vwMount{{workspace: "rh-a", object: "a", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	granted := framework.UniqueName("rh-granted")
	grantWorkspaceReader(t, org.path, granted)
	mine := "rh-a@" + org.cluster.String()

	kcptestinghelpers.Eventually(t, func() (bool, string) {
		code, items, body := e.listedAt(t, "*", granted)
		return code == http.StatusOK && slices.Contains(items, mine), fmt.Sprintf("%d %v %s", code, items, excerpt(body))
	}, vwConvergeTimeout, 200*time.Millisecond, "the granted user of the headers sees the org's mount at *%s", opLogs(e.plugin))
	code, items, body := e.listedAt(t, org.cluster.String(), granted, "system:authenticated")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{mine}, items)

	mallory := framework.UniqueName("mallory")
	code, plain, body := e.listedAt(t, "*", mallory)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, plain, mine)
	for _, group := range []string{"system:masters", "system:kcp:logical-cluster-admin", "system:kcp:initializer:x", "system:kcp:terminator:y"} {
		code, items, body := e.listedAt(t, "*", mallory, group)
		t.Logf("mallory in %s at *: %d, %d items", group, code, len(items))
		require.Equal(t, http.StatusOK, code, "%s: %s", group, body)
		require.Equal(t, plain, items, "mallory in %s sees at * what mallory without it sees", group)
		code, _, body = e.listedAt(t, org.cluster.String(), mallory, group, "team-"+mallory)
		require.Equal(t, http.StatusForbidden, code, "mallory in %s at the org's cluster: %s", group, body)
	}
	// The granted user keeps their grant with a dropped group beside it.
	code, items, body = e.listedAt(t, org.cluster.String(), granted, "system:masters")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{mine}, items)
}

// testDeletedWorkspace: a tenant watches its own workspace, which is then
// deleted; over the next 70 s another user's denials in another workspace
// stay 403 (polled every 5 s, none 503), and the tenant's watch ends (its
// client lists again and is denied).
func (e *identityEnv) testDeletedWorkspace(t *testing.T) {
	tenantOrg, otherOrg := newVWOrg(t, e.c, "rhdel"), newVWOrg(t, e.c, "rhother")
	tenant, bystander := framework.UniqueName("tenant"), framework.UniqueName("bystander")
	grantWorkspaceReader(t, tenantOrg.path, tenant)
	tenantAt := vwPrefix + tenantOrg.cluster.String() + vwResourcePath
	otherAt := vwPrefix + otherOrg.cluster.String() + vwResourcePath
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		code, body := e.as(t, tenantAt, tenant)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, excerpt(body))
	}, vwConvergeTimeout, 200*time.Millisecond, "the tenant may list its workspace%s", opLogs(e.plugin))
	code, body := e.as(t, otherAt, bystander)
	require.Equal(t, http.StatusForbidden, code, "the bystander in the other workspace: %s", body)

	watch := e.watch(t, tenantAt, tenant)
	err := e.c.kcp.Cluster(framework.RootPath).TenancyV1alpha1().Workspaces().Delete(t.Context(), tenantOrg.name, metav1.DeleteOptions{})
	require.NoError(t, err)
	deleted := time.Now()

	codes := map[int]int{}
	var answers []string
	var endedAfter time.Duration
	for time.Since(deleted) < deletedWatchWindow {
		code, body := e.as(t, otherAt, bystander)
		codes[code]++
		answers = append(answers, fmt.Sprintf("+%s %d %s", time.Since(deleted).Round(time.Second), code, excerpt(body)))
		if _, ended, _ := watch.seen("", 0); ended && endedAfter == 0 {
			endedAfter = time.Since(deleted)
		}
		time.Sleep(deletedWatchPoll)
	}
	t.Logf("the bystander's answers over %s after the deletion: %v", deletedWatchWindow, codes)
	if endedAfter == 0 {
		// The re-check after the LogicalCluster is gone may come a little
		// after the window: at most the watch's access bound later.
		kcptestinghelpers.Eventually(t, func() (bool, string) {
			_, ended, events := watch.seen("", 0)
			return ended, fmt.Sprintf("events %v", events)
		}, 30*time.Second, time.Second, "the watch of the deleted workspace ends%s", opLogs(e.plugin))
		endedAfter = time.Since(deleted)
	}
	t.Logf("the tenant's watch ended %s after the deletion", endedAfter.Round(time.Second))
	require.Equal(t, map[int]int{http.StatusForbidden: len(answers)}, codes, "every denial of the bystander is 403:\n%s", strings.Join(answers, "\n"))

	// The tenant lists again: denied, as any cluster that does not exist.
	code, body = e.as(t, tenantAt, tenant)
	require.Equal(t, http.StatusForbidden, code, "the tenant's list after the deletion: %s", body)

	// What kcp answers a SubjectAccessReview in the deleted logical cluster,
	// asked as the plugin asks (its identity, its client): a denial or an
	// error; the plugin asks none once its LogicalCluster cache dropped the
	// cluster (authorization.ErrNoSuchCluster).
	review, err := authorization.NewSubjectAccessReviewer(kcp.BaseConfigT(t, "shard-base"))
	require.NoError(t, err)
	allowed, err := review(t.Context(), tenantOrg.cluster, authorizationv1.SubjectAccessReviewSpec{
		User:               tenant,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"},
	})
	t.Logf("kcp's answer to a SubjectAccessReview in the deleted cluster %s: allowed %t, error %v", tenantOrg.cluster, allowed, err)
	require.False(t, allowed)
}

// watch watches path as user through the front-proxy's certificate.
func (e *identityEnv) watch(t *testing.T, path, user string) *hostileWatch {
	t.Helper()
	client := &http.Client{Transport: e.proxy.Transport} // no timeout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	w := &hostileWatch{cancel: cancel, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.plugin.VirtualWorkspaceURL+path+"?watch=true", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", user)
	resp, err := client.Do(req) //nolint:bodyclose // closed by the reading goroutine below
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "watch %s as %s", path, user)
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		decoder := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var event struct {
				Type string `json:"type"`
			}
			if err := decoder.Decode(&event); err != nil {
				w.lock.Lock()
				w.err = err
				w.lock.Unlock()
				return
			}
			w.lock.Lock()
			w.events = append(w.events, event.Type)
			w.lock.Unlock()
		}
	}()
	t.Cleanup(w.stop)
	return w
}
