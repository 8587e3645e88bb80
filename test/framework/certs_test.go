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

package framework

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"k8s.io/client-go/util/cert"
)

// TestCA: a client certificate of a CA made here authenticates over TLS to
// a server trusting that CA, with its user and groups as Kubernetes reads
// them, and is refused by a server trusting another CA.
func TestCA(t *testing.T) {
	t.Parallel()

	ca, err := NewCA("test-ca")
	require.NoError(t, err)
	other, err := NewCA("other-ca")
	require.NoError(t, err)
	require.True(t, ca.Cert.IsCA)

	client, err := ca.ClientCert("resilience-admin", "system:masters", "team-a")
	require.NoError(t, err)
	serving, err := ca.ServingCert("127.0.0.1", "localhost")
	require.NoError(t, err)

	// The files read back as client-go reads them.
	dir := t.TempDir()
	require.NoError(t, ca.WriteCertFile(filepath.Join(dir, "ca.pem")))
	require.NoError(t, client.WriteFiles(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")))
	certs, err := cert.CertsFromFile(filepath.Join(dir, "client.pem"))
	require.NoError(t, err)
	require.Equal(t, "resilience-admin", certs[0].Subject.CommonName)
	// A set in DER: the order of the groups is not kept.
	require.ElementsMatch(t, []string{"system:masters", "team-a"}, certs[0].Subject.Organization)

	handshake := func(trusted *CA) (string, error) {
		server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			peer := r.TLS.PeerCertificates[0]
			groups := slices.Sorted(slices.Values(peer.Subject.Organization))
			fmt.Fprintf(w, "%s %s", peer.Subject.CommonName, strings.Join(groups, ","))
		}))
		servingCert, err := serving.TLSCertificate()
		require.NoError(t, err)
		clientCAs := x509.NewCertPool()
		clientCAs.AddCert(trusted.Cert)
		server.TLS = &tls.Config{Certificates: []tls.Certificate{servingCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs, MinVersion: tls.VersionTLS12}
		server.StartTLS()
		defer server.Close()

		clientCert, err := client.TLSCertificate()
		require.NoError(t, err)
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12}}}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, server.URL, http.NoBody)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	body, err := handshake(ca)
	require.NoError(t, err)
	require.Equal(t, "resilience-admin system:masters,team-a", body)
	_, err = handshake(other)
	require.Error(t, err, "a server trusting another CA refuses the certificate")

	_, err = ca.ServingCert()
	require.Error(t, err, "a serving certificate without a host")
}

// TestCABundle: a bundle of two CAs verifies the client certificates of
// both, and a serving certificate verifies for its IP address and name.
func TestCABundle(t *testing.T) {
	t.Parallel()

	ca1, err := NewCA("ca-1")
	require.NoError(t, err)
	ca2, err := NewCA("ca-2")
	require.NoError(t, err)
	bundle := x509.NewCertPool()
	require.True(t, bundle.AppendCertsFromPEM(CABundle(ca1, ca2)))
	for _, ca := range []*CA{ca1, ca2} {
		kp, err := ca.ClientCert("user")
		require.NoError(t, err)
		_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: bundle, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, "signed by %s", ca.Cert.Subject.CommonName)
		_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: ca1.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.Equal(t, ca == ca1, err == nil, "verified by ca-1 alone: %v", err)
	}

	serving, err := ca1.ServingCert("127.0.0.1", "localhost")
	require.NoError(t, err)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err = serving.Cert.Verify(x509.VerifyOptions{Roots: ca1.Pool(), DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		require.NoError(t, err, host)
	}
	_, err = serving.Cert.Verify(x509.VerifyOptions{Roots: ca1.Pool(), DNSName: "127.0.0.2"})
	require.Error(t, err)
	again, err := ca1.ServingCert("127.0.0.1")
	require.NoError(t, err)
	require.NotEqual(t, serving.Cert.SerialNumber, again.Cert.SerialNumber, "every certificate has a serial of its own")

	path := filepath.Join(t.TempDir(), "bundle.pem")
	require.NoError(t, WriteFileAtomic(path, CABundle(ca1)))
	require.NoError(t, WriteFileAtomic(path, CABundle(ca1, ca2)))
	certs, err := cert.CertsFromFile(path)
	require.NoError(t, err)
	require.Len(t, certs, 2)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

// TestSecretDir: the layout is kubelet's (<name> -> ..data/<name>, ..data
// -> ..<timestamp>.<random>), an update swaps ..data and removes the old
// content and the names no longer in it.
func TestSecretDir(t *testing.T) {
	t.Parallel()

	dir := filepath.Join(t.TempDir(), "secret")
	d, err := NewSecretDir(dir, map[string][]byte{"tls.crt": []byte("cert 1"), "tls.key": []byte("key 1")})
	require.NoError(t, err)

	layout := func() (string, []string) {
		t.Helper()
		data, err := os.Readlink(filepath.Join(dir, "..data"))
		require.NoError(t, err)
		require.Regexp(t, `^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`, data)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			if e.Name() == data || e.Name() == "..data" {
				continue
			}
			require.Equal(t, os.ModeSymlink, e.Type(), "%s is a symlink", e.Name())
			target, err := os.Readlink(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			require.Equal(t, filepath.Join("..data", e.Name()), target)
		}
		return data, names
	}
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(d.Path(name))
		require.NoError(t, err)
		return string(data)
	}

	first, names := layout()
	require.ElementsMatch(t, []string{"..data", first, "tls.crt", "tls.key"}, names)
	require.Equal(t, "cert 1", read("tls.crt"))
	require.Equal(t, "key 1", read("tls.key"))

	require.NoError(t, d.Update(map[string][]byte{"tls.crt": []byte("cert 2"), "ca.crt": []byte("ca 2")}))
	second, names := layout()
	require.NotEqual(t, first, second)
	require.ElementsMatch(t, []string{"..data", second, "tls.crt", "ca.crt"}, names, "the old content and tls.key are gone")
	require.Equal(t, "cert 2", read("tls.crt"))
	require.Equal(t, "ca 2", read("ca.crt"))

	for _, name := range []string{"..data", "a/b", "", "..x"} {
		require.Error(t, d.Update(map[string][]byte{name: nil}), "%q", name)
	}
	require.Equal(t, "cert 2", read("tls.crt"), "a refused update changes nothing")
}

// TestSecretDirAtomic: a reader going through the user-visible path while
// the content is swapped again and again sees one whole content or the
// next, never a missing file or a mix of two.
func TestSecretDirAtomic(t *testing.T) {
	t.Parallel()

	content := func(i int) map[string][]byte {
		return map[string][]byte{"kubeconfig": []byte(fmt.Sprintf("kubeconfig %d", i)), "tls.crt": []byte(fmt.Sprintf("cert %d", i))}
	}
	d, err := NewSecretDir(filepath.Join(t.TempDir(), "secret"), content(0))
	require.NoError(t, err)

	const updates = 200
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		last := 0
		for {
			select {
			case <-done:
				return
			default:
			}
			// Both files through one resolution of ..data, as a program
			// reading a kubeconfig and the certificate next to it does
			// when it resolves the directory once.
			data, err := filepath.EvalSymlinks(filepath.Join(d.Dir, "..data"))
			if err != nil {
				continue // renamed meanwhile, and the old one removed: resolve again
			}
			kubeconfig, err1 := os.ReadFile(filepath.Join(data, "kubeconfig"))
			crt, err2 := os.ReadFile(filepath.Join(data, "tls.crt"))
			if err1 != nil || err2 != nil {
				continue // the old content was removed between the two reads
			}
			if strings.TrimPrefix(string(kubeconfig), "kubeconfig ") != strings.TrimPrefix(string(crt), "cert ") {
				errs <- fmt.Errorf("a mix of two contents: %q and %q", kubeconfig, crt)
				return
			}
			// Through the user-visible path: whole contents, in order. (It
			// may not resolve at the very moment the old content is
			// removed, as with kubelet's own writer.)
			crt, err = os.ReadFile(d.Path("tls.crt"))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			var n int
			if _, scanErr := fmt.Sscanf(string(crt), "cert %d", &n); err != nil || scanErr != nil || n < last {
				errs <- fmt.Errorf("read %q (%v) after cert %d", crt, err, last)
				return
			}
			last = n
		}
	}()
	for i := 1; i <= updates; i++ {
		require.NoError(t, d.Update(content(i)))
	}
	close(done)
	require.NoError(t, <-errs)
	data, err := os.ReadFile(d.Path("kubeconfig"))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("kubeconfig %d", updates), string(data))
}
