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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// AdminUser is the admin of a ShardedServer, by client certificate
	// (ShardedPKI.AdminCertFile) or token (ShardedPKI.Tokens): in the groups
	// system:kcp:admin and system:masters on every shard. The front-proxy
	// passes only system:kcp:admin on.
	AdminUser = "kcp-admin"
	// FrontProxyClientName is the common name of the front-proxy's client
	// certificate, the only one the shards accept X-Remote-* headers from.
	FrontProxyClientName = "kcp-front-proxy"
)

// adminGroups are AdminUser's groups.
var adminGroups = []string{"system:kcp:admin", "system:masters"}

// ShardedPKI is what the processes of a ShardedServer present and trust,
// made for each ShardedServer and written to files in Dir: every process
// of it reads them, and so may a backend of a front-proxy mapping.
type ShardedPKI struct {
	// Dir holds the files.
	Dir string

	// ServingCA signs the serving certificate of every process
	// (ServingCertFile); ServingCA.ServingCert makes one for a backend of a
	// front-proxy mapping, which the front-proxy then trusts by default.
	ServingCA *CA
	// ClientCA signs the client certificates that the shards and the
	// front-proxy accept (their --client-ca-file).
	ClientCA *CA
	// RequestHeaderCA signs the front-proxy's client certificate
	// (ProxyClientCertFile), with which the shards, and a backend of a
	// front-proxy mapping, accept the user in X-Remote-* headers (their
	// --requestheader-client-ca-file).
	RequestHeaderCA *CA

	// ServingCAFile, ClientCAFile and RequestHeaderCAFile are the three CAs' certificates.
	ServingCAFile, ClientCAFile, RequestHeaderCAFile string
	// ServingCertFile and ServingKeyFile are the serving certificate of every
	// process, for 127.0.0.1 and localhost.
	ServingCertFile, ServingKeyFile string
	// AdminCertFile and AdminKeyFile are AdminUser's client certificate.
	AdminCertFile, AdminKeyFile string
	// ProxyClientCertFile and ProxyClientKeyFile are the client certificate
	// (FrontProxyClientName) that the front-proxy presents to the shards and
	// to the backends of its mappings.
	ProxyClientCertFile, ProxyClientKeyFile string
	// ServiceAccountKeyFile is the private key (ECDSA) with which every shard
	// signs service account tokens; ServiceAccountPublicKeyFile verifies them.
	ServiceAccountKeyFile, ServiceAccountPublicKeyFile string
	// TokenFile holds the static tokens of every shard and the front-proxy
	// (--token-auth-file), Tokens the same by user name: AdminUser's and one
	// for each of ShardedOptions.Users (a user of no group).
	TokenFile string
	Tokens    map[string]string

	// The client certificates of kcp's own logical cluster admins, which the
	// shards use among themselves (internal) and through the front-proxy
	// (external).
	logicalClusterAdminCertFile, logicalClusterAdminKeyFile                 string
	externalLogicalClusterAdminCertFile, externalLogicalClusterAdminKeyFile string
}

// newShardedPKI makes the CAs, certificates, keys and tokens of a
// ShardedServer with users besides AdminUser, and writes them to dir.
func newShardedPKI(dir string, users []string) (*ShardedPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the PKI directory: %w", err)
	}
	p := &ShardedPKI{Dir: dir}
	if err := p.makeCAs(); err != nil {
		return nil, err
	}
	if err := p.issueCertificates(); err != nil {
		return nil, err
	}
	if err := p.writeServiceAccountKey(); err != nil {
		return nil, err
	}
	if err := p.writeTokens(users); err != nil {
		return nil, err
	}
	return p, nil
}

// makeCAs makes the three CAs and writes their certificates.
func (p *ShardedPKI) makeCAs() error {
	cas := []struct {
		commonName string
		ca         **CA
		file       *string
	}{
		{"kcp-serving-ca", &p.ServingCA, &p.ServingCAFile},
		{"kcp-client-ca", &p.ClientCA, &p.ClientCAFile},
		{"kcp-requestheader-ca", &p.RequestHeaderCA, &p.RequestHeaderCAFile},
	}
	for _, c := range cas {
		ca, err := NewCA(c.commonName)
		if err != nil {
			return err
		}
		path := p.path(strings.TrimPrefix(c.commonName, "kcp-") + ".crt")
		if err := ca.WriteCertFile(path); err != nil {
			return err
		}
		*c.ca, *c.file = ca, path
	}
	return nil
}

// issueCertificates signs and writes the serving certificate and the client
// certificates.
func (p *ShardedPKI) issueCertificates() error {
	serving, err := p.ServingCA.ServingCert("127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	if p.ServingCertFile, p.ServingKeyFile, err = p.writePair("serving", serving); err != nil {
		return err
	}
	clients := []struct {
		name              string
		ca                *CA
		user              string
		groups            []string
		certFile, keyFile *string
	}{
		{"admin", p.ClientCA, AdminUser, adminGroups, &p.AdminCertFile, &p.AdminKeyFile},
		{"front-proxy-client", p.RequestHeaderCA, FrontProxyClientName, nil, &p.ProxyClientCertFile, &p.ProxyClientKeyFile},
		{"logical-cluster-admin", p.ClientCA, "logical-cluster-admin", []string{"system:kcp:logical-cluster-admin"},
			&p.logicalClusterAdminCertFile, &p.logicalClusterAdminKeyFile},
		{"external-logical-cluster-admin", p.ClientCA, "external-logical-cluster-admin", []string{"system:kcp:external-logical-cluster-admin"},
			&p.externalLogicalClusterAdminCertFile, &p.externalLogicalClusterAdminKeyFile},
	}
	for _, c := range clients {
		pair, err := c.ca.ClientCert(c.user, c.groups...)
		if err != nil {
			return err
		}
		if *c.certFile, *c.keyFile, err = p.writePair(c.name, pair); err != nil {
			return err
		}
	}
	return nil
}

// writePair writes a certificate and its key to <name>.crt and <name>.key.
func (p *ShardedPKI) writePair(name string, pair *KeyPair) (certFile, keyFile string, err error) {
	certFile, keyFile = p.path(name+".crt"), p.path(name+".key")
	return certFile, keyFile, pair.WriteFiles(certFile, keyFile)
}

// writeServiceAccountKey makes the service account key pair and writes it.
func (p *ShardedPKI) writeServiceAccountKey() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the service account key: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	publicDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	p.ServiceAccountKeyFile, p.ServiceAccountPublicKeyFile = p.path("service-account.key"), p.path("service-account.pub")
	if err := WriteFileAtomic(p.ServiceAccountKeyFile, encodePEM("EC PRIVATE KEY", keyDER)); err != nil {
		return err
	}
	return WriteFileAtomic(p.ServiceAccountPublicKeyFile, encodePEM("PUBLIC KEY", publicDER))
}

// writeTokens makes a token for AdminUser and each user and writes the
// token file, a line "token,user,uid[,\"groups\"]" each.
func (p *ShardedPKI) writeTokens(users []string) error {
	p.Tokens = make(map[string]string, len(users)+1)
	var lines strings.Builder
	for _, user := range append([]string{AdminUser}, users...) { // ShardedOptions.complete checks them
		token, err := newToken()
		if err != nil {
			return err
		}
		p.Tokens[user] = token
		fmt.Fprintf(&lines, "%s,%s,%s", token, user, user)
		if user == AdminUser {
			fmt.Fprintf(&lines, ",%q", strings.Join(adminGroups, ","))
		}
		lines.WriteString("\n")
	}
	p.TokenFile = p.path("tokens.csv")
	return WriteFileAtomic(p.TokenFile, []byte(lines.String()))
}

func (p *ShardedPKI) path(name string) string {
	return filepath.Join(p.Dir, name)
}

// newToken returns 32 random hexadecimal digits.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// requestHeaderArgs are the flags of a server (a shard, the plugin) that
// accepts the user in the front-proxy's X-Remote-User, X-Remote-Group and
// X-Remote-Extra-* headers from the front-proxy's client certificate only.
func (p *ShardedPKI) requestHeaderArgs() []string {
	return RequestHeaderArgs(p.RequestHeaderCAFile, FrontProxyClientName)
}

// RequestHeaderArgs are the flags of a server (a shard, the plugin) that
// believes the user in the X-Remote-User, X-Remote-Group and
// X-Remote-Extra-* headers of a client certificate of caFile named one of
// allowedNames (none: any of caFile's, which the plugin takes only with
// --requestheader-dedicated-ca).
func RequestHeaderArgs(caFile string, allowedNames ...string) []string {
	args := []string{"--requestheader-client-ca-file=" + caFile}
	if len(allowedNames) > 0 {
		args = append(args, "--requestheader-allowed-names="+strings.Join(allowedNames, ","))
	}
	return append(args,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
	)
}
