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

package mount

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// URLRule is the one rule for a mount object's status.URL: whether it is
// routable, the condition of reason MountReady, and, with --workspace-url,
// of its becoming the Workspace's spec.URL, where kcp's front-proxy and
// shards send that workspace's requests with their own credentials. The
// tenant who owns the mount object writes the URL.
//
// Every URL must have the Form: an absolute URL with a host and no user
// information, https with no query and no fragment (URLFormHTTPS), or http
// or https (URLFormLegacy). With CheckHosts (--workspace-url: the plugin
// writes spec.URL), its host must also not be internal (InternalHost)
// unless AllowInternalHosts, and must be in Allowed when that is not empty.
//
// Hosts are judged as written: no name is resolved. A tenant controls the
// DNS of its own names, so an answer at check time says nothing about the
// address kcp's proxy dials later (DNS rebinding), and resolving would
// send the plugin's own lookups wherever a tenant's name leads. What this
// leaves open, a name that resolves to an internal address (say
// metadata.google.internal, or a tenant's name pointing at 127.0.0.1), is
// what Allowed is for: the operator names the domains mounts may lead to.
type URLRule struct {
	// Form is the form every URL must have; the zero value is
	// URLFormHTTPS.
	Form URLForm
	// CheckHosts applies the host rules; without it only the form is
	// checked (levels 1 and 2: the plugin routes nothing).
	CheckHosts bool
	// AllowInternalHosts (--workspace-url-allow-internal-hosts) accepts
	// the internal hosts: for development, and for an operator whose
	// mounts lead to workspaces of the same kcp.
	AllowInternalHosts bool
	// Allowed (--workspace-url-allowed-hosts), when not empty, is where
	// mounts may lead: nowhere else.
	Allowed AllowedHosts
	// ShardHosts are the hosts of kcp's shards, asked at every check (a
	// sharded kcp's shards come and go); nil: none known.
	ShardHosts func() []string
}

// Check returns nil for a routable URL, else why it is not, in a few words
// for a message ("... is not routable: loopback host").
func (r URLRule) Check(rawURL string) error {
	if err := r.Form.check(rawURL); err != nil {
		return err
	}
	u, _ := url.Parse(rawURL)
	if !r.CheckHosts {
		return nil
	}
	host := canonicalHost(u.Hostname())
	addr, isIP := parseIP(host)
	switch {
	case isIP:
	case endsInNumber(host):
		// WHATWG URL parsers, glibc's resolver and curl read 127.1,
		// 2130706433 or 0x7f.1 as IPv4 addresses; Go's parser does not.
		return errors.New("a numeric host that is not an IP address in standard form")
	case strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "":
		// Go's parser takes sub-delimiters (!$&'()*+,;=) in a host: no DNS
		// name has them.
		return errors.New("a host that is neither an IP address nor a DNS name")
	}
	if !r.AllowInternalHosts {
		if why := InternalHost(host); why != "" {
			return fmt.Errorf("%s host", why)
		}
		if r.ShardHosts != nil {
			for _, shardHost := range r.ShardHosts() {
				if canonicalHost(shardHost) == host {
					return errors.New("the host of a kcp shard")
				}
			}
		}
	}
	if !r.Allowed.Empty() && !r.Allowed.allows(host, addr, isIP) {
		return errors.New("host not in --workspace-url-allowed-hosts")
	}
	return nil
}

// InternalHost tells which kind of internal host a canonical host
// (canonicalHost) is, "" for none: "loopback" (127.0.0.0/8, ::1,
// localhost and *.localhost, which RFC 6761 reserves for it, and
// ip6-localhost and ip6-loopback, names of ::1 in every Kubernetes pod),
// "link-local" (169.254.0.0/16 with cloud metadata services, fe80::/10),
// "unspecified" (0.0.0.0 and ::, which reach the local host). IPv4 mapped
// into IPv6 counts as IPv4.
func InternalHost(host string) string {
	if addr, isIP := parseIP(host); isIP {
		switch {
		case addr.IsLoopback():
			return "loopback"
		case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
			return "link-local"
		case addr.IsUnspecified():
			return "unspecified"
		}
		return ""
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "ip6-localhost" || host == "ip6-loopback" {
		return "loopback"
	}
	return ""
}

// canonicalHost is a host as compared: lower case, without a trailing dot,
// an IP address in its standard form (IPv4 mapped into IPv6 as IPv4, no
// zone).
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, isIP := parseIP(host); isIP {
		return addr.String()
	}
	return host
}

// parseIP parses an IP address literal, unmapped and without zone.
func parseIP(host string) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap().WithZone(""), true
}

// endsInNumber tells whether a host's last label is a number (decimal, or
// hexadecimal after 0x), which the WHATWG URL standard reads as an IPv4
// address in some form: no DNS name ends so.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// AllowedHosts are the CIDRs and host suffixes of
// --workspace-url-allowed-hosts: a host is allowed when it is an IP
// address in one of the CIDRs, or a name equal to one of the suffixes or
// under it (on a label boundary: example.com allows example.com and
// a.example.com, not badexample.com). The zero value is empty.
type AllowedHosts struct {
	prefixes []netip.Prefix
	suffixes []string
}

// ParseAllowedHosts parses the entries of --workspace-url-allowed-hosts:
// each a CIDR (10.0.0.0/8, fd00::/8), an IP address (one host), or a DNS
// name, the suffix, written without a leading "*." or ".".
func ParseAllowedHosts(entries []string) (AllowedHosts, error) {
	var allowed AllowedHosts
	var errs []error
	for _, entry := range entries {
		entry = strings.TrimSpace(entry)
		if strings.Contains(entry, "/") {
			prefix, err := netip.ParsePrefix(entry)
			if err != nil {
				errs = append(errs, fmt.Errorf("%q is not a CIDR", entry))
				continue
			}
			if prefix.Addr().Is4In6() && prefix.Bits() >= 96 {
				prefix = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96)
			}
			allowed.prefixes = append(allowed.prefixes, prefix.Masked())
			continue
		}
		if addr, isIP := parseIP(entry); isIP {
			allowed.prefixes = append(allowed.prefixes, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		suffix := strings.TrimSuffix(strings.ToLower(entry), ".")
		switch {
		case entry == "":
			errs = append(errs, errors.New("an empty entry"))
		case strings.HasPrefix(suffix, "*.") || strings.HasPrefix(suffix, "."):
			errs = append(errs, fmt.Errorf("%q: write the suffix without a leading \"*.\" or \".\" (%s allows %s and every name under it)",
				entry, strings.TrimLeft(suffix, "*."), strings.TrimLeft(suffix, "*.")))
		case endsInNumber(suffix) || len(validation.IsDNS1123Subdomain(suffix)) > 0:
			errs = append(errs, fmt.Errorf("%q is neither a CIDR, an IP address nor a DNS name", entry))
		default:
			allowed.suffixes = append(allowed.suffixes, suffix)
		}
	}
	return allowed, errors.Join(errs...)
}

// Empty tells whether nothing was given: then no host is refused for it.
func (a AllowedHosts) Empty() bool { return len(a.prefixes) == 0 && len(a.suffixes) == 0 }

// String lists the entries as they are compared, comma-separated.
func (a AllowedHosts) String() string {
	entries := make([]string, 0, len(a.prefixes)+len(a.suffixes))
	for _, prefix := range a.prefixes {
		entries = append(entries, prefix.String())
	}
	return strings.Join(append(entries, a.suffixes...), ",")
}

// allows tells whether a canonical host is allowed: an address by the
// CIDRs, a name by the suffixes.
func (a AllowedHosts) allows(host string, addr netip.Addr, isIP bool) bool {
	if isIP {
		for _, prefix := range a.prefixes {
			if prefix.Contains(addr) {
				return true
			}
		}
		return false
	}
	for _, suffix := range a.suffixes {
		if host == suffix || strings.HasSuffix(host, "."+suffix) {
			return true
		}
	}
	return false
}
