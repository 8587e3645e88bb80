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
	"testing"

	"github.com/stretchr/testify/require"
)

// TestURLFormHTTPS: every row of kcp's TestWorkspaceSpecUpdater
// (kcp-dev/kcp pkg/reconciler/tenancy/workspacemounts/
// workspacemounts_reconcile_updater_test.go @3f4358ca), then the edges its
// rows leave open, in both forms.
func TestURLFormHTTPS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		url    string
		https  string // why the https form refuses it; "": routable
		legacy string // why the legacy form does
	}{
		// kcp's rows.
		{"kcp: accepts an https URL", "https://new.example.com/clusters/root:dest", "", ""},
		{"kcp: rejects http", "http://attacker.example.com", "it is http, not https", ""},
		{"kcp: rejects user information", "https://user:token@attacker.example.com", "it carries user information", "it carries user information"},
		{"kcp: rejects a query", "https://attacker.example.com/?x=y", "it carries a query", ""},
		{"kcp: rejects a bare host", "attacker.example.com", "not an absolute https URL", "not an absolute http or https URL"},
		{"kcp: rejects the empty URL", "", "not an absolute https URL", "not an absolute http or https URL"},
		// More.
		{"an empty query", "https://h.example.com/?", "it carries a query", ""},
		{"an empty query, no path", "https://h.example.com?", "it carries a query", ""},
		{"a query without a path", "https://h.example.com?x=y", "it carries a query", ""},
		{"a fragment", "https://h.example.com/#top", "it carries a fragment", ""},
		{"an empty fragment", "https://h#", "it carries a fragment", ""},
		{"an empty query and fragment", "https://h/?#", "it carries a query", ""},
		{"an escaped ? is a path", "https://h.example.com/a%3Fb", "", ""},
		{"an escaped # is a path", "https://h.example.com/a%23b", "", ""},
		{"upper-case scheme", "HTTPS://h.example.com/", "its scheme is not written in lower case", ""},
		{"mixed-case scheme", "Https://h.example.com/", "its scheme is not written in lower case", ""},
		{"upper-case http", "HTTP://h.example.com/", "it is http, not https", ""},
		{"user name alone", "https://user@h.example.com/", "it carries user information", "it carries user information"},
		{"an empty user", "https://@h.example.com/", "it carries user information", "it carries user information"},
		{"no host", "https:///clusters/a", "no host", "no host"},
		{"a port and no host", "https://:443/", "no host", "no host"},
		{"opaque", "https:h.example.com", "not an absolute https URL", "not an absolute http or https URL"},
		{"one slash", "https:/h.example.com", "no host", "no host"},
		{"a relative URL", "//h.example.com/", "not an absolute https URL", "not an absolute http or https URL"},
		{"another scheme", "wss://h.example.com/", "not an absolute https URL", "not an absolute http or https URL"},
		{"not a URL", "https://h.example.com:x/", "not a URL", "not a URL"},
		{"a port", "https://h.example.com:8443/clusters/a", "", ""},
		{"port 443", "https://h.example.com:443", "", ""},
		{"a trailing dot", "https://h.example.com./", "", ""},
		{"IPv6", "https://[2001:db8::1]/", "", ""},
		{"IPv6 with a port", "https://[2001:db8::1]:6443/clusters/a", "", ""},
		{"IPv6 with a zone", "https://[fe80::1%25eth0]/", "", ""},
		{"IPv6 unbracketed", "https://2001:db8::1/", "not a URL", "not a URL"},
		{"IPv4", "https://192.0.2.1:6443", "", ""},
		{"ip6-localhost: the form says nothing of hosts", "https://ip6-localhost:443/", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for form, want := range map[URLForm]string{URLFormHTTPS: tc.https, "": tc.https, URLFormLegacy: tc.legacy} {
				err := URLRule{Form: form}.Check(tc.url)
				if want == "" {
					require.NoError(t, err, "form %q", form)
					continue
				}
				require.EqualError(t, err, want, "form %q", form)
			}
		})
	}
}

func TestParseURLForm(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]URLForm{"": URLFormHTTPS, "https": URLFormHTTPS, "legacy": URLFormLegacy} {
		form, err := ParseURLForm(name)
		require.NoError(t, err)
		require.Equal(t, want, form)
		require.Equal(t, want.String(), form.String())
	}
	_, err := ParseURLForm("http")
	require.EqualError(t, err, `unknown mount URL form "http": want https or legacy`)
	require.Equal(t, "https", URLForm("").String())
}
