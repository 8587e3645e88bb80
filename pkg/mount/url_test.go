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
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func shardHosts() []string { return []string{"kcp.example.com", "10.0.0.7", "fd00::7"} }

func mustAllowed(t testing.TB, entries ...string) AllowedHosts {
	t.Helper()
	allowed, err := ParseAllowedHosts(entries)
	require.NoError(t, err)
	return allowed
}

// TestURLRuleCheck: every row of the rule, with the reason it gives.
func TestURLRuleCheck(t *testing.T) {
	t.Parallel()
	hosts := URLRule{CheckHosts: true, ShardHosts: shardHosts}
	internal := URLRule{CheckHosts: true, AllowInternalHosts: true, ShardHosts: shardHosts}
	narrowed := URLRule{CheckHosts: true, ShardHosts: shardHosts, Allowed: mustAllowed(t, "mounts.example.org", "192.0.2.0/24", "2001:db8::/32")}
	formOnly := URLRule{ShardHosts: shardHosts}
	legacy := URLRule{Form: URLFormLegacy, CheckHosts: true, ShardHosts: shardHosts}
	for _, tc := range []struct {
		name string
		rule URLRule
		url  string
		why  string // "": routable
	}{
		{"https with a host", hosts, "https://proxy.example.org/clusters/a", ""},
		{"http with a port, legacy", legacy, "http://proxy.example.org:8080", ""},
		{"http, https form", hosts, "http://proxy.example.org:8080", "it is http, not https"},
		{"public IPv4", hosts, "https://198.51.100.4/", ""},
		{"public IPv6", hosts, "https://[2001:db8::1]:6443/", ""},
		{"private addresses are not internal", hosts, "https://10.1.2.3/", ""},
		{"not a URL", hosts, "https://exa mple.com:x/", "not a URL"},
		{"a relative URL", hosts, "/clusters/a", "not an absolute https URL"},
		{"file", hosts, "file:///etc/passwd", "not an absolute https URL"},
		{"opaque", hosts, "https:proxy.example.org", "not an absolute https URL"},
		{"upper-case scheme Go lowers, legacy", legacy, "HTTPS://proxy.example.org/", ""},
		{"upper-case scheme, https form", hosts, "HTTPS://proxy.example.org/", "its scheme is not written in lower case"},
		{"legacy: a query and a fragment", legacy, "https://proxy.example.org/?a=b#c", ""},
		{"legacy: a loopback host still refused", legacy, "http://[::1]/", "loopback host"},
		{"legacy: not http or https", legacy, "ftp://proxy.example.org/", "not an absolute http or https URL"},
		{"user information", hosts, "https://admin:secret@proxy.example.org/", "it carries user information"},
		{"user name alone", formOnly, "https://admin@proxy.example.org/", "it carries user information"},
		{"no host", hosts, "https:///clusters/a", "no host"},
		{"a port and no host", formOnly, "https://:443/", "no host"},
		{"loopback IPv4", hosts, "https://127.0.0.1:6443/clusters/root", "loopback host"},
		{"loopback elsewhere in 127/8", hosts, "https://127.45.6.7/", "loopback host"},
		{"loopback IPv6", hosts, "https://[::1]:6443/", "loopback host"},
		{"loopback mapped into IPv6", hosts, "https://[::ffff:127.0.0.1]/", "loopback host"},
		{"localhost", hosts, "https://localhost:6443/", "loopback host"},
		{"localhost upper case, trailing dot", hosts, "https://LocalHost./", "loopback host"},
		{"a name under localhost", hosts, "https://kcp.localhost/", "loopback host"},
		{"escaped localhost: Go takes no escape in a name", hosts, "https://local%68ost/", "not a URL"},
		{"localhost as a label elsewhere is a name", hosts, "https://localhost.example.org/", ""},
		{"metadata service", hosts, "https://169.254.169.254/latest/meta-data/", "link-local host"},
		{"metadata service over http, legacy", legacy, "http://169.254.169.254/latest/meta-data/", "link-local host"},
		{"link-local IPv6 with a zone", hosts, "https://[fe80::1%25eth0]/", "link-local host"},
		{"link-local mapped into IPv6", hosts, "https://[::ffff:169.254.169.254]/", "link-local host"},
		{"ip6-localhost", hosts, "https://ip6-localhost:443/", "loopback host"},
		{"ip6-loopback, upper case, trailing dot", hosts, "https://IP6-Loopback./clusters/a", "loopback host"},
		{"ip6-localhost, legacy", legacy, "http://ip6-localhost/", "loopback host"},
		{"a name under ip6-localhost is a name", hosts, "https://a.ip6-localhost.example.org/", ""},
		{"unspecified IPv4", hosts, "https://0.0.0.0:6443/", "unspecified host"},
		{"unspecified IPv6", hosts, "https://[::]/", "unspecified host"},
		{"a shard's name", hosts, "https://kcp.example.com/clusters/x", "the host of a kcp shard"},
		{"a shard's name on another port, other case", hosts, "https://KCP.Example.COM.:8443/", "the host of a kcp shard"},
		{"a shard's address", hosts, "https://10.0.0.7:6443/", "the host of a kcp shard"},
		{"a shard's IPv6 address written long", hosts, "https://[fd00:0:0:0:0:0:0:7]/", "the host of a kcp shard"},
		{"a name under a shard's name is another host", hosts, "https://mount.kcp.example.com/", ""},
		{"short IPv4 form", hosts, "https://127.1/", "a numeric host that is not an IP address in standard form"},
		{"decimal IPv4 form", hosts, "https://2130706433/", "a numeric host that is not an IP address in standard form"},
		{"hexadecimal IPv4 form", hosts, "https://0x7f.0.0.1/", "a numeric host that is not an IP address in standard form"},
		{"sub-delimiters in the host", hosts, "https://evil.example!$'*.mounts.example.org/", "a host that is neither an IP address nor a DNS name"},
		{"internal allowed: loopback", internal, "https://127.0.0.1:6443/clusters/root", ""},
		{"internal allowed: a shard", internal, "https://kcp.example.com/clusters/x", ""},
		{"internal allowed: still the form", internal, "https://u@127.0.0.1/", "it carries user information"},
		{"allowed: the suffix itself", narrowed, "https://mounts.example.org/", ""},
		{"allowed: under the suffix", narrowed, "https://a.b.mounts.example.org:443/x", ""},
		{"allowed: not on a label boundary", narrowed, "https://badmounts.example.org/", "host not in --workspace-url-allowed-hosts"},
		{"allowed: another name", narrowed, "https://proxy.example.org/", "host not in --workspace-url-allowed-hosts"},
		{"allowed: an address in a CIDR", narrowed, "https://192.0.2.55/", ""},
		{"allowed: an IPv6 address in a CIDR", narrowed, "https://[2001:db8::9]/", ""},
		{"allowed: an address out of the CIDRs", narrowed, "https://198.51.100.4/", "host not in --workspace-url-allowed-hosts"},
		{"allowed: a name is not matched by CIDRs", narrowed, "https://192.0.2.55.nip.io/", "host not in --workspace-url-allowed-hosts"},
		{"allowed: internal refused first", narrowed, "https://localhost.mounts.example.org.localhost/", "loopback host"},
		{"form only: loopback is routable", formOnly, "https://127.0.0.1/", ""},
		{"form only: a shard is routable", formOnly, "https://kcp.example.com/", ""},
		{"form only: numeric forms are not judged", formOnly, "https://127.1/", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.rule.Check(tc.url)
			if tc.why == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.why)
		})
	}
}

// TestURLRuleShardHostsAsked: the shards are asked at every check, as a
// sharded kcp's come and go.
func TestURLRuleShardHostsAsked(t *testing.T) {
	t.Parallel()
	var shards []string
	rule := URLRule{CheckHosts: true, ShardHosts: func() []string { return shards }}
	require.NoError(t, rule.Check("https://shard-2.example.com/"))
	shards = []string{"shard-2.example.com"}
	require.EqualError(t, rule.Check("https://shard-2.example.com/"), "the host of a kcp shard")
}

func TestParseAllowedHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		entries []string
		want    string // String(); "" with err
		err     string
	}{
		{entries: nil, want: ""},
		{entries: []string{"example.com"}, want: "example.com"},
		{entries: []string{" Example.COM. ", "10.0.0.0/8"}, want: "10.0.0.0/8,example.com"},
		{entries: []string{"10.1.2.3/8"}, want: "10.0.0.0/8"},
		{entries: []string{"192.0.2.4"}, want: "192.0.2.4/32"},
		{entries: []string{"2001:db8::/32", "2001:db8::1"}, want: "2001:db8::/32,2001:db8::1/128"},
		{entries: []string{"::ffff:10.0.0.0/104"}, want: "10.0.0.0/8"},
		{entries: []string{"*.example.com"}, err: `"*.example.com": write the suffix without a leading "*." or "." (example.com allows example.com and every name under it)`},
		{entries: []string{".example.com"}, err: `".example.com": write the suffix without a leading "*." or "." (example.com allows example.com and every name under it)`},
		{entries: []string{"10.0.0.0/33"}, err: `"10.0.0.0/33" is not a CIDR`},
		{entries: []string{"10.0.0"}, err: `"10.0.0" is neither a CIDR, an IP address nor a DNS name`},
		{entries: []string{"exa_mple.com"}, err: `"exa_mple.com" is neither a CIDR, an IP address nor a DNS name`},
		{entries: []string{"https://example.com"}, err: `"https://example.com" is not a CIDR`},
		{entries: []string{""}, err: "an empty entry"},
		{entries: []string{"a..b"}, err: `"a..b" is neither a CIDR, an IP address nor a DNS name`},
	} {
		allowed, err := ParseAllowedHosts(tc.entries)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, "%q", tc.entries)
			continue
		}
		require.NoError(t, err, "%q", tc.entries)
		require.Equal(t, tc.want, allowed.String())
		require.Equal(t, tc.want == "", allowed.Empty())
	}
}

// FuzzURLRuleCheck: whatever a tenant writes, the rule's answers hold
// together: a URL routable with the host rules is routable by form, a
// routable one parses to an http(s) URL with a host and no user, its host
// is never internal or a shard's unless allowed, and is in the allowed
// ones when they are set.
func FuzzURLRuleCheck(f *testing.F) {
	for _, seed := range []string{
		"https://proxy.example.org/clusters/a", "http://127.0.0.1:6443", "https://[::ffff:169.254.169.254]/", "https://LOCALHOST./",
		"https://local%68ost/", "https://[fe80::1%25eth0]/", "https://127.1/", "https://0x7f.1/", "https://kcp.example.com:8443/",
		"https://a.mounts.example.org/", "https://192.0.2.5/", "https://u:p@x/", "https://:443/", "file:///etc/passwd", "mailto:a@b",
		"https://evil%2F.mounts.example.org/", "https://[::]/", "https://0.0.0.0/", "", "\x00",
	} {
		f.Add(seed)
	}
	allowed := mustAllowed(f, "mounts.example.org", "192.0.2.0/24", "2001:db8::/32")
	rules := []URLRule{
		{CheckHosts: true, ShardHosts: shardHosts},
		{CheckHosts: true, ShardHosts: shardHosts, Allowed: allowed},
	}
	f.Fuzz(func(t *testing.T, rawURL string) {
		formErr := URLRule{}.Check(rawURL)
		if formErr == nil {
			u, err := url.Parse(rawURL)
			if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" {
				t.Fatalf("%q routable by form: %v %+v", rawURL, err, u)
			}
		}
		legacyErr := URLRule{Form: URLFormLegacy}.Check(rawURL)
		if legacyErr == nil {
			u, err := url.Parse(rawURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
				t.Fatalf("%q routable by the legacy form: %v %+v", rawURL, err, u)
			}
		}
		// The https form takes nothing the legacy one refuses.
		if formErr == nil && legacyErr != nil {
			t.Fatalf("%q routable by the https form, not the legacy one: %v", rawURL, legacyErr)
		}
		// Allowing internal hosts takes no other rule away.
		if err := (URLRule{CheckHosts: true, AllowInternalHosts: true, ShardHosts: shardHosts}).Check(rawURL); err == nil && formErr != nil {
			t.Fatalf("%q routable with internal hosts allowed, not by form: %v", rawURL, formErr)
		}
		for _, rule := range rules {
			err := rule.Check(rawURL)
			if err == nil && formErr != nil {
				t.Fatalf("%q routable with hosts checked, not by form: %v", rawURL, formErr)
			}
			if err != nil {
				if err.Error() == "" || strings.ContainsAny(err.Error(), "\n\r") {
					t.Fatalf("reason %q", err)
				}
				continue
			}
			u, _ := url.Parse(rawURL)
			host := canonicalHost(u.Hostname())
			if why := InternalHost(host); why != "" {
				t.Fatalf("%q routable, its host %q %s", rawURL, host, why)
			}
			for _, shard := range shardHosts() {
				if canonicalHost(shard) == host {
					t.Fatalf("%q routable, its host %q a shard's", rawURL, host)
				}
			}
			addr, isIP := parseIP(host)
			if isIP && (addr.IsLoopback() || addr.IsLinkLocalUnicast() || addr.IsUnspecified()) {
				t.Fatalf("%q routable at %s", rawURL, addr)
			}
			if !rule.Allowed.Empty() && !allowedByHand(host, addr, isIP) {
				t.Fatalf("%q routable, its host %q not allowed", rawURL, host)
			}
		}
	})
}

// allowedByHand is the fuzz target's allowed list, written out.
func allowedByHand(host string, addr netip.Addr, isIP bool) bool {
	if isIP {
		return netip.MustParsePrefix("192.0.2.0/24").Contains(addr) || netip.MustParsePrefix("2001:db8::/32").Contains(addr)
	}
	return host == "mounts.example.org" || strings.HasSuffix(host, ".mounts.example.org")
}

// FuzzParseAllowedHosts: an entry list parses or says why; what parses
// allows its own entries, and parses again to the same.
func FuzzParseAllowedHosts(f *testing.F) {
	for _, seed := range []string{"example.com", "10.0.0.0/8", "::ffff:10.0.0.0/104", "*.example.com", "10.0.0", "192.0.2.1", "fd00::/8", "", "a..b", "Ex.COM."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		allowed, err := ParseAllowedHosts([]string{entry})
		if err != nil {
			if !allowed.Empty() {
				t.Fatalf("%q: an error and entries %s", entry, allowed)
			}
			return
		}
		again, err := ParseAllowedHosts(strings.Split(allowed.String(), ","))
		if err != nil || again.String() != allowed.String() {
			t.Fatalf("%q parsed to %s, which parses to %s (%v)", entry, allowed, again, err)
		}
		for _, prefix := range allowed.prefixes {
			if !allowed.allows(prefix.Addr().String(), prefix.Addr(), true) {
				t.Fatalf("%q does not allow its own address %s", entry, prefix.Addr())
			}
		}
		for _, suffix := range allowed.suffixes {
			if !allowed.allows(suffix, netip.Addr{}, false) || !allowed.allows("a."+suffix, netip.Addr{}, false) || allowed.allows("a"+suffix, netip.Addr{}, false) {
				t.Fatalf("%q: suffix %s not on a label boundary", entry, suffix)
			}
		}
	})
}
