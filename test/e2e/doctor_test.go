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
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kcpkubernetesclientset "github.com/kcp-dev/client-go/kubernetes"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/doctor"
	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// doctorRun is one run of `workspacemounts doctor -o json` (the binary, as
// an operator runs it): its exit code and its results by check.
type doctorRun struct {
	code    int
	results map[string]doctor.Result
	stdout  string
}

func runDoctor(t *testing.T, args ...string) doctorRun {
	t.Helper()
	code, stdout, stderr, took := opRun(t, append([]string{"doctor", "--output=json"}, args...)...)
	t.Logf("workspacemounts doctor: exit status %d after %s:\n%s", code, took.Round(time.Millisecond), stdout)
	var results []doctor.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &results), "doctor's output; stderr %q", stderr)
	run := doctorRun{code: code, results: map[string]doctor.Result{}, stdout: stdout}
	for _, r := range results {
		run.results[r.Check] = r
	}
	return run
}

// status is the verdict of check, with the table for a failure message.
func (r doctorRun) requireStatus(t *testing.T, check string, want doctor.Status, detail ...string) doctor.Result {
	t.Helper()
	result, ok := r.results[check]
	require.True(t, ok, "doctor has no check %s:\n%s", check, r.stdout)
	require.Equal(t, want, result.Status, "%s: %s", check, r.stdout)
	for _, d := range detail {
		require.Contains(t, result.Detail, d, check)
	}
	if want == doctor.Fail || want == doctor.Warn {
		require.NotEmpty(t, result.Fix, "%s names its fix", check)
	}
	return result
}

// TestDoctor: `workspacemounts doctor` against real set-ups. The shared kcp
// (v0.28.1 in make test, gate WorkspaceMounts on, its mini front-proxy mapping
// /services/workspacemounts to the shared plugin, which does not believe
// request headers) passes every check, with exit status 0. A kcp of the
// test's own, whose front-proxy maps nothing to the plugin, behind a plugin
// that believes request headers: the mapping and the old front-proxy are
// named. The gate on with level 3: see the sub-test.
func TestDoctor(t *testing.T) {
	t.Parallel()
	c := newClients(t)
	org := newVWOrg(t, c, "doctor")
	token := serviceAccountTokens(t, org, "doctor", 1)[0]
	shared := []string{"--kubeconfig", kcp.KubeconfigPath, "--context", "shard-base", "--front-proxy-url", kcp.BaseURL, "--token", token}
	release, err := kcp.Release(context.Background())
	require.NoError(t, err)
	// What the checks say of the release under test (make test: v0.28.1).
	releaseName, strips := "v"+release.String(), release.AtLeast(doctor.StripsIdentityHeaders)
	legacy := !release.AtLeast(kcprelease.HTTPSMounts)

	t.Run("a correct set-up passes", func(t *testing.T) {
		t.Parallel()
		run := runDoctor(t, append(shared, "--virtual-workspace-url", virtualWorkspaceURL)...)
		for check, r := range run.results {
			require.Equal(t, doctor.OK, r.Status, "%s: %s", check, run.stdout)
		}
		require.Equal(t, 0, run.code, run.stdout)
		run.requireStatus(t, doctor.CheckKCPVersion, doctor.OK, "kcp "+releaseName)
		run.requireStatus(t, doctor.CheckMountsRelease, doctor.OK)
		if legacy {
			run.requireStatus(t, doctor.CheckMountURLContract, doctor.OK, "kcp "+releaseName+" routes http and https mount URLs", "(the legacy form)",
				"--mount-url-contract=auto: levels 1 and 2 take the legacy form")
		} else {
			run.requireStatus(t, doctor.CheckMountURLContract, doctor.OK, "kcp "+releaseName)
		}
		run.requireStatus(t, doctor.CheckGate, doctor.OK, "is on", "level 1")
		// Published by the shared plugin, which runs in this process.
		run.requireStatus(t, doctor.CheckLease, doctor.OK, "workspacemounts "+version.Get().Version+", level 1", "believes request headers: false")
		run.requireStatus(t, doctor.CheckMapping, doctor.OK, "the plugin's virtual workspace answered")
		if strips {
			run.requireStatus(t, doctor.CheckIdentityHeaders, doctor.OK, "GHSA-c8w2-fgvx-vhv4", releaseName, "deletes client-sent")
		} else {
			run.requireStatus(t, doctor.CheckIdentityHeaders, doctor.OK, "GHSA-c8w2-fgvx-vhv4", releaseName, "does not believe request headers")
		}
		run.requireStatus(t, doctor.CheckServingCertificate, doctor.OK, "valid until")
	})

	t.Run("the gate on with level 3 is named", func(t *testing.T) {
		t.Parallel()
		// A plugin with --workspace-url refuses to start, and so never
		// leads, where kcp's in-tree mounts controller runs
		// (TestWorkspaceConditionBesideInTree): the combination arises when
		// the gate is turned on under a level-3 plugin that leads already.
		// The test writes the Lease such a leader holds, with the
		// annotations pkg/leaderfacts gives its facts (as the plugin
		// publishes them, server/leaderfacts.go), on the shared kcp, whose
		// gate is on.
		id := framework.UniqueName("doctor-level-3")
		holder := "level-3_" + id
		client, err := kcpkubernetesclientset.NewForConfig(kcp.BaseConfigT(t, "base"))
		require.NoError(t, err)
		leases := client.Cluster(framework.RootPath).CoordinationV1().Leases("default")
		now, duration := metav1.NewMicroTime(time.Now()), int32(300)
		_, err = leases.Create(context.Background(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: leaderfacts.Facts{
				Identity: holder, Version: version.Get().Version, WorkspaceCondition: true, WorkspaceURL: true,
			}.Annotations()},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = leases.Delete(context.Background(), id, metav1.DeleteOptions{}) })

		run := runDoctor(t, append(shared, "--leader-election-id", id)...)
		require.Equal(t, 1, run.code, run.stdout)
		run.requireStatus(t, doctor.CheckLease, doctor.OK, "level 3")
		gate := run.requireStatus(t, doctor.CheckGate, doctor.Fail, "--workspace-url", "is on")
		require.Contains(t, gate.Fix, "WorkspaceMounts=false")
		run.requireStatus(t, doctor.CheckServingCertificate, doctor.Skip)
	})

	t.Run("own kcp", func(t *testing.T) {
		t.Parallel()
		e := newDoctorEnv(t)
		t.Run("a wrong mapping is named", func(t *testing.T) {
			t.Parallel()
			run := e.run(t)
			require.Equal(t, 1, run.code, run.stdout)
			// kcp v0.28.1 answers a /services/ path it maps to nothing
			// from its own virtual workspaces' router (403, "Path not
			// resolved to a valid virtual workspace").
			mapping := run.requireStatus(t, doctor.CheckMapping, doctor.Fail, "not the plugin's answer", "maps no /services/workspacemounts/")
			require.Contains(t, mapping.Fix, "additionalPathMappings")
		})
		t.Run("an old front-proxy is named", func(t *testing.T) {
			t.Parallel()
			run := e.run(t)
			require.Equal(t, 1, run.code, run.stdout)
			run.requireStatus(t, doctor.CheckLease, doctor.OK, "believes request headers: true")
			if strips { // not old: the headers are deleted, whatever the plugin believes
				run.requireStatus(t, doctor.CheckIdentityHeaders, doctor.OK, "GHSA-c8w2-fgvx-vhv4", releaseName, "deletes client-sent")
			} else {
				headers := run.requireStatus(t, doctor.CheckIdentityHeaders, doctor.Fail, "GHSA-c8w2-fgvx-vhv4", releaseName, "--requestheader-client-ca-file")
				require.Contains(t, headers.Fix, "v0.32.1")
			}
			run.requireStatus(t, doctor.CheckGate, doctor.OK, "is off")
		})
	})
}

// doctorEnv is a kcp of the test's own (v0.28.1, gate off), whose mini
// front-proxy maps nothing to the plugin, and a plugin that leads there and
// believes request headers (--requestheader-client-ca-file, as behind a
// front-proxy from v0.32.1 on).
type doctorEnv struct {
	kcp   *framework.Server
	id    string
	token string
}

func newDoctorEnv(t *testing.T) *doctorEnv {
	t.Helper()
	e := &doctorEnv{kcp: framework.StartT(t, framework.Options{}), id: framework.UniqueName("doctor")}
	dir := t.TempDir()
	_, caFile := opRequestHeaderCA(t, dir, "doctor-front-proxy-ca")
	opStartPlugin(t, t, dir, "trusting", e.kcp.KubeconfigPath,
		append([]string{"--leader-election-id", e.id}, framework.RequestHeaderArgs(caFile, framework.FrontProxyClientName)...)...)
	cfg := e.kcp.BaseConfigT(t, "base")
	client, err := kcpkubernetesclientset.NewForConfig(cfg)
	require.NoError(t, err)
	// A tenant's token: a ServiceAccount's of root.
	accounts := client.Cluster(framework.RootPath).CoreV1().ServiceAccounts("default")
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		_, err := accounts.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "doctor"}}, metav1.CreateOptions{})
		return err == nil, errString(err)
	}, time.Minute, 200*time.Millisecond, "creating the ServiceAccount doctor")
	expiration := int64(3600)
	token, err := accounts.CreateToken(t.Context(), "doctor", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.token = token.Status.Token
	// The plugin leads, and publishes its facts.
	leases := client.Cluster(framework.RootPath).CoordinationV1().Leases("default")
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		lease, err := leases.Get(t.Context(), e.id, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, published, err := leaderfacts.Parse(lease.Annotations)
		return published && err == nil, fmt.Sprintf("annotations %v (%v)", lease.Annotations, err)
	}, time.Minute, 200*time.Millisecond, "the plugin leads and publishes its facts on the Lease %s", e.id)
	return e
}

func (e *doctorEnv) run(t *testing.T) doctorRun {
	t.Helper()
	return runDoctor(t, "--kubeconfig", e.kcp.KubeconfigPath, "--context", "shard-base", "--leader-election-id", e.id,
		"--front-proxy-url", e.kcp.BaseURL, "--token", e.token)
}
