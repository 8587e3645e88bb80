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
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	proxytypes "github.com/kcp-dev/kcp/pkg/server/proxy/types"
)

// The plugin beside kcp-dev/helm-charts' kcp chart: the chart itself, as
// vendored in kcpChartDir (its README names the commit), rendered with
// kcpChartValuesFile; the plugin's chart with kcpChartExample and the
// objects of kcpChartObjectsFile, all in the kcp chart's namespace.
const (
	kcpChartDir         = "testdata/kcp-chart"
	kcpChartValuesFile  = "kcp-helm-chart/kcp-values.yaml"
	kcpChartObjectsFile = "kcp-helm-chart/kubeconfig.yaml"
	kcpChartExample     = chartDir + "/examples/kcp-helm-chart.yaml"
	kcpChartRelease     = "kcp"
	kcpChartNamespace   = "kcp"
	kcpChartDoc         = "install-kcp-helm-chart.md" // in docsFS
)

// kcpChartMappings are the front-proxy mappings of a values file of the kcp
// chart (kcpFrontProxy.additionalPathMappings), checked as every mapping file.
func kcpChartMappings(t *testing.T, doc []byte) []proxytypes.PathMapping {
	t.Helper()
	var values struct {
		KCPFrontProxy struct {
			AdditionalPathMappings json.RawMessage `json:"additionalPathMappings"`
		} `json:"kcpFrontProxy"`
	}
	require.NoError(t, json.Unmarshal(doc, &values))
	return parseMappings(t, values.KCPFrontProxy.AdditionalPathMappings)
}

// certificate is what the test reads of a cert-manager Certificate.
type certificate struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		SecretName string `json:"secretName"`
		CommonName string `json:"commonName"`
		IsCA       bool   `json:"isCA"`
		Subject    struct {
			Organizations []string `json:"organizations"`
		} `json:"subject"`
		IssuerRef struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// pki is what a set of objects issues: Certificates by the Secret they
// write, CA Issuers' Secrets by Issuer name, and every Secret's keys.
type objectsPKI struct {
	certs   map[string]certificate
	issuers map[string]string // Issuer name -> its CA's Secret
	secrets map[string]map[string]bool
}

func newObjectsPKI() *objectsPKI {
	return &objectsPKI{certs: map[string]certificate{}, issuers: map[string]string{}, secrets: map[string]map[string]bool{}}
}

// add reads the Certificates, Issuers and Secrets of a rendered stream.
func (p *objectsPKI) add(t *testing.T, out []byte) map[string][][]byte {
	t.Helper()
	objs := map[string][][]byte{}
	for _, doc := range documents(t, out) {
		var o struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(doc, &o))
		objs[o.Kind] = append(objs[o.Kind], doc)
		switch o.Kind {
		case "Certificate":
			var c certificate
			require.NoError(t, json.Unmarshal(doc, &c))
			p.certs[c.Spec.SecretName] = c
			// What cert-manager writes in a Certificate's Secret.
			p.secrets[c.Spec.SecretName] = map[string]bool{"tls.crt": true, "tls.key": true, "ca.crt": true}
		case "Issuer":
			var i struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					CA *struct {
						SecretName string `json:"secretName"`
					} `json:"ca"`
				} `json:"spec"`
			}
			require.NoError(t, json.Unmarshal(doc, &i))
			if i.Spec.CA != nil {
				p.issuers[i.Metadata.Name] = i.Spec.CA.SecretName
			} else {
				p.issuers[i.Metadata.Name] = ""
			}
		case "Secret":
			var s corev1.Secret
			require.NoError(t, json.Unmarshal(doc, &s))
			keys := map[string]bool{}
			for k := range s.StringData {
				keys[k] = true
			}
			for k := range s.Data {
				keys[k] = true
			}
			p.secrets[s.Name] = keys
		}
	}
	return objs
}

// caOf is the Secret of the CA that signs the Certificate writing secret:
// an Issuer of the kcp chart's with a CA.
func (p *objectsPKI) caOf(t *testing.T, secret string) string {
	t.Helper()
	c, ok := p.certs[secret]
	require.True(t, ok, "no Certificate writes Secret %s", secret)
	require.Contains(t, []string{"", "Issuer"}, c.Spec.IssuerRef.Kind, "Certificate %s: an Issuer of the namespace", c.Metadata.Name)
	ca, ok := p.issuers[c.Spec.IssuerRef.Name]
	require.True(t, ok, "Certificate %s: no Issuer %s", c.Metadata.Name, c.Spec.IssuerRef.Name)
	require.NotEmpty(t, ca, "Certificate %s: Issuer %s has no CA Secret", c.Metadata.Name, c.Spec.IssuerRef.Name)
	require.True(t, p.certs[ca].Spec.IsCA, "Issuer %s's Secret %s is a CA Certificate's", c.Spec.IssuerRef.Name, ca)
	return ca
}

// fileSource tells which Secret (and key) a container reads a file from:
// the volume mounted at the file's directory.
func fileSource(t *testing.T, d *appsv1.Deployment, file string) (secret, key string) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		if m.MountPath != path.Dir(file) {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			require.NotNil(t, v.Secret, "%s: volume %s of Deployment %s is not a Secret", file, v.Name, d.Name)
			key = path.Base(file)
			if len(v.Secret.Items) > 0 {
				found := false
				for _, item := range v.Secret.Items {
					if item.Path == key {
						key, found = item.Key, true
					}
				}
				require.True(t, found, "%s: volume %s of Deployment %s has no item %s", file, v.Name, d.Name, key)
			}
			return v.Secret.SecretName, key
		}
	}
	require.Failf(t, "not mounted", "%s: Deployment %s mounts nothing at %s", file, d.Name, path.Dir(file))
	return "", ""
}

func argOf(t *testing.T, d *appsv1.Deployment, flag string) string {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
				return v
			}
		}
	}
	require.Failf(t, "no flag", "Deployment %s has no --%s", d.Name, flag)
	return ""
}

func deploymentNamed(t *testing.T, objs map[string][][]byte, name string) *appsv1.Deployment {
	t.Helper()
	for _, doc := range objs["Deployment"] {
		var d appsv1.Deployment
		require.NoError(t, json.Unmarshal(doc, &d))
		if d.Name == name {
			return &d
		}
	}
	require.Failf(t, "no Deployment", "%s", name)
	return nil
}

// TestChartBesideKCPChart renders kcp-dev/helm-charts' kcp chart (vendored)
// with kcpChartValuesFile and the plugin's chart with kcpChartExample, and
// checks the wiring against the kcp chart itself: every Secret the plugin
// mounts is written by a Certificate or a Secret of the two charts or of
// kcpChartObjectsFile, under the keys mounted; the request-header CA is the
// one whose Issuer signs the front-proxy's proxy_client_cert, trusted as
// dedicated exactly when that certificate has no CommonName; the front-proxy
// mapping points at the plugin's Service and trusts the CA of the plugin's
// serving certificate; the plugin's kubeconfig reaches the shard's
// --shard-base-url, trusts the CA of its serving certificate, and presents a
// system:masters certificate of the shard's --client-ca-file.
func TestChartBesideKCPChart(t *testing.T) {
	t.Parallel()
	pki := newObjectsPKI()
	out, err := helm(t, "template", kcpChartRelease, kcpChartDir, "--namespace", kcpChartNamespace,
		"-f", kcpChartValuesFile, "--set", "externalHostname=kcp.example.com")
	require.NoError(t, err)
	kcpObjs := pki.add(t, out)
	kcpIssuers := map[string]bool{}
	for name := range pki.issuers {
		kcpIssuers[name] = true
	}
	pluginObjs := pki.add(t, readFile(t, kcpChartObjectsFile))
	out, err = helm(t, "template", chartRelease, chartDir, "--namespace", kcpChartNamespace, "-f", kcpChartExample)
	require.NoError(t, err)
	for kind, docs := range pki.add(t, out) {
		pluginObjs[kind] = append(pluginObjs[kind], docs...)
	}
	require.Empty(t, pluginObjs["Issuer"], "the plugin uses the kcp chart's Issuers")
	plugin := deploymentNamed(t, pluginObjs, chartRelease)
	pluginArgs := parseArgs(t, plugin.Spec.Template.Spec.Containers[0].Args)
	frontProxy := deploymentNamed(t, kcpObjs, kcpChartRelease+"-front-proxy")
	shard := deploymentNamed(t, kcpObjs, kcpChartRelease)

	// Every Secret the plugin mounts, with its keys, is written by one of them.
	volumes := map[string]corev1.Volume{}
	for _, v := range plugin.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
		if v.EmptyDir != nil {
			continue
		}
		require.NotNil(t, v.Secret, "volume %s: the kcp chart's CAs are Secrets", v.Name)
		keys, ok := pki.secrets[v.Secret.SecretName]
		require.True(t, ok, "volume %s: nothing writes Secret %s", v.Name, v.Secret.SecretName)
		require.NotEmpty(t, v.Secret.Items, "volume %s: the keys are named", v.Name)
		for _, item := range v.Secret.Items {
			require.True(t, keys[item.Key], "volume %s: Secret %s has no key %s", v.Name, v.Secret.SecretName, item.Key)
		}
	}
	// Every Certificate of the plugin's is issued by an Issuer of the kcp chart.
	for _, doc := range pluginObjs["Certificate"] {
		var c certificate
		require.NoError(t, json.Unmarshal(doc, &c))
		require.True(t, kcpIssuers[c.Spec.IssuerRef.Name], "Certificate %s: issuer %s is not the kcp chart's", c.Metadata.Name, c.Spec.IssuerRef.Name)
	}

	// The mapping, as the kcp chart renders it into the front-proxy's config.
	var mappings []proxytypes.PathMapping
	for _, doc := range kcpObjs["ConfigMap"] {
		var cm corev1.ConfigMap
		require.NoError(t, json.Unmarshal(doc, &cm))
		if data, ok := cm.Data["path-mapping.yaml"]; ok {
			require.NoError(t, yaml.UnmarshalStrict([]byte(data), &mappings))
		}
	}
	var mapping *proxytypes.PathMapping
	for i := range mappings {
		if mappings[i].Path == "/services/workspacemounts" {
			mapping = &mappings[i]
		}
	}
	require.NotNil(t, mapping, "the kcp chart's front-proxy maps /services/workspacemounts")
	require.Equal(t, []proxytypes.PathMapping{*mapping}, kcpChartMappings(t, documents(t, readFile(t, kcpChartValuesFile))[0]))
	// The docs page shows the values file as it is.
	page, err := fs.ReadFile(docsFS, kcpChartDoc)
	require.NoError(t, err)
	var values []string
	for _, line := range strings.Split(string(readFile(t, kcpChartValuesFile)), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			values = append(values, line)
		}
	}
	require.Contains(t, string(page), "```yaml\n"+strings.Join(values, "\n")+"\n```", "%s shows %s", kcpChartDoc, kcpChartValuesFile)

	svc := single[corev1.Service](t, pluginObjs, "Service")
	var httpsPort int32
	for _, p := range svc.Spec.Ports {
		if p.Name == "https" {
			httpsPort = p.Port
		}
	}
	require.Equal(t, fmt.Sprintf("https://%s.%s.svc:%s", svc.Name, svc.Namespace, strconv.Itoa(int(httpsPort))), mapping.Backend,
		"the mapping's backend is the plugin's Service")

	// The front-proxy trusts the CA of the plugin's serving certificate.
	serving := volumes["serving-cert"].Secret.SecretName
	caSecret, caKey := fileSource(t, frontProxy, mapping.BackendServerCA)
	require.Equal(t, pki.caOf(t, serving), caSecret, "backend_server_ca is the CA of the plugin's serving certificate %s", serving)
	require.Equal(t, "tls.crt", caKey, "a CA Certificate's own certificate is its tls.crt")

	// The plugin trusts the CA of the front-proxy's proxy_client_cert.
	clientSecret, clientKey := fileSource(t, frontProxy, mapping.ProxyClientCert)
	keySecret, keyKey := fileSource(t, frontProxy, mapping.ProxyClientKey)
	require.Equal(t, clientSecret, keySecret)
	require.Equal(t, []string{"tls.crt", "tls.key"}, []string{clientKey, keyKey})
	requestHeaderCA, requestHeaderKey := fileSource(t, plugin, pluginArgs["requestheader-client-ca-file"])
	require.Equal(t, pki.caOf(t, clientSecret), requestHeaderCA, "--requestheader-client-ca-file is the CA of the front-proxy's proxy_client_cert %s", clientSecret)
	require.Equal(t, "tls.crt", requestHeaderKey)
	if cn := pki.certs[clientSecret].Spec.CommonName; cn == "" {
		require.Equal(t, "true", pluginArgs["requestheader-dedicated-ca"], "the proxy_client_cert has no CommonName: only a dedicated CA lets it in")
	} else {
		require.Contains(t, pluginArgs["requestheader-allowed-names"], cn)
	}

	// The kubeconfig: the shard's base URL and CA, a client certificate of
	// the shard's client CA in system:masters.
	kubeconfigSecret, kubeconfigKey := fileSource(t, plugin, pluginArgs["kubeconfig"])
	var stringData string
	for _, doc := range pluginObjs["Secret"] {
		var s corev1.Secret
		require.NoError(t, json.Unmarshal(doc, &s))
		if s.Name == kubeconfigSecret {
			stringData = s.StringData[kubeconfigKey]
		}
	}
	require.NotEmpty(t, stringData, "Secret %s of %s holds the kubeconfig", kubeconfigSecret, kcpChartObjectsFile)
	config, err := clientcmd.Load([]byte(stringData))
	require.NoError(t, err)
	context := pluginArgs["context"]
	if context == "" {
		context = config.CurrentContext
	}
	require.Contains(t, config.Contexts, context)
	cluster, user := config.Clusters[config.Contexts[context].Cluster], config.AuthInfos[config.Contexts[context].AuthInfo]
	require.NotNil(t, cluster)
	require.NotNil(t, user)
	require.Equal(t, argOf(t, shard, "shard-base-url"), cluster.Server, "the shard's base URL")
	shardServing, _ := fileSource(t, shard, argOf(t, shard, "tls-cert-file"))
	serverCA, serverCAKey := fileSource(t, plugin, cluster.CertificateAuthority)
	require.Equal(t, pki.caOf(t, shardServing), serverCA, "the kubeconfig trusts the CA of the shard's serving certificate")
	require.Equal(t, "tls.crt", serverCAKey)
	clientCert, certKey := fileSource(t, plugin, user.ClientCertificate)
	clientCertKey, keyKey := fileSource(t, plugin, user.ClientKey)
	require.Equal(t, clientCert, clientCertKey)
	require.Equal(t, []string{"tls.crt", "tls.key"}, []string{certKey, keyKey})
	shardClientCA, _ := fileSource(t, shard, argOf(t, shard, "client-ca-file"))
	require.Equal(t, shardClientCA, pki.caOf(t, clientCert), "the plugin's client certificate is of the shard's --client-ca-file")
	require.Contains(t, pki.certs[clientCert].Spec.Subject.Organizations, "system:masters")
}
