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

package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workspacemounts/workspacemounts/cmd/workspacemounts/app"
)

const (
	chartsDir      = "charts"
	chartDir       = "charts/workspacemounts"
	chartRelease   = "workspacemounts" // the release name: the objects' names are deploy/base's
	chartNamespace = "workspacemounts"
)

// helmBinary is $HELM_BINARY (make test-chart builds bin/helm and sets it).
// Unset, as under a plain `go test ./...`, the chart tests are skipped with a
// reason, as the kustomize tests are without kubectl; set to a missing file,
// they fail.
func helmBinary(t *testing.T) string {
	t.Helper()
	helm := os.Getenv("HELM_BINARY")
	if helm == "" {
		t.Skip("HELM_BINARY is not set: the Helm chart is not checked; run `make test-chart` (it builds bin/helm and sets HELM_BINARY)")
	}
	_, err := os.Stat(helm) //nolint:gosec // G703: the helm binary is the caller's choice (HELM_BINARY).
	require.NoError(t, err, "HELM_BINARY=%s: build it with `make test-chart` (bin/helm)", helm)
	return helm
}

// helm runs the helm binary; it returns stdout, and stderr in the error.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helmBinary(t), args...) //nolint:gosec // G204: helm with the test's own arguments.
	// No user configuration or repositories: only the chart on disk.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &helmError{err: err, stderr: stderr.String()}
	}
	return out, nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + e.stderr }

// chartValues are the values files the chart is checked with: "" (the
// defaults) and every example.
func chartValues(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(deployFS, chartDir+"/examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append([]string{""}, files...)
}

// valuesName names a subtest after its values file.
func valuesName(file string) string {
	if file == "" {
		return "defaults"
	}
	return path.Base(file)
}

func valuesArgs(file string, set ...string) []string {
	var args []string
	if file != "" {
		args = append(args, "-f", file)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// helmTemplate renders the chart with a values file ("" for the defaults).
func helmTemplate(t *testing.T, file string, set ...string) map[string][][]byte {
	t.Helper()
	args := append([]string{"template", chartRelease, chartDir, "--namespace", chartNamespace}, valuesArgs(file, set...)...)
	out, err := helm(t, args...)
	require.NoError(t, err, "helm %s", strings.Join(args, " "))
	return byKind(t, out)
}

func single[T any](t *testing.T, objs map[string][][]byte, kind string) *T {
	t.Helper()
	require.Len(t, objs[kind], 1, kind)
	obj := new(T)
	require.NoError(t, yaml.UnmarshalStrict(objs[kind][0], obj), kind)
	return obj
}

// TestChartVersion: Chart.yaml and deploy/base follow the VERSION file.
func TestChartVersion(t *testing.T) {
	t.Parallel()
	version, err := os.ReadFile("../VERSION")
	require.NoError(t, err)
	release := strings.TrimSpace(string(version))
	var chart struct {
		APIVersion string `json:"apiVersion"`
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &chart))
	require.Equal(t, "v2", chart.APIVersion)
	require.Equal(t, "workspacemounts", chart.Name)
	require.Equal(t, release, chart.AppVersion, "Chart.yaml appVersion is the VERSION file")
	require.Equal(t, strings.TrimPrefix(release, "v"), chart.Version, "Chart.yaml version is the VERSION file without the v")

	var k struct {
		Images []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "base/kustomization.yaml"), &k))
	require.Len(t, k.Images, 1)
	require.Equal(t, release, k.Images[0].NewTag, "deploy/base's image tag is the VERSION file")
}

// TestChartFiles keeps the chart's copies of the monitoring files equal to
// deploy/monitoring's (helm cannot read files outside the chart).
func TestChartFiles(t *testing.T) {
	t.Parallel()
	for _, f := range []string{ruleFile, dashboardFile} {
		copied := path.Join(chartDir, "files", path.Base(f))
		require.Equal(t, string(readFile(t, f)), string(readFile(t, copied)), "%s must be a copy of %s (copy it again)", copied, f)
	}
}

func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, file := range chartValues(t) {
		t.Run("values="+valuesName(file), func(t *testing.T) {
			t.Parallel()
			args := append([]string{"lint", "--strict", chartDir, "--namespace", chartNamespace}, valuesArgs(file)...)
			out, err := helm(t, args...)
			require.NoError(t, err, "helm %s\n%s", strings.Join(args, " "), out)
		})
	}
}

// TestChartTemplate renders every values file: every object decodes strictly
// into its type (or is a known CRD kind), every argument is a flag of
// `workspacemounts start` and the values go together (parseArgs).
func TestChartTemplate(t *testing.T) {
	t.Parallel()
	for _, file := range chartValues(t) {
		t.Run("values="+valuesName(file), func(t *testing.T) {
			t.Parallel()
			objs := helmTemplate(t, file)
			require.NotContains(t, objs, "Namespace", "helm --create-namespace makes it")
			checkBuild(t, "chart "+file, objs)
			d := single[appsv1.Deployment](t, objs, "Deployment")
			require.Len(t, d.Spec.Template.Spec.Containers, 1)
			flags := parseArgs(t, d.Spec.Template.Spec.Containers[0].Args)
			for k, v := range d.Spec.Selector.MatchLabels {
				require.Equal(t, v, d.Spec.Template.Labels[k])
			}
			switch path.Base(file) {
			case "sharded.yaml":
				require.NotContains(t, flags, "kubeconfig")
				require.Contains(t, flags, "root-kubeconfig")
				require.Contains(t, flags, "shards-kubeconfig")
			case "level-3.yaml":
				require.Equal(t, "true", flags["workspace-condition"])
				require.Equal(t, "true", flags["workspace-url"])
				require.NotContains(t, flags, "legacy-mount-annotation", "off unless asked for")
				require.Equal(t, "[mounts.example.com,10.20.0.0/16]", flags["workspace-url-allowed-hosts"], "a string slice")
				require.Equal(t, "30s", flags["workspace-condition-delay"])
				require.Equal(t, "10%", flags["max-unavailable"])
			case "cert-manager-and-monitoring.yaml":
				require.Len(t, objs["Certificate"], 2) // the CA's and the serving one
				require.Len(t, objs["Issuer"], 2)
				checkChartMonitoring(t, objs)
			}
		})
	}
}

// TestChartLegacyMountAnnotation: legacyMountAnnotation is
// --legacy-mount-annotation, off by default.
func TestChartLegacyMountAnnotation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{set: nil, want: ""},
		{set: []string{"legacyMountAnnotation=true"}, want: "true"},
	} {
		d := single[appsv1.Deployment](t, helmTemplate(t, "", tc.set...), "Deployment")
		flags := parseArgs(t, d.Spec.Template.Spec.Containers[0].Args)
		require.Equal(t, tc.want, flags["legacy-mount-annotation"], "--set %v", tc.set)
	}
}

// TestChartMountHeartbeatTimeout: mountHeartbeatTimeout is
// --mount-heartbeat-timeout, off by default.
func TestChartMountHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{set: nil, want: "0s"},
		{set: []string{"mountHeartbeatTimeout=2m"}, want: "2m0s"},
	} {
		d := single[appsv1.Deployment](t, helmTemplate(t, "", tc.set...), "Deployment")
		flags := effectiveFlags(t, d.Spec.Template.Spec.Containers[0].Args)
		require.Equal(t, tc.want, flags["mount-heartbeat-timeout"], "--set %v", tc.set)
	}
}

// TestChartMountURLContract: levels.mountURLContract is
// --mount-url-contract, auto by default.
func TestChartMountURLContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{set: nil, want: "auto"},
		{set: []string{"levels.mountURLContract=legacy"}, want: "legacy"},
		{set: []string{"levels.mountURLContract=https"}, want: "https"},
	} {
		d := single[appsv1.Deployment](t, helmTemplate(t, "", tc.set...), "Deployment")
		flags := effectiveFlags(t, d.Spec.Template.Spec.Containers[0].Args)
		require.Equal(t, tc.want, flags["mount-url-contract"], "--set %v", tc.set)
	}
}

// TestChartAllShards: kcp.kubeconfig.allShards is --all-shards beside
// --kubeconfig, off by default.
func TestChartAllShards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{set: nil, want: "false"},
		{set: []string{"kcp.kubeconfig.allShards=true"}, want: "true"},
	} {
		d := single[appsv1.Deployment](t, helmTemplate(t, "", tc.set...), "Deployment")
		flags := effectiveFlags(t, d.Spec.Template.Spec.Containers[0].Args)
		require.Equal(t, tc.want, flags["all-shards"], "--set %v", tc.set)
		require.Equal(t, "/etc/workspacemounts/kubeconfig/kubeconfig", flags["kubeconfig"], "--set %v", tc.set)
	}
}

// checkChartMonitoring: the chart's monitoring objects say what
// deploy/monitoring's say.
func checkChartMonitoring(t *testing.T, objs map[string][][]byte) {
	t.Helper()
	var rule struct {
		Spec ruleGroups `json:"spec"`
	}
	require.Len(t, objs["PrometheusRule"], 1)
	require.NoError(t, json.Unmarshal(objs["PrometheusRule"][0], &rule))
	require.Equal(t, parseRuleGroups(t, documents(t, readFile(t, ruleFile))[0]), rule.Spec, "the chart's PrometheusRule holds the groups of %s", ruleFile)

	cms := objs["ConfigMap"]
	require.Len(t, cms, 1)
	var cm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	require.NoError(t, json.Unmarshal(cms[0], &cm))
	require.Equal(t, "1", cm.Metadata.Labels["grafana_dashboard"])
	require.JSONEq(t, string(readFile(t, dashboardFile)), cm.Data[path.Base(dashboardFile)])

	type endpoints struct {
		Spec struct {
			Endpoints []map[string]any `json:"endpoints"`
		} `json:"spec"`
	}
	var chartSM, kustSM endpoints
	require.Len(t, objs["ServiceMonitor"], 1)
	require.NoError(t, json.Unmarshal(objs["ServiceMonitor"][0], &chartSM))
	require.NoError(t, json.Unmarshal(documents(t, readFile(t, "monitoring/servicemonitor.yaml"))[0], &kustSM))
	require.Equal(t, kustSM.Spec.Endpoints, chartSM.Spec.Endpoints)
}

// effectiveFlags is every flag of `workspacemounts start` with the value the
// arguments give it, defaults included: two argument lists that differ only
// in flags set to their defaults say the same thing.
func effectiveFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	_ = parseArgs(t, args) // the checks
	fs := pflag.NewFlagSet("workspacemounts start", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, _ = app.StartFlags(fs)
	require.NoError(t, fs.Parse(args[1:]))
	flags := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Value.String() })
	return flags
}

// compareDeployments requires the chart's Deployment to run what the
// kustomize build's does.
func compareDeployments(t *testing.T, kust, chart *appsv1.Deployment) {
	t.Helper()
	require.Equal(t, kust.Spec.Replicas, chart.Spec.Replicas, "replicas")
	require.Equal(t, kust.Spec.Strategy, chart.Spec.Strategy, "strategy")
	kp, cp := kust.Spec.Template.Spec, chart.Spec.Template.Spec
	require.Equal(t, kp.SecurityContext, cp.SecurityContext, "pod securityContext")
	require.Equal(t, kp.AutomountServiceAccountToken, cp.AutomountServiceAccountToken)
	require.Equal(t, kp.EnableServiceLinks, cp.EnableServiceLinks)
	require.Equal(t, kp.ServiceAccountName, cp.ServiceAccountName)
	require.Equal(t, kp.TerminationGracePeriodSeconds, cp.TerminationGracePeriodSeconds)
	require.Equal(t, kp.Volumes, cp.Volumes, "volumes")
	require.Len(t, cp.Containers, 1)
	kc, cc := kp.Containers[0], cp.Containers[0]
	require.Equal(t, kc.Name, cc.Name)
	require.Equal(t, kc.Image, cc.Image, "image (deploy/base's newTag, the chart's appVersion)")
	require.Equal(t, kc.ImagePullPolicy, cc.ImagePullPolicy)
	require.Equal(t, effectiveFlags(t, kc.Args), effectiveFlags(t, cc.Args), "the flags, defaults included")
	require.Equal(t, kc.Env, cc.Env, "env")
	require.Equal(t, kc.Ports, cc.Ports, "ports")
	require.Equal(t, kc.Resources, cc.Resources, "resources")
	require.Equal(t, kc.SecurityContext, cc.SecurityContext, "container securityContext")
	require.Equal(t, kc.StartupProbe, cc.StartupProbe, "startupProbe")
	require.Equal(t, kc.LivenessProbe, cc.LivenessProbe, "livenessProbe")
	require.Equal(t, kc.ReadinessProbe, cc.ReadinessProbe, "readinessProbe")
	require.Equal(t, kc.VolumeMounts, cc.VolumeMounts, "volumeMounts")
}

// TestChartMatchesKustomize: the chart's defaults render what deploy/base
// does, and examples/sharded.yaml what deploy/overlays/sharded does. The
// kcp-side RBAC is not in the chart (deploy/kcp is applied to kcp).
func TestChartMatchesKustomize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ kustomization, values string }{
		{"base", ""},
		{"overlays/sharded", chartDir + "/examples/sharded.yaml"},
	} {
		t.Run(c.kustomization, func(t *testing.T) {
			t.Parallel()
			chart := helmTemplate(t, c.values)
			kust := kustomize(t, c.kustomization)
			compareDeployments(t,
				single[appsv1.Deployment](t, kust, "Deployment"),
				single[appsv1.Deployment](t, chart, "Deployment"))

			for _, kind := range []string{"Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy"} {
				require.Len(t, chart[kind], len(kust[kind]), kind)
			}
			type svc struct {
				Metadata struct {
					Name, Namespace string
				}
				Spec struct {
					Type  string           `json:"type"`
					Ports []map[string]any `json:"ports"`
				}
			}
			var ks, cs svc
			require.NoError(t, json.Unmarshal(kust["Service"][0], &ks))
			require.NoError(t, json.Unmarshal(chart["Service"][0], &cs))
			require.Equal(t, ks, cs, "the Service (the front-proxy's backend URL)")

			kn := single[networkingv1.NetworkPolicy](t, kust, "NetworkPolicy")
			cn := single[networkingv1.NetworkPolicy](t, chart, "NetworkPolicy")
			require.Equal(t, kn.Spec.Ingress, cn.Spec.Ingress, "NetworkPolicy ingress")
			require.Equal(t, kn.Spec.PolicyTypes, cn.Spec.PolicyTypes)
		})
	}
}

// TestChartRefuses: values that cannot work fail `helm template` with the
// chart's message.
// TestChartNetworkPolicy: the https port admits the front-proxy's
// namespace (and pods, with a podSelector) only, or networkPolicy.https.from
// instead.
func TestChartNetworkPolicy(t *testing.T) {
	t.Parallel()
	httpsPeers := func(values string) []networkingv1.NetworkPolicyPeer {
		file := ""
		if values != "" {
			file = filepath.Join(t.TempDir(), "values.yaml")
			require.NoError(t, os.WriteFile(file, []byte(values), 0o600))
		}
		np := single[networkingv1.NetworkPolicy](t, helmTemplate(t, file), "NetworkPolicy")
		require.Len(t, np.Spec.Ingress, 2)
		require.Equal(t, "https", np.Spec.Ingress[0].Ports[0].Port.String())
		return np.Spec.Ingress[0].From
	}
	kcpNamespace := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kcp"}}
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: kcpNamespace}}, httpsPeers(""), "the front-proxy's namespace by default")
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: kcpNamespace,
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "front-proxy"}},
	}}, httpsPeers("networkPolicy: {https: {podSelector: {matchLabels: {app.kubernetes.io/component: front-proxy}}}}"))
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
		httpsPeers("networkPolicy: {https: {from: [{namespaceSelector: {}}]}}"), "from instead: every pod of the cluster")
}

// TestChartNetworkPolicyMetrics: the metrics port admits Prometheus's pods
// (prometheus-operator's labels) in any namespace by default, a namespace
// and pod selector of the values', or networkPolicy.metrics.from instead.
func TestChartNetworkPolicyMetrics(t *testing.T) {
	t.Parallel()
	metricsPeers := func(values string) []networkingv1.NetworkPolicyPeer {
		file := ""
		if values != "" {
			file = valuesFile(t, values)
		}
		np := single[networkingv1.NetworkPolicy](t, helmTemplate(t, file), "NetworkPolicy")
		require.Len(t, np.Spec.Ingress, 2)
		require.Equal(t, "metrics", np.Spec.Ingress[1].Ports[0].Port.String())
		return np.Spec.Ingress[1].From
	}
	prometheus := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpIn, Values: []string{"prometheus", "prometheus-agent"},
	}}}
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: prometheus}}, metricsPeers(""),
		"Prometheus's pods, wherever they run")
	observability := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "observability"}}
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: observability, PodSelector: prometheus}},
		metricsPeers("networkPolicy: {metrics: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}}}"))
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{NamespaceSelector: observability}},
		metricsPeers("networkPolicy: {metrics: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}, podSelector: null}}"),
		"a namespace's every pod")
	require.Equal(t, []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}},
		metricsPeers("networkPolicy: {metrics: {from: [{ipBlock: {cidr: 192.0.2.0/24}}]}}"), "from instead")
}

func TestChartRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		set        []string
	}{
		{"workspaceURL without workspaceCondition", "levels.workspaceURL needs levels.workspaceCondition", []string{"levels.workspaceURL=true"}},
		{"allowed hosts without workspaceURL", "apply with levels.workspaceURL only", []string{"levels.workspaceURLAllowedHosts={example.com}"}},
		{"maxUnavailable without workspaceCondition", "levels.workspaceConditionDelay and levels.maxUnavailable gate the condition of levels.workspaceCondition", []string{"levels.maxUnavailable=0"}},
		{"workspaceConditionDelay without workspaceCondition", "apply with it only", []string{"levels.workspaceConditionDelay=30s"}},
		{"both kcp modes", "exclude each other", []string{"kcp.sharded.enabled=true"}},
		{"allShards and sharded", "use one or the other", []string{"kcp.kubeconfig.secretName=", "kcp.kubeconfig.allShards=true", "kcp.sharded.enabled=true"}},
		{"no kcp credentials", "set kcp.kubeconfig.secretName (one shard) or kcp.sharded.enabled", []string{"kcp.kubeconfig.secretName="}},
		{"requestheader CA without allowed names", "requestheader.allowedNames is required", []string{"requestheader.allowedNames=null"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"template", chartRelease, chartDir}, valuesArgs("", c.set...)...)
			_, err := helm(t, args...)
			require.Error(t, err, "helm %s", strings.Join(args, " "))
			require.Contains(t, err.Error(), c.want)
		})
	}
}

// valuesFile writes values into a file of the test's.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(file, []byte(values), 0o600))
	return file
}

// TestChartCASources: the request-header and client CAs come from a Secret
// or a ConfigMap, under any key, mounted as ca.crt where the flags read
// them; dedicatedCA is --requestheader-dedicated-ca instead of the allowed
// names.
func TestChartCASources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, values string
		want         map[string]corev1.Volume // by volume name; nil: no volume
		flags        map[string]string        // "" : not given
	}{
		{
			name: "defaults: a ConfigMap with ca.crt",
			want: map[string]corev1.Volume{"requestheader-ca": {Name: "requestheader-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "workspacemounts-requestheader-ca"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}}}},
			flags: map[string]string{"requestheader-allowed-names": "[kcp-front-proxy]", "requestheader-dedicated-ca": "", "client-ca-file": ""},
		},
		{
			name: "dedicated Secrets with tls.crt",
			values: `requestheader: {ca: {secretName: kcp-requestheader-client-ca, configMapName: "", key: tls.crt}, dedicatedCA: true, allowedNames: []}
clientCA: {secretName: kcp-client-ca, key: tls.crt}`,
			want: map[string]corev1.Volume{
				"requestheader-ca": {Name: "requestheader-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "kcp-requestheader-client-ca", DefaultMode: ptr.To[int32](0o440),
					Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "ca.crt"}},
				}}},
				"client-ca": {Name: "client-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "kcp-client-ca", DefaultMode: ptr.To[int32](0o440),
					Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "ca.crt"}},
				}}},
			},
			flags: map[string]string{
				"requestheader-dedicated-ca": "true", "requestheader-allowed-names": "",
				"requestheader-client-ca-file": "/etc/workspacemounts/requestheader-ca/ca.crt", "client-ca-file": "/etc/workspacemounts/client-ca/ca.crt",
			},
		},
		{
			name:   "a ConfigMap with another key",
			values: `clientCA: {configMapName: shard-client-ca, key: client-ca.pem}`,
			want: map[string]corev1.Volume{"client-ca": {Name: "client-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "shard-client-ca"},
				Items:                []corev1.KeyToPath{{Key: "client-ca.pem", Path: "ca.crt"}},
			}}}},
			flags: map[string]string{"client-ca-file": "/etc/workspacemounts/client-ca/ca.crt"},
		},
		{
			name:   "request header off",
			values: `requestheader: {ca: {configMapName: ""}}`,
			want:   map[string]corev1.Volume{"requestheader-ca": {}},
			flags:  map[string]string{"requestheader-client-ca-file": "", "requestheader-allowed-names": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := ""
			if tc.values != "" {
				file = valuesFile(t, tc.values)
			}
			d := single[appsv1.Deployment](t, helmTemplate(t, file), "Deployment")
			volumes := map[string]corev1.Volume{}
			for _, v := range d.Spec.Template.Spec.Volumes {
				volumes[v.Name] = v
			}
			mounts := map[string]string{}
			for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			for name, want := range tc.want {
				if want.Name == "" {
					require.NotContains(t, volumes, name)
					require.NotContains(t, mounts, name)
					continue
				}
				require.Equal(t, want, volumes[name], name)
				require.Equal(t, "/etc/workspacemounts/"+name, mounts[name], name)
			}
			flags := parseArgs(t, d.Spec.Template.Spec.Containers[0].Args)
			for flag, want := range tc.flags {
				require.Equal(t, want, flags[flag], "--%s", flag)
			}
		})
	}
}

// TestChartCARefuses: a CA value that is not one Secret or one ConfigMap
// with a key, or the dedicated CA with allowed names, fails with a message
// naming the values.
func TestChartCARefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, values, want string }{
		{"a Secret and a ConfigMap", `requestheader: {ca: {secretName: a, configMapName: b, key: ca.crt}}`,
			"requestheader.ca.secretName and requestheader.ca.configMapName exclude each other"},
		{"no key", `clientCA: {secretName: kcp-client-ca, key: ""}`, "clientCA.key is required"},
		{"an unknown field", `clientCA: {secret: kcp-client-ca}`, "clientCA.secret is not a field: clientCA takes secretName or configMapName, and key"},
		{"a misspelled field", `requestheader: {ca: {secretname: x}}`, "requestheader.ca.secretname is not a field"},
		{"the old caConfigMap", `requestheader: {caConfigMap: x}`, "requestheader.caConfigMap is now requestheader.ca.configMapName"},
		{"the old clientCA.configMap", `clientCA: {configMap: x}`, "clientCA.configMap is now clientCA.configMapName"},
		{"dedicated with allowed names", `requestheader: {dedicatedCA: true}`, "set requestheader.allowedNames=[] with it"},
		{"dedicated without a CA", `requestheader: {dedicatedCA: true, allowedNames: [], ca: {configMapName: ""}}`, "requestheader.dedicatedCA needs requestheader.ca"},
		{"neither names nor dedicated", `requestheader: {allowedNames: []}`, "requestheader.allowedNames is required with requestheader.ca"},
		{"a memory limit Go cannot be told", `resources: {limits: {memory: 5e8}}`, "GOMEMLIMIT is 90% of it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"template", chartRelease, chartDir, "-f", valuesFile(t, tc.values)}
			_, err := helm(t, args...)
			require.Error(t, err, "helm %s", strings.Join(args, " "))
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestChartGOMEMLIMIT: GOMEMLIMIT is 90% of limits.memory in bytes, rounded
// down, whatever the quantity's suffix, and not set without a limit.
// deploy/base's literal is 90% of its own limit.
func TestChartGOMEMLIMIT(t *testing.T) {
	t.Parallel()
	ninety := func(q string) string {
		quantity := resource.MustParse(q)
		return strconv.FormatInt(quantity.Value()*9/10, 10)
	}
	env := func(c corev1.Container) map[string]corev1.EnvVar {
		m := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			m[e.Name] = e
		}
		return m
	}
	for _, limit := range []string{"512Mi", "1Gi", "1.5Gi", "2G", "750M", "300000000", "64Ki"} {
		t.Run(limit, func(t *testing.T) {
			t.Parallel()
			d := single[appsv1.Deployment](t, helmTemplate(t, "", "resources.limits.memory="+limit), "Deployment")
			got := env(d.Spec.Template.Spec.Containers[0])["GOMEMLIMIT"]
			require.Equal(t, ninety(limit), got.Value, "90%% of %s", limit)
			require.Nil(t, got.ValueFrom)
		})
	}
	t.Run("no limit", func(t *testing.T) {
		t.Parallel()
		d := single[appsv1.Deployment](t, helmTemplate(t, valuesFile(t, "resources: {limits: {memory: null}}")), "Deployment")
		require.NotContains(t, env(d.Spec.Template.Spec.Containers[0]), "GOMEMLIMIT")
	})
	t.Run("deploy/base", func(t *testing.T) {
		t.Parallel()
		d := decodeFile[appsv1.Deployment](t, "base/deployment.yaml")
		c := d.Spec.Template.Spec.Containers[0]
		limit := c.Resources.Limits[corev1.ResourceMemory]
		require.Equal(t, ninety(limit.String()), env(c)["GOMEMLIMIT"].Value, "deploy/base's GOMEMLIMIT is 90%% of its limits.memory %s", limit.String())
	})
}

// TestChartPrometheusRuleJob: for any release name, the job the alerts name
// (up{job=...}) is the one prometheus-operator gives the ServiceMonitor's
// targets: the Service's name (no jobLabel).
func TestChartPrometheusRuleJob(t *testing.T) {
	t.Parallel()
	jobs := regexp.MustCompile(`job="([^"]*)"`)
	for _, release := range []string{"workspacemounts", "kcp-plugins"} {
		t.Run(release, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "template", release, chartDir, "--namespace", chartNamespace,
				"--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
			require.NoError(t, err)
			objs := byKind(t, out)
			svc := single[corev1.Service](t, objs, "Service")
			var sm struct {
				Spec struct {
					JobLabel string `json:"jobLabel"`
					Selector metav1.LabelSelector
				} `json:"spec"`
			}
			require.Len(t, objs["ServiceMonitor"], 1)
			require.NoError(t, json.Unmarshal(objs["ServiceMonitor"][0], &sm))
			require.Empty(t, sm.Spec.JobLabel, "without a jobLabel, prometheus-operator's job is the Service's name")
			for k, v := range sm.Spec.Selector.MatchLabels {
				require.Equal(t, v, svc.Labels[k], "the ServiceMonitor selects the Service")
			}
			var rule struct {
				Spec ruleGroups `json:"spec"`
			}
			require.Len(t, objs["PrometheusRule"], 1)
			require.NoError(t, json.Unmarshal(objs["PrometheusRule"][0], &rule))
			seen := 0
			for _, g := range rule.Spec.Groups {
				for _, r := range g.Rules {
					for _, m := range jobs.FindAllStringSubmatch(r.Expr, -1) {
						require.Equal(t, svc.Name, m[1], "%s: %s", r.Alert, r.Expr)
						seen++
					}
				}
			}
			require.Positive(t, seen, "the rules name the job")
		})
	}
}

// TestChartPodSettings: securityContexts default to deploy/base's, and the
// values' keys change them (helm merges them with the defaults; null takes
// one out); extraVolumes, extraVolumeMounts and hostAliases reach the pod.
func TestChartPodSettings(t *testing.T) {
	t.Parallel()
	d := single[appsv1.Deployment](t, helmTemplate(t, valuesFile(t, `
podSecurityContext: {runAsUser: 1001, fsGroup: 1001, runAsGroup: null, seccompProfile: null}
containerSecurityContext: {privileged: false, capabilities: null, allowPrivilegeEscalation: null, runAsNonRoot: null}
extraVolumes: [{name: kcp-client-cert, secret: {secretName: workspacemounts-kcp-client-cert}}]
extraVolumeMounts: [{name: kcp-client-cert, mountPath: /etc/workspacemounts/kcp-client-cert, readOnly: true}]
hostAliases: [{ip: 192.0.2.10, hostnames: [kcp.example.com]}]
`)), "Deployment")
	pod := d.Spec.Template.Spec
	require.Equal(t, &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1001), FSGroup: ptr.To[int64](1001)}, pod.SecurityContext)
	require.Equal(t, &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), Privileged: ptr.To(false)}, pod.Containers[0].SecurityContext)
	require.Equal(t, []corev1.HostAlias{{IP: "192.0.2.10", Hostnames: []string{"kcp.example.com"}}}, pod.HostAliases)
	require.Equal(t, corev1.Volume{Name: "kcp-client-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "workspacemounts-kcp-client-cert"}}}, pod.Volumes[len(pod.Volumes)-1])
	require.Equal(t, corev1.VolumeMount{Name: "kcp-client-cert", MountPath: "/etc/workspacemounts/kcp-client-cert", ReadOnly: true}, pod.Containers[0].VolumeMounts[len(pod.Containers[0].VolumeMounts)-1])
}

// helmNotes renders the chart's NOTES.txt as `helm install --dry-run=client`
// prints it (no cluster is asked).
func helmNotes(t *testing.T, release, namespace, file string, set ...string) string {
	t.Helper()
	args := append([]string{"install", release, chartDir, "--namespace", namespace, "--dry-run=client"}, valuesArgs(file, set...)...)
	out, err := helm(t, args...)
	require.NoError(t, err, "helm %s", strings.Join(args, " "))
	_, notes, ok := strings.Cut(string(out), "\nNOTES:\n")
	require.True(t, ok, "helm install --dry-run prints the NOTES:\n%s", out)
	return notes
}

// repositoryPath is a file or directory of this repository named in a text.
var repositoryPath = regexp.MustCompile(`\b(?:deploy|docs|hack|test|cmd)/[A-Za-z0-9_./-]*[A-Za-z0-9_-]|\b[A-Z]+\.md\b`)

// TestChartNotes: the NOTES of the defaults and of every example name only
// files of this repository that exist, and say what the values say.
func TestChartNotes(t *testing.T) {
	t.Parallel()
	for _, file := range chartValues(t) {
		t.Run("values="+valuesName(file), func(t *testing.T) {
			t.Parallel()
			notes := helmNotes(t, chartRelease, chartNamespace, file)
			named := repositoryPath.FindAllString(notes, -1)
			require.NotEmpty(t, named)
			for _, p := range named {
				_, err := os.Stat(filepath.Join("..", p))
				require.NoError(t, err, "the NOTES name %s, which is not in the repository", p)
			}
			require.Contains(t, notes, "Do not apply deploy/kcp/shard-wide.yaml", "one word on shard-wide.yaml, as docs/deployment.md's")
			require.NotContains(t, notes, "apply the RBAC of deploy/kcp")
		})
	}
	t.Run("dedicated CA", func(t *testing.T) {
		t.Parallel()
		notes := helmNotes(t, chartRelease, kcpChartNamespace, kcpChartExample)
		require.Contains(t, notes, "Secret kcp-requestheader-client-ca (key tls.crt)")
		require.Contains(t, notes, "WARNING (requestheader.dedicatedCA)")
		require.Contains(t, notes, "https://workspacemounts.kcp.svc:6444")
	})
}

// kubectlRBAC builds the objects of the NOTES' `kubectl create` lines for
// roles, cluster roles and their bindings, as kubectl creates them.
func kubectlRBAC(t *testing.T, notes string) (map[string]*rbacv1.Role, map[string]*rbacv1.RoleBinding, string) {
	t.Helper()
	roles, bindings := map[string]*rbacv1.Role{}, map[string]*rbacv1.RoleBinding{}
	cluster := ""
	for _, line := range strings.Split(notes, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || fields[0] != "kubectl" {
			continue
		}
		namespace, flags, args := "", map[string]string{}, []string(nil)
		for i := 1; i < len(fields); i++ {
			switch f := fields[i]; {
			case f == "-n":
				i++
				namespace = fields[i]
			case strings.HasPrefix(f, "--"):
				k, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
				flags[k] = v
			default:
				args = append(args, f)
			}
		}
		if server, ok := flags["server"]; ok {
			_, cluster, _ = strings.Cut(server, "/clusters/")
		}
		if len(args) < 3 || args[0] != "create" {
			continue
		}
		kind, name := args[1], args[2]
		meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
		subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: flags["user"]}}
		switch kind {
		case "role":
			resource, group, _ := strings.Cut(flags["resource"], ".")
			rule := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: strings.Split(flags["verb"], ",")}
			if n := flags["resource-name"]; n != "" {
				rule.ResourceNames = []string{n}
			}
			roles["Role/"+name] = &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{rule}}
		case "clusterrole":
			roles["ClusterRole/"+name] = &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{flags["non-resource-url"]}, Verbs: strings.Split(flags["verb"], ",")}}}
		case "rolebinding":
			bindings["RoleBinding/"+name] = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: flags["role"]}, Subjects: subjects}
		case "clusterrolebinding":
			bindings["ClusterRoleBinding/"+name] = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: flags["clusterrole"]}, Subjects: subjects}
		}
	}
	return roles, bindings, cluster
}

// TestChartNotesLeaderElectionRBAC: the NOTES' kubectl lines create the
// objects of deploy/kcp/leader-election.yaml with the defaults, and the same
// objects with a release's leaderElection and kcp.userName values.
func TestChartNotesLeaderElectionRBAC(t *testing.T) {
	t.Parallel()
	fileRoles, fileBindings := map[string]*rbacv1.Role{}, map[string]*rbacv1.RoleBinding{}
	for _, doc := range documents(t, readFile(t, "kcp/leader-election.yaml")) {
		o := checkObject(t, doc)
		switch o.Kind {
		case "Role", "ClusterRole":
			var r rbacv1.Role
			require.NoError(t, json.Unmarshal(doc, &r))
			fileRoles[o.Kind+"/"+r.Name] = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace}, Rules: r.Rules}
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding
			require.NoError(t, json.Unmarshal(doc, &b))
			fileBindings[o.Kind+"/"+b.Name] = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace}, RoleRef: b.RoleRef, Subjects: b.Subjects}
		}
	}
	// What the file's objects are with other names.
	rename := func(namespace, id, user string) (map[string]*rbacv1.Role, map[string]*rbacv1.RoleBinding) {
		renamed := func(name string) string { return id + strings.TrimPrefix(name, "workspacemounts") }
		roles, bindings := map[string]*rbacv1.Role{}, map[string]*rbacv1.RoleBinding{}
		for _, r := range fileRoles {
			c := r.DeepCopy()
			c.Name = renamed(c.Name)
			if c.Namespace != "" {
				c.Namespace = namespace
			}
			for i := range c.Rules {
				for j := range c.Rules[i].ResourceNames {
					c.Rules[i].ResourceNames[j] = id
				}
			}
			kind := "Role"
			if c.Namespace == "" {
				kind = "ClusterRole"
			}
			roles[kind+"/"+c.Name] = c
		}
		for _, b := range fileBindings {
			c := b.DeepCopy()
			c.Name, c.RoleRef.Name = renamed(c.Name), renamed(c.RoleRef.Name)
			kind := "RoleBinding"
			if c.Namespace == "" {
				kind = "ClusterRoleBinding"
			} else {
				c.Namespace = namespace
			}
			for i := range c.Subjects {
				c.Subjects[i].Name = user
			}
			bindings[kind+"/"+c.Name] = c
		}
		return roles, bindings
	}
	for _, tc := range []struct {
		name                         string
		set                          []string
		cluster, namespace, id, user string
	}{
		{name: "defaults", cluster: "root", namespace: "default", id: "workspacemounts", user: "workspacemounts"},
		{
			name:    "other values",
			set:     []string{"leaderElection.cluster=root:plugins", "leaderElection.namespace=plugins", "leaderElection.id=wsm", "kcp.userName=wsm-plugin"},
			cluster: "root:plugins", namespace: "plugins", id: "wsm", user: "wsm-plugin",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			notes := helmNotes(t, chartRelease, chartNamespace, "", tc.set...)
			roles, bindings, cluster := kubectlRBAC(t, notes)
			wantRoles, wantBindings := fileRoles, fileBindings // the file is the defaults'
			if tc.set != nil {
				wantRoles, wantBindings = rename(tc.namespace, tc.id, tc.user)
			}
			require.Equal(t, wantRoles, roles)
			require.Equal(t, wantBindings, bindings)
			require.Equal(t, tc.cluster, cluster, "in the Lease's workspace")
			require.Equal(t, tc.namespace != "default", strings.Contains(notes, "create namespace "+tc.namespace))
			d := single[appsv1.Deployment](t, helmTemplate(t, "", tc.set...), "Deployment")
			flags := parseArgs(t, d.Spec.Template.Spec.Containers[0].Args)
			require.Equal(t, tc.id, flags["leader-election-id"])
			require.Equal(t, tc.namespace, flags["leader-election-namespace"])
			require.Equal(t, tc.cluster, flags["leader-election-cluster"])
		})
	}
}
