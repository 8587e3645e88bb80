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
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kcp-dev/logicalcluster/v3"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/controllers/workspacemounts"
)

// policyRefusedHost is a host the plugin's rules accept (a public name)
// and the emulated admission refuses, so that a refused write can be made
// to happen.
const policyRefusedHost = "refused.example.com"

// mountURLPolicyExpression is kcp v0.33's admission of spec.URL (kcp's docs
// concepts/workspaces/mounts.md @394ae14b) in CEL: a change of spec.URL must
// be to an https URL with a host, no user information, no query and no
// fragment; a Workspace keeping its URL, whatever it is, passes. And its
// host is not policyRefusedHost.
const mountURLPolicyExpression = `variables.url == variables.oldURL || (
  isURL(variables.url) &&
  url(variables.url).getScheme() == 'https' &&
  url(variables.url).getHostname() != '' &&
  variables.url.startsWith('https://' + url(variables.url).getHost()) &&
  !variables.url.contains('?') && !variables.url.contains('#') &&
  url(variables.url).getHostname() != '` + policyRefusedHost + `')`

// installMountURLPolicy creates the ValidatingAdmissionPolicy name and its
// binding where kcp looks for the policies of the Workspaces of target (at
// path): kcp v0.28.1 in target itself; kcp v0.32 in the cluster of the
// APIExport that binds tenancy.kcp.io workspaces there (root), if one does
// (getSourceClusterForGroupResource in its
// pkg/admission/validatingadmissionpolicy). So in both: a kcp applies one.
// A match condition on the Workspace's logical cluster keeps it to
// target's Workspaces. On UPDATE only: the plugin patches; kcp schedules a
// Workspace with an update of spec.URL to an https URL, which passes.
func (e *urlEnv) installMountURLPolicy(t *testing.T, path logicalcluster.Path, target logicalcluster.Name, name string) {
	t.Helper()
	e.installMountURLPolicyIn(t, path, target, name)
	if export := e.exportCluster(t, path); !export.Empty() && export != path {
		t.Logf("the policy %s goes in %s too, where kcp v0.32 looks for the policies of %s's Workspaces", name, export, path)
		e.installMountURLPolicyIn(t, export, target, name)
	}
}

func (e *urlEnv) installMountURLPolicyIn(t *testing.T, cluster logicalcluster.Path, target logicalcluster.Name, name string) {
	t.Helper()
	client := e.kubeIn(t, cluster)
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "in-" + target.String(),
				Expression: fmt.Sprintf("has(object.metadata.annotations) && '%s' in object.metadata.annotations && object.metadata.annotations['%s'] == '%s'",
					logicalcluster.AnnotationKey, logicalcluster.AnnotationKey, target),
			}},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{"tenancy.kcp.io"}, APIVersions: []string{"*"}, Resources: []string{"workspaces"},
					},
				},
			}}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "url", Expression: "has(object.spec.URL) ? object.spec.URL : ''"},
				{Name: "oldURL", Expression: "has(oldObject.spec.URL) ? oldObject.spec.URL : ''"},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        mountURLPolicyExpression,
				MessageExpression: `'spec.URL "' + variables.url + '" is refused by the emulated admission of kcp v0.33'`,
			}},
		},
	}
	_, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(context.Background(), policy, metav1.CreateOptions{})
	require.NoError(t, err, "creating ValidatingAdmissionPolicy %s in %s", name, cluster)
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(context.Background(), binding, metav1.CreateOptions{})
	require.NoError(t, err, "creating ValidatingAdmissionPolicyBinding %s in %s", name, cluster)
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// exportCluster is the cluster of the APIExport an APIBinding at path
// binds tenancy.kcp.io workspaces from, else zero.
func (e *urlEnv) exportCluster(t *testing.T, path logicalcluster.Path) logicalcluster.Path {
	t.Helper()
	bindings, err := e.c.dynamic.Cluster(path).Resource(apiBindingsResource).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err, "listing the APIBindings of %s", path)
	for _, b := range bindings.Items {
		resources, _, _ := unstructured.NestedSlice(b.Object, "status", "boundResources")
		for _, r := range resources {
			r, _ := r.(map[string]interface{})
			if r["group"] == "tenancy.kcp.io" && r["resource"] == "workspaces" {
				if export, _, _ := unstructured.NestedString(b.Object, "status", "apiExportClusterName"); export != "" {
					return logicalcluster.Name(export).Path()
				}
			}
		}
	}
	return logicalcluster.Path{}
}

// apiBindingsResource is kcp's APIBindings, at the version every kcp
// release here serves.
var apiBindingsResource = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apibindings"}

// waitPolicyEnforced waits until kcp enforces the policy on Workspace
// probe in cluster: a dry-run patch of its spec.URL to an http URL, as the
// shard admin (whom alone kcp lets change spec.URL), is refused with 422.
// Nothing is written.
func (e *urlEnv) waitPolicyEnforced(t *testing.T, cluster logicalcluster.Path, probe string) {
	t.Helper()
	workspaces := newClientsFor(t, e.shardAdmin).kcp.Cluster(cluster).TenancyV1alpha1().Workspaces()
	patch := []byte(`{"spec":{"URL":"http://probe.example.com"}}`)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		_, err := workspaces.Patch(context.Background(), probe, types.MergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, "the dry-run patch to an http URL was admitted"
		}
		return apierrors.IsInvalid(err), err.Error()
	}, convergeTimeout, 200*time.Millisecond, "kcp enforces the policy in %s", cluster)
}

// refusedWrites is what kcp and the shared plugin count of the writes
// kcp's admission denied with the policy name.
type refusedWrites struct {
	// denied is kcp's count:
	// apiserver_validating_admission_policy_check_total{policy=name,enforcement_action="deny"}.
	denied int
	// unprocessable is the plugin's count of its patches answered 422
	// (client-go's rest_client_requests_total); failed its count of its
	// patches of Workspaces that failed.
	unprocessable, failed int
}

func (w refusedWrites) minus(earlier refusedWrites) refusedWrites {
	return refusedWrites{denied: w.denied - earlier.denied, unprocessable: w.unprocessable - earlier.unprocessable, failed: w.failed - earlier.failed}
}

func (w refusedWrites) String() string {
	return fmt.Sprintf("kcp denied %d; the plugin's patches answered 422: %d, failed: %d", w.denied, w.unprocessable, w.failed)
}

// refusedWrites scrapes the counts of writes denied with the policy name.
// kcp counts a denial before the plugin has its answer, so the plugin is
// scraped before and after kcp, until both agree (no write under way).
func (e *urlEnv) refusedWrites(t *testing.T, name string) refusedWrites {
	t.Helper()
	var w refusedWrites
	for range 10 {
		before := e.pluginRefusedWrites(t)
		m := e.kcpMetrics(t)
		denied, _ := m.Sum("apiserver_validating_admission_policy_check_total", map[string]string{"policy": name, "enforcement_action": "deny"})
		w = e.pluginRefusedWrites(t)
		w.denied = int(denied)
		if before == w {
			return w
		}
	}
	return w
}

// pluginRefusedWrites is what the shared plugin counts of its refused
// writes.
func (e *urlEnv) pluginRefusedWrites(t *testing.T) refusedWrites {
	t.Helper()
	m := e.pluginMetrics(t)
	code, _ := m.Sum("rest_client_requests_total", map[string]string{"code": fmt.Sprint(http.StatusUnprocessableEntity), "method": http.MethodPatch})
	errs, _ := m.Sum(condAnnotationPatches, map[string]string{"result": "error"})
	statusErrs, _ := m.Sum(condStatusPatches, map[string]string{"result": "error"})
	return refusedWrites{unprocessable: int(code), failed: int(errs + statusErrs)}
}

// refusalBound is how many times the controller tries, within window, a
// spec.URL kcp refuses every time while the mount's URL stays the same:
// once, then once per URLRefusalRecheck that fits in the window.
func refusalBound(window time.Duration) int {
	return 1 + int(window/workspacemounts.URLRefusalRecheck)
}

// kubeIn is a Kubernetes client of cluster as kcp-admin.
func (e *urlEnv) kubeIn(t *testing.T, cluster logicalcluster.Path) kubernetes.Interface {
	t.Helper()
	cfg := e.kcp.BaseConfigT(t, "base")
	cfg.Host += cluster.RequestPath()
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}
