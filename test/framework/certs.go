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
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// certValidity is how long the certificates made here are valid; they start
// an hour in the past, so that a clock a bit behind does not refuse them.
const certValidity = 24 * time.Hour

// CA is a certificate authority made for a test: a self-signed certificate
// and its key (ECDSA P-256, quick to make even under the race detector).
type CA struct {
	// Cert is the CA's own certificate.
	Cert *x509.Certificate
	// CertPEM is Cert, PEM-encoded.
	CertPEM []byte

	key *ecdsa.PrivateKey
}

// KeyPair is a certificate signed by a CA, with its private key.
type KeyPair struct {
	// Cert is the leaf certificate.
	Cert *x509.Certificate
	// CertPEM and KeyPEM are the certificate and its key, PEM-encoded (the
	// key as "EC PRIVATE KEY", as client-go and k8s.io/apiserver read it).
	CertPEM, KeyPEM []byte
}

// NewCA makes a self-signed CA whose subject's common name is commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key of CA %q: %w", commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA %q: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), key: key}, nil
}

// ClientCert makes a client certificate for user (the subject's common
// name) in groups (its organizations), as kube-apiserver and kcp read a
// certificate verified by their --client-ca-file.
func (ca *CA) ClientCert(user string, groups ...string) (*KeyPair, error) {
	return ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// ClientCertWithoutCommonName makes a client certificate whose subject is
// empty and whose names are dnsNames only, as kcp-dev/helm-charts' kcp chart
// issues its front-proxy's request-header client certificate.
func (ca *CA) ClientCertWithoutCommonName(dnsNames ...string) (*KeyPair, error) {
	return ca.sign(&x509.Certificate{
		DNSNames:    dnsNames,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// ServingCert makes a serving certificate for hosts, each an IP address
// (e.g. "127.0.0.1") or a DNS name; the first is also the common name.
func (ca *CA) ServingCert(hosts ...string) (*KeyPair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("a serving certificate needs at least one host")
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	return ca.sign(template)
}

// sign completes template (serial, validity, a new key) and signs it.
func (ca *CA) sign(template *x509.Certificate) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	if template.SerialNumber, err = newSerial(); err != nil {
		return nil, err
	}
	now := time.Now()
	template.NotBefore, template.NotAfter = now.Add(-time.Hour), now.Add(certValidity)
	der, err := x509.CreateCertificate(rand.Reader, template, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %q with CA %q: %w", template.Subject.CommonName, ca.Cert.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, CertPEM: encodePEM("CERTIFICATE", der), KeyPEM: encodePEM("EC PRIVATE KEY", keyDER)}, nil
}

// Pool is a certificate pool holding the CA only.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// WriteCertFile writes the CA's certificate to path (PEM), e.g. for a
// --client-ca-file or a kubeconfig's certificate-authority.
func (ca *CA) WriteCertFile(path string) error {
	return WriteFileAtomic(path, ca.CertPEM)
}

// WriteFiles writes the certificate and its key to certPath and keyPath (PEM).
func (kp *KeyPair) WriteFiles(certPath, keyPath string) error {
	if err := WriteFileAtomic(certPath, kp.CertPEM); err != nil {
		return err
	}
	return WriteFileAtomic(keyPath, kp.KeyPEM)
}

// TLSCertificate is the pair for a tls.Config.
func (kp *KeyPair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
}

// CABundle concatenates the certificates of cas, PEM-encoded, as a
// --client-ca-file bundle holds them.
func CABundle(cas ...*CA) []byte {
	var b bytes.Buffer
	for _, ca := range cas {
		b.Write(ca.CertPEM)
	}
	return b.Bytes()
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory renamed over it, so that a reader sees the old content or the
// new one, never a part.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never 0
}

func encodePEM(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

const (
	// secretDataDir is the symlink of a SecretDir to its current content.
	secretDataDir = "..data"
	// secretDataTmp is the new symlink, renamed over secretDataDir.
	secretDataTmp = "..data_tmp"
	// secretTimestampLayout names a content directory, as kubelet does
	// (followed by a random suffix).
	secretTimestampLayout = "..2006_01_02_15_04_05."
)

// SecretDir is a directory laid out the way kubelet mounts a Secret (or
// ConfigMap) volume and updates it (its AtomicWriter): each file <name> is a
// symlink to ..data/<name>; ..data is a symlink to a directory
// ..<timestamp>.<random> holding the content. An update writes a new such
// directory, points a new symlink ..data_tmp at it and renames that over
// ..data (the one atomic step: a reader sees the whole old content or the
// whole new one), then removes the old directory. A program watching a file
// with inotify (fsnotify follows the symlinks) sees the file it watched
// deleted; one polling sees new content.
type SecretDir struct {
	// Dir is the directory.
	Dir string

	lock sync.Mutex // serializes updates
}

// NewSecretDir creates dir (if needed) with files, by name.
func NewSecretDir(dir string, files map[string][]byte) (*SecretDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	d := &SecretDir{Dir: dir}
	if err := d.Update(files); err != nil {
		return nil, err
	}
	return d, nil
}

// Path is the user-visible path of the file name, the one a program is given.
func (d *SecretDir) Path(name string) string {
	return filepath.Join(d.Dir, name)
}

// Update replaces the whole content with files: names not in files
// disappear, as when a key is removed from a Secret.
func (d *SecretDir) Update(files map[string][]byte) error {
	for name := range files {
		if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, "..") || name == "." {
			return fmt.Errorf("%q is not a file name of a Secret volume", name)
		}
	}
	d.lock.Lock()
	defer d.lock.Unlock()

	dataLink := filepath.Join(d.Dir, secretDataDir)
	old, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", dataLink, err)
	}
	contentDir, err := os.MkdirTemp(d.Dir, time.Now().UTC().Format(secretTimestampLayout))
	if err != nil {
		return fmt.Errorf("creating a content directory in %s: %w", d.Dir, err)
	}
	if err := os.Chmod(contentDir, 0o755); err != nil { // as kubelet makes it: readable by the program it is mounted for
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(contentDir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}

	tmpLink := filepath.Join(d.Dir, secretDataTmp)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Symlink(filepath.Base(contentDir), tmpLink); err != nil {
		return fmt.Errorf("linking %s: %w", tmpLink, err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return fmt.Errorf("renaming %s over %s: %w", tmpLink, dataLink, err)
	}

	for name := range files {
		link := filepath.Join(d.Dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(secretDataDir, name), link); err != nil {
			return fmt.Errorf("linking %s: %w", link, err)
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(d.Dir, old)); err != nil {
			return fmt.Errorf("removing the old content %s: %w", old, err)
		}
	}
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if _, keep := files[name]; keep || strings.HasPrefix(name, "..") || e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if target, err := os.Readlink(filepath.Join(d.Dir, name)); err == nil && target == filepath.Join(secretDataDir, name) {
			if err := os.Remove(filepath.Join(d.Dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}
