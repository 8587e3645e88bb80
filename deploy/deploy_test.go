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

// Package deploy holds the Kustomize, kcp, front-proxy and monitoring files
// of workspacemounts; its tests check that they parse, agree with each other
// and with the binary's flags and metrics.
package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	proxytypes "github.com/kcp-dev/kcp/pkg/server/proxy/types"

	"github.com/workspacemounts/workspacemounts/cmd/workspacemounts/app"
)

// The files of this directory and of docs/, read through fs.FS values (go
// test runs in the package directory).
var (
	deployFS = os.DirFS(".")
	docsFS   = os.DirFS("../docs")
)

const (
	ruleFile      = "monitoring/workspacemounts-alerts.yaml"
	ruleCRFile    = "monitoring/prometheusrule.yaml"
	dashboardFile = "monitoring/workspacemounts-dashboard.json"
	mappingDir    = "front-proxy"
	ruleTestDir   = "monitoring/tests" // promtool test rules files (make test-rules)
	metricsDoc    = "metrics.md"       // in docsFS
)

// ---------------------------------------------------------------------------
// Files.

// yamlFiles lists every YAML file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(deployFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == chartsDir || path.Base(p) == "testdata") {
			return fs.SkipDir // Helm templates and values, not objects: chart_test.go, kcp_chart_test.go
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// documents splits a multi-document YAML stream and returns each non-empty
// document as JSON.
func documents(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		j, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err, "document:\n%s", doc)
		if j = bytes.TrimSpace(j); string(j) == "null" {
			continue // comments only
		}
		docs = append(docs, j)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := fs.ReadFile(deployFS, name)
	require.NoError(t, err)
	return data
}

// typed are the kinds with Go types: decoded strictly, so a misspelled field
// fails the test instead of being dropped by the API server.
var typed = map[string]func() any{
	"v1/Namespace":                                    func() any { return &corev1.Namespace{} },
	"v1/ServiceAccount":                               func() any { return &corev1.ServiceAccount{} },
	"v1/Service":                                      func() any { return &corev1.Service{} },
	"v1/ConfigMap":                                    func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                                       func() any { return &corev1.Secret{} },
	"apps/v1/Deployment":                              func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":                   func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":              func() any { return &networkingv1.NetworkPolicy{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
}

// untyped are the other kinds deploy/ may contain (CRDs and Kustomize's own).
var untyped = []string{
	"kustomize.config.k8s.io/v1beta1/Kustomization",
	"kustomize.config.k8s.io/v1alpha1/Component",
	"cert-manager.io/v1/Certificate",
	"cert-manager.io/v1/Issuer",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
	// deploy/kcp-operator: checked against kcp-operator's CRDs by a server-side
	// dry run (test/e2e/install_objects_test.go).
	"operator.kcp.io/v1alpha1/VirtualWorkspace",
	"operator.kcp.io/v1alpha1/Kubeconfig",
	"operator.kcp.io/v1alpha1/FrontProxy",
	// deploy/krew: the kubectl plugin's krew manifest, from which hack/release
	// writes the release's (checked against the archives by its tests and by
	// make release-verify).
	"krew.googlecontainertools.github.com/v1alpha2/Plugin",
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// checkObject requires apiVersion and kind, a name for everything but
// Kustomize files, and a strict decode for the typed kinds.
func checkObject(t *testing.T, doc []byte) object {
	t.Helper()
	var o object
	require.NoError(t, json.Unmarshal(doc, &o))
	require.NotEmpty(t, o.APIVersion, "apiVersion missing in %s", doc)
	require.NotEmpty(t, o.Kind, "kind missing in %s", doc)
	gvk := o.APIVersion + "/" + o.Kind
	if newObj, ok := typed[gvk]; ok {
		require.NoError(t, yaml.UnmarshalStrict(doc, newObj()), "%s %s", gvk, o.Metadata.Name)
	} else {
		require.Contains(t, untyped, gvk, "unexpected kind; add it to the test if it is meant to be here")
	}
	if !strings.HasPrefix(o.APIVersion, "kustomize.config.k8s.io/") {
		require.NotEmpty(t, o.Metadata.Name, "%s without metadata.name", gvk)
	}
	return o
}

// TestYAMLFiles parses every YAML file under deploy/: Kubernetes objects
// (and Kustomize files) need apiVersion and kind; the rule file and the
// front-proxy mappings have shapes of their own, checked by their own tests.
func TestYAMLFiles(t *testing.T) {
	t.Parallel()
	for _, file := range yamlFiles(t) {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			docs := documents(t, readFile(t, file))
			require.NotEmpty(t, docs, "no document")
			switch {
			case file == ruleFile:
				require.Len(t, docs, 1)
				_ = parseRuleGroups(t, docs[0])
			case path.Dir(file) == mappingDir:
				require.Len(t, docs, 1)
				_ = parseMappings(t, docs[0])
			case file == kcpChartValuesFile:
				require.Len(t, docs, 1)
				_ = kcpChartMappings(t, docs[0])
			case path.Dir(file) == ruleTestDir:
				require.Len(t, docs, 1)
				checkRuleTests(t, docs[0])
			default:
				for _, doc := range docs {
					checkObject(t, doc)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// deploy/base.

func decodeFile[T any](t *testing.T, name string) *T {
	t.Helper()
	docs := documents(t, readFile(t, name))
	require.Len(t, docs, 1, name)
	obj := new(T)
	require.NoError(t, yaml.UnmarshalStrict(docs[0], obj))
	return obj
}

// baseNamespace is the namespace deploy/base deploys to.
func baseNamespace(t *testing.T) string {
	t.Helper()
	var k struct {
		Namespace string `json:"namespace"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "base/kustomization.yaml"), &k))
	require.NotEmpty(t, k.Namespace)
	return k.Namespace
}

// parseArgs parses the Deployment's arguments with the flags of
// `workspacemounts start` itself (app.StartFlags) and
// validates them, so a renamed flag or a bad value fails here, not in a pod.
// It returns the flags that were set, by name.
func parseArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	require.NotEmpty(t, args)
	require.Equal(t, "start", args[0], "the first argument is the subcommand")
	fs := pflag.NewFlagSet("workspacemounts start", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	options, _ := app.StartFlags(fs)

	seen := map[string]bool{}
	for _, arg := range args[1:] {
		name, _, ok := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		require.True(t, ok, "%q: write --name=value, one argument per flag", arg)
		require.False(t, seen[name], "%q given twice", arg)
		seen[name] = true
	}
	require.NoError(t, fs.Parse(args[1:]), "workspacemounts start %s", strings.Join(args[1:], " "))
	require.Empty(t, fs.Args(), "positional arguments")
	require.NoError(t, options.Validate(), "the values together")

	flags := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { flags[f.Name] = f.Value.String() })
	return flags
}

func TestBaseDeployment(t *testing.T) {
	t.Parallel()
	d := decodeFile[appsv1.Deployment](t, "base/deployment.yaml")
	svc := decodeFile[corev1.Service](t, "base/service.yaml")
	pdb := decodeFile[policyv1.PodDisruptionBudget](t, "base/poddisruptionbudget.yaml")
	pod := d.Spec.Template.Spec

	require.NotNil(t, d.Spec.Replicas)
	require.Equal(t, int32(2), *d.Spec.Replicas)
	podLabels := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		require.Equal(t, v, podLabels[k], "the Deployment's selector must match its pods")
	}
	for k, v := range svc.Spec.Selector {
		require.Equal(t, v, podLabels[k], "the Service must select the pods")
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		require.Equal(t, v, podLabels[k], "the PodDisruptionBudget must select the pods")
	}
	require.NotNil(t, pdb.Spec.MinAvailable)
	require.Equal(t, 1, pdb.Spec.MinAvailable.IntValue())

	// Spread across nodes, softly.
	require.NotNil(t, pod.Affinity)
	require.NotNil(t, pod.Affinity.PodAntiAffinity)
	preferred := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	require.Len(t, preferred, 1)
	require.Equal(t, "kubernetes.io/hostname", preferred[0].PodAffinityTerm.TopologyKey)
	require.Equal(t, podLabels["app.kubernetes.io/name"], preferred[0].PodAffinityTerm.LabelSelector.MatchLabels["app.kubernetes.io/name"])

	// Non-root, read-only, nothing extra.
	require.NotNil(t, pod.SecurityContext)
	require.Equal(t, new(true), pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, pod.SecurityContext.SeccompProfile)
	require.Equal(t, new(false), pod.AutomountServiceAccountToken)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.NotNil(t, c.SecurityContext)
	require.Equal(t, new(true), c.SecurityContext.ReadOnlyRootFilesystem)
	require.Equal(t, new(false), c.SecurityContext.AllowPrivilegeEscalation)
	require.NotNil(t, c.SecurityContext.Capabilities)
	require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.True(t, strings.HasPrefix(c.Image, "ghcr.io/workspacemounts/workspacemounts"), c.Image)

	// Requests cover the ~150 MiB the plugin needs at 10,000 Workspaces; the
	// limit leaves room above that.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		require.Contains(t, c.Resources.Requests, r)
		require.Contains(t, c.Resources.Limits, r)
		limit := c.Resources.Limits[r]
		require.Equal(t, 1, limit.Cmp(c.Resources.Requests[r]), "limit above request for %s", r)
	}
	memReq := c.Resources.Requests[corev1.ResourceMemory]
	require.GreaterOrEqual(t, memReq.Cmp(resource.MustParse("150Mi")), 0, "memory request below the 150 MiB steady state")

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	require.Equal(t, map[string]int32{"https": 6444, "metrics": 8080}, ports)

	svcPorts := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = p.Port
		require.Equal(t, p.Name, p.TargetPort.String(), "Service port %s targets the container port of the same name", p.Name)
	}
	require.Equal(t, map[string]int32{"https": 6444, "metrics": 8080}, svcPorts)

	// Probes on the plain HTTP metrics port.
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{
		{"startup", "/livez", c.StartupProbe},
		{"liveness", "/livez", c.LivenessProbe},
		{"readiness", "/readyz", c.ReadinessProbe},
	} {
		require.NotNil(t, p.probe, p.name)
		require.NotNil(t, p.probe.HTTPGet, p.name)
		require.Equal(t, p.path, p.probe.HTTPGet.Path, p.name)
		require.Equal(t, "metrics", p.probe.HTTPGet.Port.String(), p.name)
	}

	// Volumes: where the flags point.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		require.Empty(t, m.SubPath, "subPath mounts never see Secret updates (certificate renewals)")
		mounts[m.Name] = m.MountPath
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	fileIn := func(volume, key string) string {
		require.Contains(t, mounts, volume)
		v := volumes[volume]
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			items = v.Secret.Items
		case v.ConfigMap != nil:
			items = v.ConfigMap.Items
		default:
			require.Failf(t, "volume is neither a Secret nor a ConfigMap", "%s", volume)
		}
		for _, item := range items {
			if item.Key == key {
				return path.Join(mounts[volume], item.Path)
			}
		}
		require.Failf(t, "key not projected", "%s in volume %s", key, volume)
		return ""
	}
	require.Equal(t, "workspacemounts-kubeconfig", volumes["kubeconfig"].Secret.SecretName)
	require.Equal(t, "workspacemounts-serving-cert", volumes["serving-cert"].Secret.SecretName)
	require.Equal(t, "workspacemounts-requestheader-ca", volumes["requestheader-ca"].ConfigMap.Name)

	flags := parseArgs(t, c.Args)
	for flag, want := range map[string]string{
		"kubeconfig":                         fileIn("kubeconfig", "kubeconfig"),
		"context":                            "shard-base",
		"tls-cert-file":                      fileIn("serving-cert", "tls.crt"),
		"tls-private-key-file":               fileIn("serving-cert", "tls.key"),
		"requestheader-client-ca-file":       fileIn("requestheader-ca", "ca.crt"),
		"requestheader-username-headers":     "[X-Remote-User]",
		"requestheader-group-headers":        "[X-Remote-Group]",
		"requestheader-extra-headers-prefix": "[X-Remote-Extra-]",
		"bind-address":                       "0.0.0.0",
		"secure-port":                        "6444",
		"requestheader-allowed-names":        "[kcp-front-proxy]",
		"metrics-bind-address":               "$(POD_IP):8080",
		"run-controller":                     "true",
		"run-virtual-workspace":              "true",
		"leader-elect":                       "true",
		"leader-election-cluster":            "root",
		"leader-election-namespace":          "default",
		"leader-election-id":                 "workspacemounts",
	} {
		require.Equal(t, want, flags[flag], "--%s", flag)
	}
	require.True(t, strings.HasPrefix(flags["cert-dir"], mounts["tmp"]+"/"), "--cert-dir must be writable: under the emptyDir")
}

// TestKCPObjects checks the kcp-side RBAC: every binding names a role of the
// same file, and the lease rules name the Deployment's --leader-election-id.
func TestKCPObjects(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(deployFS, "kcp/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			roles := map[string]bool{}
			var refs []rbacv1.RoleRef
			for _, doc := range documents(t, readFile(t, file)) {
				switch o := checkObject(t, doc); o.Kind {
				case "Role", "ClusterRole":
					roles[o.Kind+"/"+o.Metadata.Name] = true
				case "RoleBinding", "ClusterRoleBinding":
					var b rbacv1.RoleBinding
					require.NoError(t, json.Unmarshal(doc, &b))
					require.NotEmpty(t, b.Subjects)
					refs = append(refs, b.RoleRef)
				default:
					require.Failf(t, "only RBAC objects belong in deploy/kcp", "%s", o.Kind)
				}
			}
			for _, ref := range refs {
				require.True(t, roles[ref.Kind+"/"+ref.Name], "%s %s is not defined in %s", ref.Kind, ref.Name, file)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Front-proxy mappings.

// parseMappings decodes a mapping file strictly into kcp's own PathMapping.
func parseMappings(t *testing.T, doc []byte) []proxytypes.PathMapping {
	t.Helper()
	var mappings []proxytypes.PathMapping
	require.NoError(t, yaml.UnmarshalStrict(doc, &mappings), "a mapping file is a list of kcp PathMappings")
	require.NotEmpty(t, mappings)
	for _, m := range mappings {
		require.Equal(t, "/services/workspacemounts", m.Path, "the virtual workspace is served under /services/workspacemounts")
		u, err := url.Parse(m.Backend)
		require.NoError(t, err)
		require.Equal(t, "https", u.Scheme, m.Backend)
		require.Empty(t, strings.Trim(u.Path, "/"), "kcp does not strip the path: the backend URL has none")
		_, port, err := net.SplitHostPort(u.Host)
		require.NoError(t, err, m.Backend)
		require.Equal(t, "6444", port)
	}
	return mappings
}

func TestFrontProxyMappings(t *testing.T) {
	t.Parallel()
	t.Run("kcp-front-proxy", func(t *testing.T) {
		t.Parallel()
		m := parseMappings(t, documents(t, readFile(t, "front-proxy/mapping.yaml"))[0])
		require.Len(t, m, 1)
		require.Equal(t, "https://workspacemounts."+baseNamespace(t)+".svc:6444", m[0].Backend, "the Service of deploy/base")
		require.NotEmpty(t, m[0].BackendServerCA)
		require.NotEmpty(t, m[0].ProxyClientCert)
		require.NotEmpty(t, m[0].ProxyClientKey)
		// The headers the Deployment's --requestheader-* flags read.
		require.Equal(t, "X-Remote-User", m[0].UserHeader)
		require.Equal(t, "X-Remote-Group", m[0].GroupHeader)
		require.Equal(t, "X-Remote-Extra-", m[0].ExtraHeaderPrefix)
	})
	t.Run("miniproxy", func(t *testing.T) {
		t.Parallel()
		m := parseMappings(t, documents(t, readFile(t, "front-proxy/miniproxy-mapping.yaml"))[0])
		require.Len(t, m, 1)
		// kcp's mini proxy ignores these; setting them would suggest otherwise.
		require.Empty(t, m[0].BackendServerCA+m[0].ProxyClientCert+m[0].ProxyClientKey+m[0].UserHeader+m[0].GroupHeader+m[0].ExtraHeaderPrefix)
	})
}

// ---------------------------------------------------------------------------
// Alerts.

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func parseRuleGroups(t *testing.T, doc []byte) ruleGroups {
	t.Helper()
	var g ruleGroups
	require.NoError(t, yaml.UnmarshalStrict(doc, &g), "a Prometheus rule file: groups of rules")
	require.NotEmpty(t, g.Groups)
	return g
}

var reDuration = regexp.MustCompile(`^(\d+(ms|s|m|h|d|w|y))+$`)

func TestAlertRules(t *testing.T) {
	t.Parallel()
	g := parseRuleGroups(t, documents(t, readFile(t, ruleFile))[0])
	docs, err := fs.ReadFile(docsFS, metricsDoc)
	require.NoError(t, err, "docs/metrics.md documents the alerts")

	seen := map[string]bool{}
	groupNames := map[string]bool{}
	for _, group := range g.Groups {
		require.NotEmpty(t, group.Name)
		require.False(t, groupNames[group.Name], "group %s twice", group.Name)
		groupNames[group.Name] = true
		require.NotEmpty(t, group.Rules, group.Name)
		for _, r := range group.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				t.Parallel()
				require.NotEmpty(t, r.Alert, "only alerts here (no recording rules)")
				require.Empty(t, r.Record)
				checkExpr(t, r.Expr)
				require.Regexp(t, reDuration, r.For, "for: a Prometheus duration")
				require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"])
				require.NotEmpty(t, strings.TrimSpace(r.Annotations["summary"]))
				require.Contains(t, r.Annotations["description"], "Runbook:", "a runbook hint in the description")
				anchor := "docs/metrics.md#" + strings.ToLower(r.Alert)
				require.Contains(t, r.Annotations["description"], anchor)
				require.Contains(t, string(docs), "### "+r.Alert+"\n", "docs/metrics.md has a section for %s", r.Alert)
			})
		}
		for _, r := range group.Rules {
			require.False(t, seen[r.Alert], "alert %s twice", r.Alert)
			seen[r.Alert] = true
		}
	}
	for _, name := range []string{
		"WorkspaceMountsNotReady", "WorkspaceMountsReconcileErrors", "WorkspaceMountsNoLeader",
		"WorkspaceMountsMultipleLeaders", "WorkspaceMountsWorkqueueBacklog", "WorkspaceMountsDown",
		"WorkspaceMountsShardUnreachable", "WorkspaceMountsShardNotSynced",
	} {
		require.True(t, seen[name], "alert %s is missing", name)
	}
}

// checkRuleTests requires a promtool unit test file to test the rule file
// (promtool itself runs it: make test-rules).
func checkRuleTests(t *testing.T, doc []byte) {
	t.Helper()
	var f struct {
		RuleFiles          []string         `json:"rule_files"`
		EvaluationInterval string           `json:"evaluation_interval"`
		Tests              []map[string]any `json:"tests"`
	}
	require.NoError(t, yaml.UnmarshalStrict(doc, &f), "a promtool test file: rule_files, evaluation_interval, tests")
	require.Equal(t, []string{path.Join("..", path.Base(ruleFile))}, f.RuleFiles)
	require.NotEmpty(t, f.Tests)
}

// TestPrometheusRule keeps the PrometheusRule and the plain rule file equal.
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	plain := parseRuleGroups(t, documents(t, readFile(t, ruleFile))[0])
	docs := documents(t, readFile(t, ruleCRFile))
	require.Len(t, docs, 1)
	var cr struct {
		Spec ruleGroups `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(docs[0], &cr))
	require.Equal(t, plain, cr.Spec, "%s must hold the groups of %s", ruleCRFile, ruleFile)
}

// ---------------------------------------------------------------------------
// Dashboard.

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		X int `json:"x"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	var d struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []variable `json:"list"`
		} `json:"templating"`
		Panels []panel `json:"panels"`
	}
	data := readFile(t, dashboardFile)
	require.True(t, json.Valid(data), "not valid JSON")
	require.NoError(t, json.Unmarshal(data, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	require.True(t, slices.ContainsFunc(d.Templating.List, func(v variable) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}), "a ${datasource} template variable of type datasource")

	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)

	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range all {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q is wider than the grid", p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Title)
		require.NotNil(t, p.Datasource, p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q uses the datasource variable", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		refIDs := map[string]bool{}
		for _, target := range p.Targets {
			require.False(t, refIDs[target.RefID], "panel %q: refId %s twice", p.Title, target.RefID)
			refIDs[target.RefID] = true
			require.NotNil(t, target.Datasource, p.Title)
			require.Equal(t, "${datasource}", target.Datasource.UID, p.Title)
			for _, f := range checkExpr(t, target.Expr) {
				used[f] = true
			}
		}
	}

	// Everything the plugin exports is on the dashboard.
	for _, name := range pluginFamilies(t) {
		if reason, ok := notOnDashboard[name]; ok {
			require.False(t, used[name], "%s is on the dashboard now: remove it from notOnDashboard (%s)", name, reason)
			continue
		}
		require.True(t, used[name], "%s is not on the dashboard", name)
	}
}

// notOnDashboard are the plugin's families the dashboard does not show yet,
// and why (the registry has them; the hand-written inventory did not).
var notOnDashboard = map[string]string{
	"workspacemounts_mount_informers_denied":             "no panel yet",
	"workspacemounts_mount_informers_limit":              "no panel yet",
	"workspacemounts_cluster_mount_informers":            "no panel yet",
	"workspacemounts_cluster_mount_informers_over_limit": "no panel yet",
	"workspacemounts_build_info":                         "which build runs: for a table of versions during a rollout, no panel yet",
}

// TestMetricsDocumented keeps docs/metrics.md listing every exported metric.
func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	docs, err := fs.ReadFile(docsFS, metricsDoc)
	require.NoError(t, err)
	for _, name := range pluginFamilies(t) {
		require.Contains(t, string(docs), "`"+name+"`", "docs/metrics.md does not describe %s", name)
	}
}

// ---------------------------------------------------------------------------
// Kustomize.

// TestKustomizeBuild runs `kubectl kustomize` on every kustomization under
// deploy/ (components are built through the overlays that use them) and
// checks the result.
func TestKustomizeBuild(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(deployFS, "*/kustomization.yaml")
	require.NoError(t, err)
	more, err := fs.Glob(deployFS, "*/*/kustomization.yaml")
	require.NoError(t, err)
	files = append(files, more...)
	require.Contains(t, files, "base/kustomization.yaml")

	for _, file := range files {
		dir := path.Dir(file)
		var k object
		require.NoError(t, yaml.Unmarshal(readFile(t, file), &k))
		if k.Kind == "Component" {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			checkBuild(t, dir, kustomize(t, dir))
		})
	}
}

// kustomize runs `kubectl kustomize dir` (skipping the test without kubectl)
// and returns the checked objects by kind.
func kustomize(t *testing.T, dir string) map[string][][]byte {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: `kubectl kustomize` builds are not checked (the other tests still ran)")
	}
	cmd := exec.CommandContext(t.Context(), kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize %s: %s", dir, stderr.String())
	return byKind(t, out)
}

// byKind checks every object of a rendered stream and groups them by kind.
func byKind(t *testing.T, out []byte) map[string][][]byte {
	t.Helper()
	objs := map[string][][]byte{}
	for _, doc := range documents(t, out) {
		o := checkObject(t, doc)
		objs[o.Kind] = append(objs[o.Kind], doc)
	}
	return objs
}

// checkBuild checks what only the rendered output shows.
func checkBuild(t *testing.T, dir string, byKind map[string][][]byte) {
	t.Helper()
	if svcs := byKind["Service"]; len(svcs) > 0 {
		require.Len(t, svcs, 1)
		var svc corev1.Service
		require.NoError(t, json.Unmarshal(svcs[0], &svc))
		ns := svc.Namespace
		require.NotEmpty(t, ns, "%s: the Service has a namespace", dir)

		var deploy appsv1.Deployment
		require.Len(t, byKind["Deployment"], 1)
		require.NoError(t, json.Unmarshal(byKind["Deployment"][0], &deploy))
		require.Equal(t, ns, deploy.Namespace)
		image := deploy.Spec.Template.Spec.Containers[0].Image
		require.True(t, strings.HasPrefix(image, "ghcr.io/workspacemounts/workspacemounts:"), "%s: the image has a tag: %s", dir, image)

		// The serving certificate, when the build makes one, names the Service
		// the front-proxy calls.
		for _, doc := range byKind["Certificate"] {
			var cert struct {
				Metadata struct {
					Name, Namespace string
				}
				Spec struct {
					SecretName string   `json:"secretName"`
					DNSNames   []string `json:"dnsNames"`
				}
			}
			require.NoError(t, json.Unmarshal(doc, &cert))
			require.Equal(t, ns, cert.Metadata.Namespace)
			if cert.Spec.SecretName == "workspacemounts-serving-cert" {
				require.Contains(t, cert.Spec.DNSNames, "workspacemounts."+ns+".svc")
				for _, name := range cert.Spec.DNSNames {
					require.NotContains(t, name, "NAMESPACE")
				}
			}
		}
	}

	if dir == "monitoring" {
		require.Len(t, byKind["ConfigMap"], 1)
		var cm corev1.ConfigMap
		require.NoError(t, json.Unmarshal(byKind["ConfigMap"][0], &cm))
		require.Equal(t, "1", cm.Labels["grafana_dashboard"])
		require.JSONEq(t, string(readFile(t, dashboardFile)), cm.Data[path.Base(dashboardFile)])
		require.Len(t, byKind["PrometheusRule"], 1)
		require.Len(t, byKind["ServiceMonitor"], 1)
	}
}
