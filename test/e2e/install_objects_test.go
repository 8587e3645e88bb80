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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workspacemounts/workspacemounts/test/framework"
)

// The CRDs of the projects whose objects this repository ships, vendored
// with the commit named (testdata/crds/README.md), and what is checked
// against them.
const (
	// installCRDDir holds one directory of CRD files per project.
	installCRDDir = "testdata/crds"
	// installNamespace is where objects without a namespace are checked: those
	// of deploy/kcp-operator go into the RootShard's namespace, which the user
	// picks (-n).
	installNamespace = "kcp"
	// installChart is rendered with the defaults and with each of its examples.
	installChart = "deploy/charts/workspacemounts"
	// installRelease and its namespace, as docs/deployment.md installs it.
	installRelease, installReleaseNamespace = "workspacemounts", "workspacemounts"
)

// installRawFiles are files under deploy/ checked on their own, as no
// kustomization lists them: why, for each.
var installRawFiles = map[string]string{
	// Not in deploy/kcp-operator/kustomization.yaml, which must not replace a
	// user's FrontProxy: its one mapping entry is what users copy.
	"deploy/kcp-operator/frontproxy.yaml": "a FrontProxy to merge, not to apply",
	// Applied as it is beside kcp-dev/helm-charts' kcp chart
	// (docs/install-kcp-helm-chart.md).
	"deploy/kcp-helm-chart/kubeconfig.yaml": "applied with kubectl apply -f",
}

// installSource is one set of shipped objects, checked by one dry run.
type installSource struct {
	name    string
	objects []installObject
}

// installObject is one shipped object of a kind whose CRD is installed.
type installObject struct {
	obj map[string]any
	// template is the chart template it was rendered from (helm's
	// "# Source:" line), empty for others.
	template string
}

func (o installObject) kind() string { return o.obj["kind"].(string) }

func (o installObject) name() string {
	return o.obj["metadata"].(map[string]any)["name"].(string)
}

// installKinds are the kinds of the vendored CRDs, by apiVersion/kind.
type installKinds struct {
	crds []*apiextensionsv1.CustomResourceDefinition
	// byKind: the CRD serving "group/version/Kind".
	byKind map[string]*apiextensionsv1.CustomResourceDefinition
	groups map[string]bool
}

// TestInstallObjectsServerDryRun checks every shipped object of kcp-operator
// (deploy/kcp-operator), cert-manager and prometheus-operator (from the chart,
// rendered with its defaults and each examples/*.yaml, and from every
// kustomization of deploy/) with `kubectl apply --dry-run=server` against
// their projects' CRDs, installed in a workspace of the shared kcp: a real
// apiserver validates them (schema, CEL rules, unknown fields). Every object
// of those projects' groups in deploy/ and every chart template rendering
// one must be among those checked. Then one field at a time is broken, and
// the dry run must refuse it.
func TestInstallObjectsServerDryRun(t *testing.T) {
	t.Parallel()
	began := time.Now()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	kinds := loadInstallCRDs(t)
	sources := shippedInstallObjects(t, root, kinds)
	require.Empty(t, installCoverageGaps(t, root, kinds, sources), "shipped objects no dry run would check")
	// The check finds what a source left out: the chart's Prometheus
	// templates without the one example enabling them, the FrontProxy
	// without its raw file.
	var fewer []installSource
	for _, s := range sources {
		if !strings.Contains(s.name, "cert-manager-and-monitoring.yaml") && s.name != "deploy/kcp-operator/frontproxy.yaml" {
			fewer = append(fewer, s)
		}
	}
	gaps := strings.Join(installCoverageGaps(t, root, kinds, fewer), "\n")
	require.Contains(t, gaps, "deploy/charts/workspacemounts/templates/servicemonitor.yaml renders monitoring.coreos.com objects")
	require.Contains(t, gaps, "deploy/kcp-operator/frontproxy.yaml: FrontProxy front-proxy is in no kustomization")

	cfg := kcp.BaseConfigT(t, "base")
	wsName := framework.UniqueName("install")
	framework.CreateWorkspace(t, cfg, framework.RootPath, wsName)
	path := framework.RootPath.Join(wsName)
	t.Logf("workspace %s ready after %s", path, time.Since(began).Round(time.Millisecond))
	// The CRDs of the kinds shipped: the others (kcp-operator's RootShard,
	// Shard and CacheServer, 1 MB of schemas) would only slow kcp down.
	crds := usedInstallCRDs(kinds, sources)
	framework.InstallCRDs(t, cfg, path, crds...)
	t.Logf("%d CRDs ready after %s", len(crds), time.Since(began).Round(time.Millisecond))

	server := kcp.BaseURL + "/clusters/" + path.String()
	route := vwRoute{name: "kcp", base: kcp.BaseURL, kubeconfig: kcp.KubeconfigPath}
	namespaces := map[string]bool{installNamespace: true}
	for _, s := range sources {
		for _, o := range s.objects {
			if ns, _ := o.obj["metadata"].(map[string]any)["namespace"].(string); ns != "" {
				namespaces[ns] = true
			}
		}
	}
	for ns := range namespaces {
		res := newKubectl(t, route, adminContext).runServer(server, "["+path.String()+"]", "create", "namespace", ns)
		require.NoError(t, res.err, res)
	}

	t.Run("shipped", func(t *testing.T) {
		for _, s := range sources {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				objs := make([]map[string]any, 0, len(s.objects))
				for _, o := range s.objects {
					objs = append(objs, o.obj)
				}
				res := installDryRun(t, route, server, objs)
				require.NoError(t, res.err, "%s\n%s", s.name, res)
				// Each object is named in kubectl's answer: none was skipped.
				for _, o := range s.objects {
					crd := kinds.byKind[o.obj["apiVersion"].(string)+"/"+o.kind()]
					line := fmt.Sprintf("%s.%s/%s created (server dry run)", strings.ToLower(crd.Spec.Names.Kind), crd.Spec.Group, o.name())
					require.Contains(t, res.stdout, line, res)
				}
			})
		}
	})

	// One broken field each: a dry run that passed everything would pass these too.
	t.Run("broken", func(t *testing.T) {
		for _, tc := range []struct {
			name, kind string
			// objectName picks one object of kind (any when empty).
			objectName string
			breakIt    func(t *testing.T, obj map[string]any)
			// want is in kubectl's error.
			want string
		}{{
			name: "VirtualWorkspace with two targets", kind: "VirtualWorkspace",
			breakIt: func(_ *testing.T, o map[string]any) {
				spec(o, "target")["shardRef"] = map[string]any{"name": "shard-2"}
			},
			want: "Must specify exactly one of rootShardRef or shardRef",
		}, {
			name: "VirtualWorkspace with a misspelled field", kind: "VirtualWorkspace",
			breakIt: func(_ *testing.T, o map[string]any) {
				s := spec(o)
				s["extraArg"] = s["extraArgs"]
				delete(s, "extraArgs")
			},
			want: `unknown field "spec.extraArg"`,
		}, {
			name: "Kubeconfig with a workspace path in capitals", kind: "Kubeconfig", objectName: "workspacemounts-authn",
			breakIt: func(_ *testing.T, o map[string]any) { spec(o)["targetWorkspace"] = "Root" },
			want:    `spec.targetWorkspace: Invalid value: "Root"`,
		}, {
			name: "FrontProxy mapping with a header field the CRD does not have", kind: "FrontProxy",
			breakIt: func(_ *testing.T, o map[string]any) {
				spec(o)["additionalPathMappings"].([]any)[0].(map[string]any)["user_header"] = "X-Remote-User"
			},
			want: `unknown field "spec.additionalPathMappings[0].user_header"`,
		}, {
			name: "FrontProxy mapping without its backend CA", kind: "FrontProxy",
			breakIt: func(_ *testing.T, o map[string]any) {
				delete(spec(o)["additionalPathMappings"].([]any)[0].(map[string]any), "backend_server_ca")
			},
			want: "spec.additionalPathMappings[0].backend_server_ca: Required value",
		}, {
			name: "Certificate with an unknown key algorithm", kind: "Certificate",
			breakIt: func(_ *testing.T, o map[string]any) { spec(o, "privateKey")["algorithm"] = "DSA" },
			want:    `spec.privateKey.algorithm: Unsupported value: "DSA"`,
		}, {
			name: "Issuer with a string for its CA", kind: "Issuer", objectName: "workspacemounts-ca",
			breakIt: func(_ *testing.T, o map[string]any) { spec(o)["ca"] = "workspacemounts-ca" },
			want:    "spec.ca in body must be of type object",
		}, {
			name: "ServiceMonitor scraping ftp", kind: "ServiceMonitor",
			breakIt: func(_ *testing.T, o map[string]any) {
				spec(o)["endpoints"].([]any)[0].(map[string]any)["scheme"] = "ftp"
			},
			want: `spec.endpoints[0].scheme: Unsupported value: "ftp"`,
		}, {
			name: "PrometheusRule with a for of words", kind: "PrometheusRule",
			breakIt: func(t *testing.T, o map[string]any) {
				group := spec(o)["groups"].([]any)[0].(map[string]any)
				for _, r := range group["rules"].([]any) {
					if rule := r.(map[string]any); rule["alert"] != nil {
						rule["for"] = "5 minutes"
						return
					}
				}
				t.Fatal("no alerting rule in the first group")
			},
			want: `].for: Invalid value: "5 minutes"`,
		}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				obj := pickInstallObject(t, sources, tc.kind, tc.objectName)
				tc.breakIt(t, obj)
				res := installDryRun(t, route, server, []map[string]any{obj})
				require.Error(t, res.err, "the dry run accepted a broken %s\n%s", tc.kind, res)
				require.Contains(t, res.stderr, tc.want, res)
				t.Logf("refused: %s", strings.TrimSpace(res.stderr))
			})
		}
	})
	t.Logf("done after %s", time.Since(began).Round(time.Millisecond))
}

// usedInstallCRDs returns the CRDs of the kinds among the shipped objects.
func usedInstallCRDs(kinds installKinds, sources []installSource) []*apiextensionsv1.CustomResourceDefinition {
	used := map[*apiextensionsv1.CustomResourceDefinition]bool{}
	for _, s := range sources {
		for _, o := range s.objects {
			used[kinds.byKind[o.obj["apiVersion"].(string)+"/"+o.kind()]] = true
		}
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range kinds.crds {
		if used[crd] {
			crds = append(crds, crd)
		}
	}
	return crds
}

// spec returns the object's spec, or the map at a path below it.
func spec(obj map[string]any, path ...string) map[string]any {
	m := obj["spec"].(map[string]any)
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// pickInstallObject returns a deep copy of the first checked object of kind
// (named name, unless empty).
func pickInstallObject(t *testing.T, sources []installSource, kind, name string) map[string]any {
	t.Helper()
	for _, s := range sources {
		for _, o := range s.objects {
			if o.kind() == kind && (name == "" || o.name() == name) {
				return runtime.DeepCopyJSON(o.obj)
			}
		}
	}
	t.Fatalf("no shipped %s %q to break", kind, name)
	return nil
}

// installDryRun runs `kubectl apply --dry-run=server` (strict field
// validation, kubectl's default) of objs in the workspace at server.
func installDryRun(t *testing.T, route vwRoute, server string, objs []map[string]any) kubectlResult {
	t.Helper()
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, o)
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "objects.json")
	require.NoError(t, os.WriteFile(file, list, 0o600))
	return newKubectl(t, route, adminContext).runServer(server, "[dry run]", "apply", "--dry-run=server", "-f", file)
}

// loadInstallCRDs reads every vendored CRD.
func loadInstallCRDs(t *testing.T) installKinds {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(installCRDDir, "*", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kinds := installKinds{byKind: map[string]*apiextensionsv1.CustomResourceDefinition{}, groups: map[string]bool{}}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(data, crd), file)
		require.Equal(t, "CustomResourceDefinition", crd.Kind, file)
		kinds.crds = append(kinds.crds, crd)
		kinds.groups[crd.Spec.Group] = true
		for _, v := range crd.Spec.Versions {
			if v.Served {
				kinds.byKind[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = crd
			}
		}
	}
	return kinds
}

// shippedInstallObjects renders the chart (defaults and each example), builds
// every kustomization of deploy/ (components through the overlays that use
// them) and reads installRawFiles, and keeps the objects of the vendored CRDs'
// groups, each with a namespace. An object of such a group whose kind has no
// vendored CRD fails the test.
func shippedInstallObjects(t *testing.T, root string, kinds installKinds) []installSource {
	t.Helper()
	var sources []installSource
	add := func(name string, out []byte, fromHelm bool) {
		s := installSource{name: name}
		for _, doc := range installDocuments(t, name, out) {
			var obj map[string]any
			require.NoError(t, yaml.Unmarshal(doc, &obj), "%s:\n%s", name, doc)
			apiVersion, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			group, _, _ := strings.Cut(apiVersion, "/")
			if !strings.Contains(apiVersion, "/") || !kinds.groups[group] {
				continue
			}
			crd, ok := kinds.byKind[apiVersion+"/"+kind]
			require.True(t, ok, "%s: %s %s: no CRD of %s is vendored in %s", name, apiVersion, kind, kind, installCRDDir)
			meta := obj["metadata"].(map[string]any)
			if _, ok := meta["namespace"]; !ok && crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
				meta["namespace"] = installNamespace
			}
			o := installObject{obj: obj}
			if fromHelm {
				o.template = helmSource(doc)
				require.NotEmpty(t, o.template, "%s: no # Source: line in\n%s", name, doc)
			}
			s.objects = append(s.objects, o)
		}
		if len(s.objects) > 0 {
			sources = append(sources, s)
		}
	}

	helm := os.Getenv("HELM_BINARY")
	require.NotEmpty(t, helm, "HELM_BINARY is not set (make test-e2e sets it to bin/helm)")
	examples, err := filepath.Glob(filepath.Join(root, installChart, "examples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, values := range append([]string{""}, examples...) {
		args := []string{"template", installRelease, filepath.Join(root, installChart), "--namespace", installReleaseNamespace}
		name := "helm template"
		if values != "" {
			args = append(args, "-f", values)
			name += " -f " + filepath.Base(values)
		}
		add(name, installRun(t, helm, args...), true)
	}

	kustomizations, err := filepath.Glob(filepath.Join(root, "deploy", "*", "kustomization.yaml"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(root, "deploy", "*", "*", "kustomization.yaml"))
	require.NoError(t, err)
	for _, file := range append(kustomizations, more...) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		if regexp.MustCompile(`(?m)^kind:\s*Component\s*$`).Match(data) {
			continue
		}
		dir := filepath.Dir(file)
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		add("kubectl kustomize "+rel, installRun(t, "kubectl", "kustomize", dir), false)
	}

	raw := make([]string, 0, len(installRawFiles))
	for file := range installRawFiles {
		raw = append(raw, file)
	}
	sort.Strings(raw)
	for _, file := range raw {
		data, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		add(file, data, false)
	}
	return sources
}

// installCoverageGaps returns the shipped objects of the vendored CRDs'
// groups the dry runs of sources would not check: a document of such a group
// in a file under deploy/ (outside the chart) that no source holds by kind
// and name, and a chart template with such an apiVersion that no render used
// (a value no example sets).
func installCoverageGaps(t *testing.T, root string, kinds installKinds, sources []installSource) []string {
	t.Helper()
	checked := map[string]bool{}
	templates := map[string]bool{}
	for _, s := range sources {
		for _, o := range s.objects {
			checked[o.kind()+"/"+o.name()] = true
			if o.template != "" {
				templates[o.template] = true
			}
		}
	}

	groups := make([]string, 0, len(kinds.groups))
	for g := range kinds.groups {
		groups = append(groups, regexp.QuoteMeta(g))
	}
	apiVersionOf := regexp.MustCompile(`(?m)^apiVersion:\s*(` + strings.Join(groups, "|") + `)/`)

	var gaps []string
	chartDir := filepath.Join(root, installChart)
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir // others' files vendored for tests (deploy/testdata/kcp-chart), not shipped
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if !apiVersionOf.Match(data) {
			return nil
		}
		if strings.HasPrefix(p, filepath.Join(chartDir, "templates")+string(filepath.Separator)) {
			if template := strings.TrimPrefix(rel, filepath.Dir(installChart)+string(filepath.Separator)); !templates[template] {
				gaps = append(gaps, fmt.Sprintf("%s renders %s objects, but no render checked it: enable it in an example of %s/examples", rel, apiVersionOf.FindSubmatch(data)[1], installChart))
			}
			return nil
		}
		if strings.HasPrefix(p, chartDir) {
			return nil
		}
		for _, doc := range installDocuments(t, rel, data) {
			var o struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &o); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if group, _, _ := strings.Cut(o.APIVersion, "/"); kinds.groups[group] && !checked[o.Kind+"/"+o.Metadata.Name] {
				gaps = append(gaps, fmt.Sprintf("%s: %s %s is in no kustomization the test builds: add it to one, or to installRawFiles", rel, o.Kind, o.Metadata.Name))
			}
		}
		return nil
	})
	require.NoError(t, err)
	return gaps
}

// installDocuments splits a YAML stream into its documents that hold more than comments.
func installDocuments(t *testing.T, name string, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var v any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &v), "%s:\n%s", name, doc)
		if v != nil {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// helmSource is the chart-relative template a rendered document came from.
func helmSource(doc []byte) string {
	m := regexp.MustCompile(`(?m)^# Source: (\S+)$`).FindSubmatch(doc)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// installRun runs a command and returns its standard output.
func installRun(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return stdout.Bytes()
}
