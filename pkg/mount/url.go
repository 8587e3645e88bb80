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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// URLRule is the one rule for a mount object's status.URL, which may become the Workspace's
// spec.URL with --workspace-url: every URL must have the Form, and with CheckHosts a host neither
// internal unless AllowInternalHosts nor a shard's, and Allowed when that is set. Hosts are never
// resolved: docs/design/pkg-mount.md says why.
type URLRule struct {
	Form               URLForm
	CheckHosts         bool
	AllowInternalHosts bool
	Allowed            AllowedHosts
	ShardHosts         func() []string
}

// Check returns nil for a routable URL, else why not, in a few words.
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
		// WHATWG URL parsers, glibc's resolver and curl read 127.1, 2130706433 or 0x7f.1 as IPv4
		// addresses; Go's parser does not.
		return errors.New("a numeric host that is not an IP address in standard form")
	case strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "":
		// Go's parser takes sub-delimiters (!$&'()*+,;=) in a host.
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

// InternalHost tells which kind of internal host a [canonicalHost] is: "loopback", "link-local",
// "unspecified", or "" for none.
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

// canonicalHost is lower case, without a trailing dot, an IP in standard form.
func canonicalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if addr, isIP := parseIP(host); isIP {
		return addr.String()
	}
	return host
}

func parseIP(host string) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap().WithZone(""), true
}

// endsInNumber tells whether the last label is a number, which WHATWG URL parsers read as IPv4.
func endsInNumber(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// AllowedHosts are the CIDRs and name suffixes of --workspace-url-allowed-hosts.
type AllowedHosts struct {
	prefixes []netip.Prefix
	suffixes []string
}

// ParseAllowedHosts parses CIDRs, IP addresses and DNS name suffixes, written without "*.".
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

// Empty tells whether nothing was given.
func (a AllowedHosts) Empty() bool { return len(a.prefixes) == 0 && len(a.suffixes) == 0 }

func (a AllowedHosts) String() string {
	entries := make([]string, 0, len(a.prefixes)+len(a.suffixes))
	for _, prefix := range a.prefixes {
		entries = append(entries, prefix.String())
	}
	return strings.Join(append(entries, a.suffixes...), ",")
}

func (a AllowedHosts) allows(host string, addr netip.Addr, isIP bool) bool {
	if isIP {
		return slices.ContainsFunc(a.prefixes, func(prefix netip.Prefix) bool { return prefix.Contains(addr) })
	}
	return slices.ContainsFunc(a.suffixes, func(suffix string) bool { return host == suffix || strings.HasSuffix(host, "."+suffix) })
}

// URLForm is the form of mount URL one kcp release line routes.
type URLForm string

// The forms of kcp v0.33 and later (https, a host, no user information, query or fragment) and of
// kcp v0.27 to v0.32 (http or https, a host, no user information).
const (
	URLFormHTTPS  URLForm = "https"
	URLFormLegacy URLForm = "legacy"
)

// ParseURLForm reads a form by its name; "" is [URLFormHTTPS].
func ParseURLForm(name string) (URLForm, error) {
	switch URLForm(name) {
	case "", URLFormHTTPS:
		return URLFormHTTPS, nil
	case URLFormLegacy:
		return URLFormLegacy, nil
	}
	return "", fmt.Errorf("unknown mount URL form %q: want %s or %s", name, URLFormHTTPS, URLFormLegacy)
}

func (f URLForm) String() string {
	if f == "" {
		return string(URLFormHTTPS)
	}
	return string(f)
}

// noHost tells a URL without a host, or with brackets alone for one.
func noHost(u *url.URL) bool { return strings.Trim(u.Hostname(), "[]") == "" }

func (f URLForm) check(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("not a URL")
	}
	if f == URLFormLegacy {
		switch {
		case u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http"):
			return errors.New("not an absolute http or https URL")
		case u.User != nil:
			return errors.New("it carries user information")
		case noHost(u):
			return errors.New("no host")
		}
		return nil
	}
	switch {
	case u.Opaque == "" && u.Scheme == "http":
		return errors.New("it is http, not https")
	case u.Opaque != "" || u.Scheme != "https":
		return errors.New("not an absolute https URL")
	case u.User != nil:
		return errors.New("it carries user information")
	case noHost(u):
		return errors.New("no host")
	case !strings.HasPrefix(rawURL, "https://"):
		return errors.New("its scheme is not written in lower case")
	case u.RawQuery != "" || u.ForceQuery:
		return errors.New("it carries a query")
	case strings.Contains(rawURL, "#"): // url.Parse keeps no trace of an empty fragment
		return errors.New("it carries a fragment")
	}
	return nil
}
