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
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
)

const (
	// hostileUser is the "user" battery's ordinary user of admin.kubeconfig.
	hostileUser = "user"
	// hostileFloodNames and hostileLongNames are how many made-up cluster names
	// the flood sends, short (x00001z) and long (system:a:a:...).
	hostileFloodNames = 10000
	hostileLongNames  = 100
	// hostileFloodConcurrency bounds the flood's requests in flight.
	hostileFloodConcurrency = 8
	// hostileMemorySlack is how much the plugin's RSS and heap may grow over a flood.
	hostileMemorySlack = 16 << 20
	// hostileMemoryPause is how long the plugin rests after the flood before its memory is read.
	hostileMemoryPause = 15 * time.Second
	// hostileRevocationTimeout bounds how long a watch at * may keep showing a
	// cluster after the grant was revoked (or show it again after a new grant):
	// the authorization cache period and the watch's re-check period, with a margin.
	hostileRevocationTimeout = 150 * time.Second
	// hostileStatusLimit is the most the status annotation may hold.
	hostileStatusLimit = 16 << 10
	// hostileHeapMetric is the plugin's Go heap in use, from its /metrics.
	hostileHeapMetric = "go_memstats_heap_inuse_bytes"
	// unresolvedKind is the kind label of mounts whose kind resolves nowhere.
	unresolvedKind = "(unresolved)"
)

// hostileEnv is what the sub-tests of TestHostile share: a plugin process of
// their own (virtual workspace only: the shared one in TestMain writes the
// annotations), an org the user may read and one it may not.
type hostileEnv struct {
	c       clients
	plugin  *framework.Plugin
	granted vwOrg
	denied  vwOrg
	// userToken and adminToken are the bearer tokens of the user and of kcp-admin.
	userToken, adminToken string
	// client reaches the plugin's virtual workspace listener; requests carry their tokens.
	client *http.Client
}

// TestHostile is issue 7, "safe to hand to every tenant", end to end: an
// ordinary user of kcp pokes at the virtual workspace's every path, floods it
// with made-up cluster names, compares what it is told about workspaces it may
// not see with what it is told about ones that do not exist, keeps a watch
// open after its grant is revoked; and tenants write mount objects and status
// annotations meant to break the controller (legacy annotations meant to:
// TestLegacyMountAnnotation, whose plugin honours them).
func TestHostile(t *testing.T) {
	e := &hostileEnv{c: newClients(t)}
	e.plugin = opStartPlugin(t, t, t.TempDir(), "hostile", kcp.KubeconfigPath, "--run-controller=false")
	opWaitStarted(t, e.plugin)
	e.client = opVWClient(t, e.plugin, nil)
	e.client.Timeout = 30 * time.Second
	e.userToken = kcp.ConfigT(t, userContext).BearerToken
	e.adminToken = kcp.ConfigT(t, adminContext).BearerToken

	e.granted, e.denied = newVWOrg(t, e.c, "hgranted"), newVWOrg(t, e.c, "hdenied")
	e.granted.mountAll(t, []vwMount{{workspace: "granted-a", object: "a", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	e.denied.mountAll(t, []vwMount{{workspace: "denied-a", object: "a", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	grantWorkspaceReader(t, e.granted.path, hostileUser)
	waitKCPAllows(t, e.granted.cluster, true)
	e.waitServed(t, e.granted.cluster, "granted-a")

	// The flood measures the plugin's memory: nothing may run beside it.
	t.Run("non-resource paths", e.testNonResourcePaths)                //nolint:paralleltest // before the flood
	t.Run("made-up cluster names", e.testFlood)                        //nolint:paralleltest // alone, it measures memory
	t.Run("forbidden equals not found", e.testForbiddenEqualsNotFound) //nolint:paralleltest // after the flood
	// The rest measures nothing: it waits (a revocation takes up to a
	// minute) beside the other parallel tests rather than before them, one
	// step after the other in this test's turn (parallel sub-tests would
	// wait for another turn at the end of the queue).
	t.Parallel()
	t.Run("revoked watch", e.testRevokedWatch)               //nolint:paralleltest // in TestHostile's turn
	t.Run("oversized conditions", e.testOversizedConditions) //nolint:paralleltest // in TestHostile's turn
}

// url is a path on the plugin's virtual workspace listener.
func (e *hostileEnv) url(path string) string {
	return e.plugin.VirtualWorkspaceURL + path
}

// get GETs a path of the plugin's listener with a bearer token.
func (e *hostileEnv) get(t *testing.T, path, token string) (int, string) {
	t.Helper()
	code, body, err := opGet(e.client, e.url(path), token)
	require.NoError(t, err, "GET %s", path)
	return code, body
}

// waitServed waits until the plugin's virtual workspace serves the named
// WorkspaceMount of cluster to kcp-admin (its cache may lag behind kcp).
func (e *hostileEnv) waitServed(t *testing.T, cluster logicalcluster.Name, name string) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		code, body, err := opGet(e.client, e.url(vwPrefix+cluster.String()+vwResourcePath+"/"+name), e.adminToken)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("%d: %s", code, body)
	}, vwConvergeTimeout, 200*time.Millisecond, "%s%s", "the plugin serves "+name, opLogs(e.plugin))
}

// waitKCPAllows waits until kcp itself lets the user list Workspaces in
// cluster (allowed) or no longer does (!allowed), so that the virtual
// workspace's verdict is not an early one.
func waitKCPAllows(t *testing.T, cluster logicalcluster.Name, allowed bool) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		r := kcpKubectl(t, userContext, cluster.String(), "get", "workspaces", "-o", "name")
		return (r.err == nil) == allowed, r.String()
	}, vwConvergeTimeout, 200*time.Millisecond, "kcp allows the user in %s: %t", cluster, allowed)
}

// testNonResourcePaths: an authenticated user gets the API's discovery,
// OpenAPI, version and health, and nothing of the server's insides
// (profiles, flags, metrics, logs), whether asked directly or below a
// cluster prefix; and cannot change the log verbosity.
func (e *hostileEnv) testNonResourcePaths(t *testing.T) {
	prefixes := []string{"", vwPrefix + e.granted.cluster.String(), vwPrefix + e.granted.path.String(), vwPrefix + "*"}
	hidden := []string{
		"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=2", "/debug/pprof/profile?seconds=1",
		"/debug/flags/v", "/debug/flags", "/metrics", "/metrics/slis", "/", "/logs", "/logs/",
		"/configz", "/flowcontrol", "/debug/api_priority_and_fairness/dump_requests",
		"/" + framework.UniqueName("random"), "/" + framework.UniqueName("random") + "/deeper",
	}
	var failures []string
	for _, prefix := range prefixes {
		for _, path := range hidden {
			code, body := e.get(t, prefix+path, e.userToken)
			if code != http.StatusForbidden && code != http.StatusNotFound {
				failures = append(failures, fmt.Sprintf("GET %s%s: %d, want 403 or 404: %s", prefix, path, code, excerpt(body)))
			}
		}
		// Changing the verbosity is not for a tenant either.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, e.url(prefix+"/debug/flags/v"), strings.NewReader("10"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.userToken)
		resp, err := e.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			failures = append(failures, fmt.Sprintf("PUT %s/debug/flags/v: %d, want an error", prefix, resp.StatusCode))
		}
	}
	// /api is allowed too, but this server has no core group: 404, which kubectl's discovery expects.
	served := []string{"/apis", "/apis/workspacemounts.io/v1alpha1", "/openapi/v2", "/openapi/v3", "/version", "/healthz", "/readyz", "/livez"}
	for _, prefix := range prefixes[1:] {
		for _, path := range served {
			code, body := e.get(t, prefix+path, e.userToken)
			if code != http.StatusOK {
				failures = append(failures, fmt.Sprintf("GET %s%s: %d, want 200: %s", prefix, path, code, excerpt(body)))
			}
		}
	}
	require.Empty(t, failures, "%d wrong answers:\n%s", len(failures), strings.Join(failures, "\n"))
}

// excerpt is the start of a response body for a failure message, quoted
// (some bodies, such as profiles, are binary).
func excerpt(body string) string {
	const most = 120
	if len(body) > most {
		return strconv.Quote(body[:most]) + "..."
	}
	return strconv.Quote(body)
}

// hostileLongClusterNames returns n long cluster segments: valid-looking
// system:a:a:... paths of growing length, and ones no logical cluster can
// have (upper case, 300 characters, empty segments).
func hostileLongClusterNames(n int) (validLooking, invalid []string) {
	for i := range n {
		switch i % 4 {
		case 0, 1:
			validLooking = append(validLooking, "system:"+strings.Repeat("a:", 5+i)+"a")
		case 2:
			invalid = append(invalid, "System:"+strings.Repeat("A:", 5+i)+"A")
		default:
			invalid = append(invalid, "system:"+strings.Repeat("a", 300+i))
		}
	}
	invalid = append(invalid, "system:a::a", "system:"+strings.Repeat("a:", 150)+"a", "SYSTEM:ADMIN")
	return validLooking, invalid
}

// testFlood sends 10,000 made-up cluster names and long ones as the user:
// every answer is 403 (400 for names no logical cluster can have), and the
// plugin's memory does not grow with the names.
func (e *hostileEnv) testFlood(t *testing.T) {
	short := make([]string, hostileFloodNames)
	for i := range short {
		short[i] = fmt.Sprintf("x%05dz", i+1)
	}
	validLooking, invalid := hostileLongClusterNames(hostileLongNames)
	path := func(name string) string { return vwPrefix + url.PathEscape(name) + vwResourcePath }

	// Warm up (connections, caches, the TokenReview) before the first sample.
	for _, name := range short[:50] {
		e.get(t, path(name+"warm"), e.userToken)
	}
	before := e.memory(t)
	t.Logf("before the flood: RSS %s, heap %s, %d metric series", framework.MiB(before.RSS), framework.MiB(uint64(before.heap)), before.series)

	type answer struct {
		name string
		code int
		body string
	}
	flood := func(names []string) []answer {
		answers := make([]answer, len(names))
		indexes := make(chan int)
		var group sync.WaitGroup
		for range hostileFloodConcurrency {
			group.Go(func() {
				for i := range indexes {
					code, body, err := opGet(e.client, e.url(path(names[i])), e.userToken)
					if err != nil {
						code, body = -1, err.Error()
					}
					answers[i] = answer{name: names[i], code: code, body: body}
				}
			})
		}
		for i := range names {
			indexes <- i
		}
		close(indexes)
		group.Wait()
		return answers
	}
	began := time.Now()
	shortAnswers, validAnswers, invalidAnswers := flood(short), flood(validLooking), flood(invalid)
	t.Logf("%d requests in %s", len(shortAnswers)+len(validAnswers)+len(invalidAnswers), time.Since(began).Round(time.Millisecond))

	codes := map[string]map[int]int{}
	var wrong []string
	check := func(kind string, answers []answer, allowed ...int) {
		codes[kind] = map[int]int{}
		for _, a := range answers {
			codes[kind][a.code]++
			ok := false
			for _, code := range allowed {
				ok = ok || a.code == code
			}
			if !ok && len(wrong) < 20 {
				wrong = append(wrong, fmt.Sprintf("%s %.80s: %d, want %v: %s", kind, a.name, a.code, allowed, excerpt(a.body)))
			}
		}
	}
	check("made-up", shortAnswers, http.StatusForbidden)
	check("long", validAnswers, http.StatusForbidden, http.StatusBadRequest)
	check("invalid", invalidAnswers, http.StatusForbidden, http.StatusBadRequest)
	t.Logf("status codes by kind of name: %v", codes)
	require.NoError(t, e.plugin.CheckRunning(), "the plugin died under the flood%s", opLogs(e.plugin))

	time.Sleep(hostileMemoryPause)
	after := e.memory(t)
	t.Logf("after the flood and %s: RSS %s (peak %s), heap %s, %d metric series", hostileMemoryPause, framework.MiB(after.RSS), framework.MiB(after.Peak), framework.MiB(uint64(after.heap)), after.series)
	assertGrowth := func(what string, before, after float64) {
		t.Helper()
		if after > before+hostileMemorySlack {
			t.Errorf("the plugin's %s grew from %s to %s over the flood, more than %s", what,
				framework.MiB(uint64(before)), framework.MiB(uint64(after)), framework.MiB(hostileMemorySlack))
		}
	}
	assertGrowth("RSS", float64(before.RSS), float64(after.RSS))
	assertGrowth("heap in use", before.heap, after.heap)
	require.Empty(t, wrong, "wrong answers to made-up cluster names (first 20):\n%s", strings.Join(wrong, "\n"))
}

// hostileMemory is the plugin's memory at one moment.
type hostileMemory struct {
	framework.Memory
	heap float64
	// series counts the samples of the plugin's /metrics: names that become
	// label values are a way for memory to grow.
	series int
}

// memory reads the plugin's VmRSS and VmHWM from /proc and its heap in use from its /metrics.
func (e *hostileEnv) memory(t *testing.T) hostileMemory {
	t.Helper()
	m, err := framework.ReadMemory(e.plugin.Pid())
	require.NoError(t, err)
	metrics, err := framework.ScrapeMetrics(context.Background(), opHTTP, e.plugin.MetricsURL+"/metrics")
	require.NoError(t, err)
	heap, found := metrics.Sum(hostileHeapMetric, nil)
	require.True(t, found, "the plugin's /metrics has no %s", hostileHeapMetric)
	series := 0
	for _, family := range metrics {
		series += len(family.GetMetric())
	}
	return hostileMemory{Memory: m, heap: heap, series: series}
}

// testForbiddenEqualsNotFound: to the user, a workspace that exists but is
// not theirs and one that does not exist look the same: same status code,
// same body but for the requested name.
func (e *hostileEnv) testForbiddenEqualsNotFound(t *testing.T) {
	missing := framework.UniqueName("hmissing")
	for _, pair := range []struct {
		what             string
		existing, absent string
		suffix           string
		// discovery is the same for every cluster: served, as long as it
		// tells nothing about the cluster.
		discovery bool
	}{
		{"workspace path, collection", e.denied.path.String(), "root:" + missing, vwResourcePath, false},
		{"workspace path, object", e.denied.path.String(), "root:" + missing, vwResourcePath + "/denied-a", false},
		{"workspace path, watch", e.denied.path.String(), "root:" + missing, vwResourcePath + "?watch=true&timeoutSeconds=1", false},
		{"nested workspace path", e.denied.path.String() + ":denied-a", "root:" + missing + ":denied-a", vwResourcePath, false},
		{"logical cluster, collection", e.denied.cluster.String(), "x" + strings.ReplaceAll(missing, "-", "") + "z", vwResourcePath, false},
		{"logical cluster, discovery", e.denied.cluster.String(), "x" + strings.ReplaceAll(missing, "-", "") + "z", "/apis/workspacemounts.io/v1alpha1", true},
	} {
		existingCode, existingBody := e.get(t, vwPrefix+pair.existing+pair.suffix, e.userToken)
		absentCode, absentBody := e.get(t, vwPrefix+pair.absent+pair.suffix, e.userToken)
		placeholder := func(body, name string) string { return strings.ReplaceAll(body, name, "<cluster>") }
		if existingCode != absentCode || placeholder(existingBody, pair.existing) != placeholder(absentBody, pair.absent) {
			t.Errorf("%s: a workspace the user may not see and one that does not exist tell apart:\n  %s: %d %s\n  %s: %d %s",
				pair.what, pair.existing, existingCode, existingBody, pair.absent, absentCode, absentBody)
		}
		if existingCode == http.StatusOK && !pair.discovery {
			t.Errorf("%s: the user reads %s: %s", pair.what, pair.existing, existingBody)
		}
	}
}

// hostileWatch is a raw watch of WorkspaceMounts at * as the user, recording
// every event as "TYPE name@cluster".
type hostileWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	lock   sync.Mutex
	events []string
	err    error
}

// listAtWildcard lists the WorkspaceMounts at * as the user and returns them
// as name@cluster, and the list's resource version.
func (e *hostileEnv) listAtWildcard(t *testing.T) (map[string]bool, string) {
	t.Helper()
	code, body := e.get(t, vwPrefix+"*"+vwResourcePath, e.userToken)
	require.Equal(t, http.StatusOK, code, "list at * as the user: %s", body)
	list := &wsmv1alpha1.WorkspaceMountList{}
	require.NoError(t, json.Unmarshal([]byte(body), list))
	names := map[string]bool{}
	for _, item := range list.Items {
		names[item.Name+"@"+item.Annotations[logicalcluster.AnnotationKey]] = true
	}
	return names, list.ResourceVersion
}

// startWatch lists at * as the user, as kubectl get -w does, and watches from
// the list's resource version; it returns the watch and what the list held.
func (e *hostileEnv) startWatch(t *testing.T) (*hostileWatch, map[string]bool) {
	t.Helper()
	listed, resourceVersion := e.listAtWildcard(t)
	client := opVWClient(t, e.plugin, nil)
	client.Timeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	w := &hostileWatch{cancel: cancel, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url(vwPrefix+"*"+vwResourcePath+"?watch=true&allowWatchBookmarks=true&resourceVersion="+resourceVersion), http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.userToken)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req) //nolint:bodyclose // closed by the reading goroutine below
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "watch at * as the user")
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		decoder := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var event struct {
				Type   string                     `json:"type"`
				Object wsmv1alpha1.WorkspaceMount `json:"object"`
			}
			if err := decoder.Decode(&event); err != nil {
				w.lock.Lock()
				w.err = err
				w.lock.Unlock()
				return
			}
			w.lock.Lock()
			w.events = append(w.events, event.Type+" "+event.Object.Name+"@"+event.Object.Annotations[logicalcluster.AnnotationKey])
			w.lock.Unlock()
		}
	}()
	t.Cleanup(w.stop)
	return w, listed
}

// seen tells whether the event came after the first skip events, and
// whether the watch has ended.
func (w *hostileWatch) seen(event string, skip int) (found, ended bool, events []string) {
	w.lock.Lock()
	defer w.lock.Unlock()
	for i, e := range w.events {
		if i >= skip && e == event {
			found = true
		}
	}
	select {
	case <-w.done:
		ended = true
	default:
	}
	return found, ended, append([]string(nil), w.events...)
}

func (w *hostileWatch) count() int {
	w.lock.Lock()
	defer w.lock.Unlock()
	return len(w.events)
}

func (w *hostileWatch) stop() {
	w.cancel()
	<-w.done
}

// testRevokedWatch: a watch at * stops showing a cluster once the user's
// grant there is revoked (DELETED for its WorkspaceMounts, or the watch
// ends), and shows it again after a new grant.
func (e *hostileEnv) testRevokedWatch(t *testing.T) {
	org := newVWOrg(t, e.c, "hwatch")
	org.mountAll(t, []vwMount{{workspace: "watched", object: "watched", want: mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound}}})
	grantWorkspaceReader(t, org.path, hostileUser)
	waitKCPAllows(t, org.cluster, true)
	e.waitServed(t, org.cluster, "watched")
	key := "watched@" + org.cluster.String()

	kcptestinghelpers.Eventually(t, func() (bool, string) {
		listed, _ := e.listAtWildcard(t)
		return listed[key], fmt.Sprintf("the list at * holds %d WorkspaceMounts, not %s", len(listed), key)
	}, vwConvergeTimeout, 200*time.Millisecond, "%s%s", "a list at * shows "+key, opLogs(e.plugin))
	w, listed := e.startWatch(t)
	require.True(t, listed[key], "the list at * before the watch shows %s", key)

	kube, err := kcpkubernetesclientset.NewForConfig(kcp.BaseConfigT(t, "base"))
	require.NoError(t, err)
	bindings := kube.Cluster(org.path).RbacV1().ClusterRoleBindings()
	reader, err := bindings.Get(context.Background(), "vw-test-workspace-reader", metav1.GetOptions{})
	require.NoError(t, err)
	skip := w.count()
	revoked := time.Now()
	require.NoError(t, bindings.Delete(context.Background(), reader.Name, metav1.DeleteOptions{}))
	waitKCPAllows(t, org.cluster, false)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		found, ended, events := w.seen("DELETED "+key, skip)
		return found || ended, fmt.Sprintf("events %v", events)
	}, hostileRevocationTimeout, time.Second, "%s%s", "after the revocation, DELETED "+key+" or the end of the watch", opLogs(e.plugin))
	_, ended, _ := w.seen("", 0)
	t.Logf("revocation took effect after %s (watch ended: %t)", time.Since(revoked).Round(time.Second), ended)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		listed, _ := e.listAtWildcard(t)
		return !listed[key], "the list at * still shows " + key
	}, vwConvergeTimeout, time.Second, "%s%s", "after the revocation, a list at * without "+key, opLogs(e.plugin))

	// Granted again: the watch (or a new one, if it ended) shows it again.
	if ended {
		w, _ = e.startWatch(t)
	}
	skip = w.count()
	regranted := time.Now()
	_, err = bindings.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader.Name}, RoleRef: reader.RoleRef, Subjects: reader.Subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitKCPAllows(t, org.cluster, true)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		found, ended, events := w.seen("ADDED "+key, skip)
		if ended && !found {
			// The watch ended: list and watch again, as kubectl would; the list may show it.
			var listed map[string]bool
			w, listed = e.startWatch(t)
			skip = 0
			found = listed[key]
		}
		return found, fmt.Sprintf("events %v", events)
	}, hostileRevocationTimeout, time.Second, "%s%s", "after the new grant, ADDED "+key, opLogs(e.plugin))
	t.Logf("the new grant took effect after %s", time.Since(regranted).Round(time.Second))
}

// testOversizedConditions: a mount object whose conditions carry 20,000
// characters in type, reason and message: the status annotation stays small
// and the phase converges.
func (e *hostileEnv) testOversizedConditions(t *testing.T) {
	org := newVWOrg(t, e.c, "hoversize")
	huge := func(letter string) string { return strings.Repeat(letter, 20000) }
	conditions := make([]interface{}, 0, 10)
	for i := range 10 {
		conditions = append(conditions, map[string]interface{}{
			"type": fmt.Sprintf("%s%d", huge("T"), i), "status": "False",
			"reason": fmt.Sprintf("%s%d", huge("R"), i), "message": huge("m"),
			"lastTransitionTime": "2026-01-02T03:04:05Z",
		})
	}
	e.c.createMountObject(t, org.path, kubeClusters, "huge", map[string]interface{}{"phase": "Connecting", "conditions": conditions})
	e.c.createMountedWorkspace(t, org.path, "huge", kubeClusters.ref("huge"))
	e.c.waitForMount(t, org.path, "huge", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
	ws, err := e.c.kcp.Cluster(org.path).TenancyV1alpha1().Workspaces().Get(context.Background(), "huge", metav1.GetOptions{})
	require.NoError(t, err)
	status := ws.Annotations[mount.StatusAnnotationKey]
	require.Less(t, len(status), hostileStatusLimit, "the %s annotation is %d bytes", mount.StatusAnnotationKey, len(status))
	t.Logf("%s is %d bytes", mount.StatusAnnotationKey, len(status))
}
