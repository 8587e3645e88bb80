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
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kcpdynamic "github.com/kcp-dev/client-go/dynamic"
	"github.com/kcp-dev/logicalcluster/v3"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// rotationUser is the plugins' user in their client certificates, in
	// group system:masters: kcp v0.28.1 puts the AlwaysAllowGroups
	// authorizer (system:masters) first in every workspace, as for the shard
	// admin of admin.kubeconfig.
	rotationUser = "rotation-admin"
	// rotationCATimeout bounds how long kcp takes to trust a rewritten
	// --client-ca-file: it watches it with fsnotify (and looks again every
	// minute when the watch fails).
	rotationCATimeout = 75 * time.Second
	// rotationReloadTimeout bounds how long the plugin takes to use a
	// rotated kubeconfig: it looks at the files every 10 s.
	rotationReloadTimeout = 45 * time.Second
	// rotationServingTimeout bounds how long the virtual workspace takes to
	// serve a swapped --tls-cert-file: k8s.io/apiserver watches the files
	// with fsnotify, and the swap removes the file it watched.
	rotationServingTimeout = 90 * time.Second
	// rotationStartTimeout bounds how long a plugin takes to be ready.
	rotationStartTimeout = 90 * time.Second
	// rotationReloadLog is what the plugin logs when it switched to new credentials.
	rotationReloadLog = "reloaded the kubeconfig"
	// rotationProbePath is what the test asks kcp with a client certificate:
	// the Workspaces of root, which only an authorized user may list.
	rotationProbePath = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces"
)

// rotationEnv is a private kcp trusting client certificates of CAs the test
// makes (--client-ca-file), with an org serving KubeClusters.
type rotationEnv struct {
	kcp *framework.Server
	c   clients
	// kcpCA is kcp's serving CA, from admin.kubeconfig.
	kcpCA []byte
	// servingCA signs the serving certificates of the virtual workspace.
	servingCA *framework.CA
	// clientCAFile is kcp's --client-ca-file.
	clientCAFile string
	org          logicalcluster.Path
	orgCluster   logicalcluster.Name
	kind         mountKind
}

// TestCredentialRotation is issue 8's credential rotation, end to end, with
// two plugins against a kcp of its own that trusts client certificates of CA1:
//
//   - "files": a kubeconfig in a Secret-like directory naming the client
//     certificate, key and CA as files next to it; it runs the controller.
//   - "embedded": a kubeconfig holding them as data (the kubeconfig itself
//     is what changes); it runs the virtual workspace only, with a serving
//     certificate of its own (--tls-cert-file) in another such directory.
//
// kcp is made to trust CA1 and CA2, both directories are swapped to
// certificates of CA2 (the atomic ..data swap of a mounted Secret), and, once
// both plugins said they reloaded, kcp trusts CA2 only: a CA1 certificate
// then gets 401. kcp checks the client certificate of every request (not
// only at the TLS handshake), so each later request that succeeds shows the
// new certificate in use: a write of the controller, a TokenReview and a
// SubjectAccessReview of the virtual workspace, and, after kcp is killed and
// started again, every connection made anew. Before that, the serving pair
// is swapped, and new TLS connections get the new certificate.
func TestCredentialRotation(t *testing.T) {
	t.Parallel()
	began := time.Now()
	dir := t.TempDir()

	ca1, err := framework.NewCA("rotation-ca-1")
	require.NoError(t, err)
	ca2, err := framework.NewCA("rotation-ca-2")
	require.NoError(t, err)
	cert1, err := ca1.ClientCert(rotationUser, "system:masters")
	require.NoError(t, err)
	cert2, err := ca2.ClientCert(rotationUser, "system:masters")
	require.NoError(t, err)

	e := startRotationKCP(t, dir, ca1)
	t.Logf("kcp trusting CA1 and the org with a mount after %s", time.Since(began).Round(time.Millisecond))
	require.Equal(t, http.StatusOK, e.probe(t, cert1), "kcp accepts the CA1 certificate of group system:masters")
	require.Equal(t, http.StatusUnauthorized, e.probe(t, cert2), "kcp refuses a CA2 certificate before it trusts CA2")

	// The "files" plugin: a Secret holding kubeconfig, tls.crt, tls.key, ca.crt.
	filesSecret, err := framework.NewSecretDir(filepath.Join(dir, "files-secret"), e.filesSecret(t, dir, cert1))
	require.NoError(t, err)
	filesKubeconfig := filesSecret.Path("kubeconfig")
	files := e.startPlugin(t, dir, "files", filesKubeconfig, "--run-virtual-workspace=false")

	// The "embedded" plugin: a Secret holding only a kubeconfig with the data in it.
	embeddedSecret, err := framework.NewSecretDir(filepath.Join(dir, "embedded-secret"), map[string][]byte{"kubeconfig": e.embeddedKubeconfig(t, cert1)})
	require.NoError(t, err)
	embeddedKubeconfig := embeddedSecret.Path("kubeconfig")
	servingCA := e.servingCA // also the virtual workspace clients' CA
	serving1, err := servingCA.ServingCert("127.0.0.1", "localhost")
	require.NoError(t, err)
	servingSecret, err := framework.NewSecretDir(filepath.Join(dir, "serving-secret"), map[string][]byte{"tls.crt": serving1.CertPEM, "tls.key": serving1.KeyPEM})
	require.NoError(t, err)
	embedded := e.startPlugin(t, dir, "embedded", embeddedKubeconfig, "--run-controller=false",
		"--tls-cert-file="+servingSecret.Path("tls.crt"), "--tls-private-key-file="+servingSecret.Path("tls.key"))

	// Before the rotation: the controller writes, the virtual workspace answers.
	e.c.createMountObject(t, e.org, e.kind, "before", map[string]interface{}{"phase": "Connecting"})
	e.c.createMountedWorkspace(t, e.org, "before", e.kind.ref("before"))
	e.c.waitForMount(t, e.org, "before", mountState{phase: mount.PhaseConnecting, reason: mount.ReasonMountNotReady})
	e.waitVWServes(t, embedded, "before", e.kcp.ConfigT(t, adminContext).BearerToken)
	t.Logf("both plugins work with CA1 certificates after %s", time.Since(began).Round(time.Millisecond))

	// The serving certificate: --tls-cert-file wins over StartPlugin's
	// --cert-dir (no self-signed pair is made), and a swap shows in new
	// TLS connections.
	vwAddress := strings.TrimPrefix(embedded.VirtualWorkspaceURL, "https://")
	require.Equal(t, serving1.Cert.SerialNumber, servedSerial(t, vwAddress, servingCA), "the served certificate is --tls-cert-file's")
	_, err = os.Stat(embedded.CAFile)
	require.ErrorIs(t, err, os.ErrNotExist, "no self-signed pair in --cert-dir when --tls-cert-file is given")
	serving2, err := servingCA.ServingCert("127.0.0.1", "localhost")
	require.NoError(t, err)
	swapped := time.Now()
	require.NoError(t, servingSecret.Update(map[string][]byte{"tls.crt": serving2.CertPEM, "tls.key": serving2.KeyPEM}))
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		serial := servedSerial(t, vwAddress, servingCA)
		return serial.Cmp(serving2.Cert.SerialNumber) == 0, fmt.Sprintf("a new TLS connection is served serial %x, want %x (the old one is %x)",
			serial, serving2.Cert.SerialNumber, serving1.Cert.SerialNumber)
	}, rotationServingTimeout, 200*time.Millisecond, "the virtual workspace serves the swapped certificate")
	t.Logf("the virtual workspace served the swapped serving certificate %s after the swap", time.Since(swapped).Round(time.Millisecond))

	// Step 1: kcp trusts CA1 and CA2.
	require.NoError(t, framework.WriteFileAtomic(e.clientCAFile, framework.CABundle(ca1, ca2)))
	e.waitProbe(t, cert2, http.StatusOK, "kcp trusts CA2 besides CA1")
	require.Equal(t, http.StatusOK, e.probe(t, cert1), "kcp still trusts CA1")

	// Step 2: both Secrets swapped to CA2 certificates.
	rotated := time.Now()
	require.NoError(t, filesSecret.Update(e.filesSecret(t, dir, cert2)))
	require.NoError(t, embeddedSecret.Update(map[string][]byte{"kubeconfig": e.embeddedKubeconfig(t, cert2)}))
	waitReloaded(t, files, filesKubeconfig)
	waitReloaded(t, embedded, embeddedKubeconfig)
	t.Logf("both plugins reloaded their kubeconfig %s after the swap", time.Since(rotated).Round(time.Millisecond))

	// Step 3: kcp trusts CA2 only; the old certificate is refused.
	require.NoError(t, framework.WriteFileAtomic(e.clientCAFile, framework.CABundle(ca2)))
	e.waitProbe(t, cert1, http.StatusUnauthorized, "kcp refuses the CA1 certificate")
	require.Equal(t, http.StatusOK, e.probe(t, cert2), "kcp accepts the CA2 certificate")

	// The controller writes with the new certificate: a change of the
	// existing mount, and a new mounted Workspace (read from kcp, written to).
	readyURL := e.kcp.BaseURL + "/clusters/" + e.org.String() + ":before"
	e.c.setMountStatus(t, e.org, e.kind, "before", map[string]interface{}{"phase": "Ready", "URL": readyURL})
	e.c.waitForMount(t, e.org, "before", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: readyURL})
	e.c.createMountedWorkspace(t, e.org, "after", e.kind.ref("after"))
	e.c.waitForMount(t, e.org, "after", mountState{phase: mount.PhaseNotFound, reason: mount.ReasonMountObjectNotFound})
	// The virtual workspace asks kcp with the new certificate: a token it
	// never reviewed (the shard admin's) and a verb it never asked about
	// (get) cannot be answered from its caches.
	e.waitVWServes(t, embedded, "after", e.kcp.ConfigT(t, "shard-base").BearerToken)
	t.Logf("both plugins work with CA2 certificates only, %s after the swap", time.Since(rotated).Round(time.Millisecond))
	// And not one request was refused: the plugins switched before kcp
	// stopped trusting CA1. (client-go alone would notice new certificate
	// files, but only at a new TLS handshake, after a first 401.)
	for _, p := range []*framework.Plugin{files, embedded} {
		require.Zero(t, countLogLines(t, p, "Unauthorized"), "requests of the plugin refused by kcp (log %s)", p.LogPath)
	}

	// Stronger: kcp restarted, every connection is made anew, and only the
	// new certificate can make it. (Before the restart, it is the reload
	// closing the old connections that keeps the CA1 certificate, which an
	// open connection's TLS state still holds, from being sent: kcp checks
	// it on every request.) Killed rather than stopped:
	// after SIGTERM, kcp waits for the plugins' open watches up to its
	// --request-timeout, longer than the framework's 20 s.
	restarted := time.Now()
	require.NoError(t, e.kcp.Kill(), "killing kcp")
	require.NoError(t, e.kcp.StartAgain(context.Background()), "starting kcp again")
	t.Logf("kcp killed and started again in %s", time.Since(restarted).Round(time.Millisecond))
	e.connect(t)
	require.Equal(t, http.StatusUnauthorized, e.probe(t, cert1), "the restarted kcp refuses the CA1 certificate")
	e.c.setMountStatus(t, e.org, e.kind, "before", map[string]interface{}{"phase": "Initializing"})
	e.c.waitForMount(t, e.org, "before", mountState{phase: mount.PhaseInitializing, reason: mount.ReasonMountNotReady})
	e.c.createMountObject(t, e.org, e.kind, "restarted", map[string]interface{}{"phase": "Ready", "URL": readyURL})
	e.c.createMountedWorkspace(t, e.org, "restarted", e.kind.ref("restarted"))
	e.c.waitForMount(t, e.org, "restarted", mountState{phase: mount.PhaseReady, ready: true, reason: mount.ReasonMountReady, url: readyURL})
	e.waitVWServes(t, embedded, "restarted", e.kcp.ConfigT(t, adminContext).BearerToken)
	t.Logf("both plugins work after kcp's restart, %s after it", time.Since(restarted).Round(time.Millisecond))

	for _, p := range []*framework.Plugin{files, embedded} {
		require.NoError(t, p.CheckRunning())
	}
	t.Logf("requests refused by kcp in the plugins' logs, restart included: files %d, embedded %d",
		countLogLines(t, files, "Unauthorized"), countLogLines(t, embedded, "Unauthorized"))
	t.Logf("TestCredentialRotation took %s", time.Since(began).Round(time.Millisecond))
}

// startRotationKCP starts a kcp trusting client certificates of ca
// (--client-ca-file), and makes an org serving KubeClusters.
func startRotationKCP(t *testing.T, dir string, ca *framework.CA) *rotationEnv {
	t.Helper()
	servingCA, err := framework.NewCA("rotation-serving-ca")
	require.NoError(t, err)
	e := &rotationEnv{clientCAFile: filepath.Join(dir, "client-ca.pem"), servingCA: servingCA}
	require.NoError(t, framework.WriteFileAtomic(e.clientCAFile, framework.CABundle(ca)))
	e.kcp = framework.StartT(t, framework.Options{ExtraArgs: []string{"--client-ca-file=" + e.clientCAFile}})

	admin := e.kcp.BaseConfigT(t, "shard-base")
	e.kcpCA = admin.CAData
	if len(e.kcpCA) == 0 && admin.CAFile != "" {
		var err error
		e.kcpCA, err = os.ReadFile(admin.CAFile)
		require.NoError(t, err)
	}
	require.NotEmpty(t, e.kcpCA, "kcp's serving CA in %s", e.kcp.KubeconfigPath)

	e.connect(t)
	cfg := e.kcp.BaseConfigT(t, "base")
	org := framework.UniqueName("rotation")
	e.orgCluster, _ = framework.CreateWorkspace(t, cfg, framework.RootPath, org)
	e.org = framework.RootPath.Join(org)
	// Served before any Workspace mounts it: kcp v0.28.1 panics otherwise.
	framework.InstallCRD(t, cfg, e.org, framework.MountCRD(kubeClusters.gvr.Group, kubeClusters.kind, kubeClusters.gvr.Resource, apiextensionsv1.ClusterScoped))
	e.kind = kubeClusters
	return e
}

// connect makes the test's clients, as kcp-admin, from admin.kubeconfig
// (which kcp writes anew, with new tokens, on every start).
func (e *rotationEnv) connect(t *testing.T) {
	t.Helper()
	cfg := e.kcp.BaseConfigT(t, "base")
	kcpClient, err := kcpclientset.NewForConfig(cfg)
	require.NoError(t, err)
	dynamicClient, err := kcpdynamic.NewForConfig(cfg)
	require.NoError(t, err)
	e.c = clients{kcp: kcpClient, dynamic: dynamicClient}
}

// kubeconfig is a kubeconfig of one context, shard-base (the plugin's), to
// kcp's base URL as rotationUser.
func (e *rotationEnv) kubeconfig(t *testing.T, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cluster.Server = e.kcp.BaseURL
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kcp"] = cluster
	cfg.AuthInfos[rotationUser] = user
	cfg.Contexts["shard-base"] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: rotationUser}
	cfg.CurrentContext = "shard-base"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

// filesSecret is the content of the "files" plugin's Secret: a kubeconfig
// naming tls.crt, tls.key and ca.crt by their paths in the Secret's
// directory dir/files-secret, and those files.
func (e *rotationEnv) filesSecret(t *testing.T, dir string, kp *framework.KeyPair) map[string][]byte {
	t.Helper()
	secretDir := filepath.Join(dir, "files-secret")
	return map[string][]byte{
		"kubeconfig": e.kubeconfig(t,
			&clientcmdapi.Cluster{CertificateAuthority: filepath.Join(secretDir, "ca.crt")},
			&clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(secretDir, "tls.crt"), ClientKey: filepath.Join(secretDir, "tls.key")}),
		"tls.crt": kp.CertPEM,
		"tls.key": kp.KeyPEM,
		"ca.crt":  e.kcpCA,
	}
}

// embeddedKubeconfig is a kubeconfig holding the CA, certificate and key as data.
func (e *rotationEnv) embeddedKubeconfig(t *testing.T, kp *framework.KeyPair) []byte {
	t.Helper()
	return e.kubeconfig(t,
		&clientcmdapi.Cluster{CertificateAuthorityData: e.kcpCA},
		&clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM})
}

// startPlugin starts the plugin binary with kubeconfig, without leader
// election, and waits until it is ready. It is stopped when the test ends,
// and its log's end is printed if the test failed.
func (e *rotationEnv) startPlugin(t *testing.T, dir, name, kubeconfig string, extra ...string) *framework.Plugin {
	t.Helper()
	workDir := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(workDir, 0o755))
	p := framework.StartPluginT(t, t, framework.PluginOptions{
		Name:       fmt.Sprintf("the %s plugin", name),
		Kubeconfig: kubeconfig,
		WorkDir:    workDir,
		ExtraArgs:  append([]string{"--leader-elect=false"}, extra...),
	})
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := p.CheckRunning(); err != nil {
			return false, err.Error()
		}
		code, body, err := opGet(opHTTP, p.MetricsURL+"/readyz", "")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("/readyz: %d: %s", code, body)
	}, rotationStartTimeout, 200*time.Millisecond, "the %s plugin (log %s) becomes ready", name, p.LogPath)
	return p
}

// probe asks kcp for rotationProbePath on a new connection with the client
// certificate kp, always sent (as client-go does, whatever CAs kcp names in
// its certificate request), and returns the status code.
func (e *rotationEnv) probe(t *testing.T, kp *framework.KeyPair) int {
	t.Helper()
	clientCert, err := kp.TLSCertificate()
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(e.kcpCA))
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{
				RootCAs:              roots,
				MinVersion:           tls.VersionTLS12,
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &clientCert, nil },
			},
		},
	}
	code, body, err := opGet(client, e.kcp.BaseURL+rotationProbePath, "")
	require.NoError(t, err, "GET %s with the certificate of %s", rotationProbePath, kp.Cert.Issuer.CommonName)
	if code != http.StatusOK && code != http.StatusUnauthorized {
		t.Fatalf("GET %s with the certificate of %s: %d, want 200 or 401: %s", rotationProbePath, kp.Cert.Issuer.CommonName, code, body)
	}
	return code
}

// waitProbe waits until probe answers want.
func (e *rotationEnv) waitProbe(t *testing.T, kp *framework.KeyPair, want int, what string) {
	t.Helper()
	began := time.Now()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		code := e.probe(t, kp)
		return code == want, fmt.Sprintf("%d", code)
	}, rotationCATimeout, 200*time.Millisecond, "%s (a certificate of %s gets %d)", what, kp.Cert.Issuer.CommonName, want)
	t.Logf("%s after %s", what, time.Since(began).Round(time.Millisecond))
}

// waitVWServes waits until the plugin's virtual workspace serves the
// WorkspaceMount of the org's Workspace name to the bearer token's user: a
// get, which the virtual workspace authorizes with a SubjectAccessReview
// and, for a token it has not seen within 10 s, a TokenReview.
func (e *rotationEnv) waitVWServes(t *testing.T, p *framework.Plugin, name, token string) {
	t.Helper()
	client := rotationVWClient(e.servingCA)
	target := p.VirtualWorkspaceURL + vwPrefix + e.orgCluster.String() + vwResourcePath + "/" + url.PathEscape(name)
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := p.CheckRunning(); err != nil {
			return false, err.Error()
		}
		code, body, err := opGet(client, target, token)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("GET %s: %d: %s", target, code, excerpt(body))
	}, vwConvergeTimeout, 200*time.Millisecond, "the virtual workspace (log %s) serves %s", p.LogPath, name)
}

// rotationVWClient reaches a virtual workspace serving a certificate of ca.
func rotationVWClient(ca *framework.CA) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		},
	}
}

// servedSerial opens a new TLS connection to address, verifies the served
// certificate with ca for 127.0.0.1, and returns its serial number.
func servedSerial(t *testing.T, address string, ca *framework.CA) *big.Int {
	t.Helper()
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config:    &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dialer.DialContext(ctx, "tcp", address)
	require.NoError(t, err, "a TLS connection to %s verified with %s", address, ca.Cert.Subject.CommonName)
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
}

// waitReloaded waits until the plugin logs that it reloaded kubeconfig.
func waitReloaded(t *testing.T, p *framework.Plugin, kubeconfig string) {
	t.Helper()
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		if err := p.CheckRunning(); err != nil {
			return false, err.Error()
		}
		data, err := os.ReadFile(p.LogPath)
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, rotationReloadLog) && strings.Contains(line, kubeconfig) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no line with %q and %s in %s", rotationReloadLog, kubeconfig, p.LogPath)
	}, rotationReloadTimeout, 200*time.Millisecond, "the plugin reloads %s", kubeconfig)
}

// countLogLines counts the lines of the plugin's log that contain s.
func countLogLines(t *testing.T, p *framework.Plugin, s string) int {
	t.Helper()
	data, err := os.ReadFile(p.LogPath)
	require.NoError(t, err)
	return strings.Count(string(data), s)
}
