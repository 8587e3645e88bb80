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

package doctor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
)

var now = time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)

// leading is a Lease held by a plugin that published facts.
func leading(facts leaderfacts.Facts) LeaseFacts {
	facts.Identity = "pod-a_1"
	return LeaseFacts{Name: "root/default/workspacemounts", Found: true, Holder: "pod-a_1", Renewed: now.Add(-2 * time.Second),
		Duration: 15 * time.Second, Published: true, Facts: facts}
}

// verdict is the one result of check in Judge(f).
func verdict(t *testing.T, f Facts, check string) Result {
	t.Helper()
	var found []Result
	for _, r := range Judge(f) {
		if r.Check == check {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "one result of %s in %v", check, Judge(f))
	return found[0]
}

func TestJudgeShards(t *testing.T) {
	t.Parallel()
	shard := func(name, gitVersion string, gate bool) ShardFacts {
		return ShardFacts{Name: name, BaseURL: "https://" + name + ":6443", GitVersion: gitVersion, Gate: gate}
	}
	level1, level3 := leading(leaderfacts.Facts{Version: "v0.1.0"}), leading(leaderfacts.Facts{Version: "v0.1.0", WorkspaceCondition: true, WorkspaceURL: true})
	contract := func(value string, workspaceURL bool) LeaseFacts {
		return leading(leaderfacts.Facts{Version: "v0.2.0", WorkspaceCondition: true, WorkspaceURL: workspaceURL, MountURLContract: value})
	}
	for name, tc := range map[string]struct {
		shard  ShardFacts
		lease  LeaseFacts
		check  string
		status Status
		detail string
	}{
		"version":                {shard: shard("root", "v1.31.6+kcp-v0.28.1", false), check: "kcp-version (shard root)", status: OK, detail: "kcp v0.28.1"},
		"version, one shard":     {shard: shard("", "v1.31.6+kcp-v0.28.1", false), check: CheckKCPVersion, status: OK},
		"version unreachable":    {shard: ShardFacts{Name: "b", VersionErr: errors.New("refused")}, check: "kcp-version (shard b)", status: Fail, detail: "refused"},
		"version of no release":  {shard: shard("a", "v1.31.0", false), check: "kcp-version (shard a)", status: Warn},
		"release before the bug": {shard: shard("", "v1.31.6+kcp-v0.28.1", false), check: CheckMountsRelease, status: OK, detail: "older than"},
		"release v0.31.2":        {shard: shard("", "v1.33.0+kcp-v0.31.2", false), check: CheckMountsRelease, status: OK},
		"release v0.31.3":        {shard: shard("", "v1.33.0+kcp-v0.31.3", false), check: CheckMountsRelease, status: Fail, detail: "#4237"},
		"release v0.31.5":        {shard: shard("", "v1.33.0+kcp-v0.31.5", false), check: CheckMountsRelease, status: Fail, detail: "401"},
		"release v0.31.6":        {shard: shard("", "v1.33.0+kcp-v0.31.6", false), check: CheckMountsRelease, status: OK, detail: "--mount-proxy-client-cert-file"},
		"release v0.32.0":        {shard: shard("", "v1.34.0+kcp-v0.32.0", false), check: CheckMountsRelease, status: OK},
		"release v0.32.1":        {shard: shard("", "v1.34.0+kcp-v0.32.1", false), check: CheckMountsRelease, status: Fail},
		"release v0.32.2":        {shard: shard("", "v1.34.0+kcp-v0.32.2", false), check: CheckMountsRelease, status: Fail},
		"release v0.32.3":        {shard: shard("", "v1.36.0+kcp-v0.32.3", false), check: CheckMountsRelease, status: OK},
		"release v0.33.0":        {shard: shard("", "v1.36.0+kcp-v0.33.0", false), check: CheckMountsRelease, status: OK},
		"release unknown":        {shard: ShardFacts{VersionErr: errors.New("x")}, check: CheckMountsRelease, status: Skip},
		"contract, kcp v0.28.1, auto": {shard: shard("", "v1.31.6+kcp-v0.28.1", false), lease: contract("auto", true), check: CheckMountURLContract, status: OK,
			detail: "kcp v0.28.1 routes http and https mount URLs with a host and no user information (the legacy form); --mount-url-contract=auto: levels 1 and 2 take the legacy form; level 3 writes spec.URL in the https form"},
		"contract, kcp v0.32.3, https": {shard: shard("", "v1.36.0+kcp-v0.32.3", false), lease: contract("https", false), check: CheckMountURLContract, status: OK,
			detail: "stricter than kcp: http mounts are MountURLInvalid though kcp routes them"},
		"contract, kcp v0.33.0, auto": {shard: shard("s", "v1.36.0+kcp-v0.33.0", false), lease: contract("auto", false), check: "kcp-mount-url-contract (shard s)", status: OK,
			detail: "kcp v0.33.0 routes only https mount URLs with a host and no user information, query or fragment (the https form); --mount-url-contract=auto: levels 1 and 2 take the https form"},
		"contract, kcp v0.34.0, legacy": {shard: shard("", "v1.37.0+kcp-v0.34.0", false), lease: contract("legacy", true), check: CheckMountURLContract, status: Warn,
			detail: "--mount-url-contract=legacy: levels 1 and 2 take the legacy form; level 3 writes spec.URL in the https form: http mounts"},
		"contract, kcp v0.32.3, legacy": {shard: shard("", "v1.36.0+kcp-v0.32.3", false), lease: contract("legacy", false), check: CheckMountURLContract, status: OK,
			detail: "(the legacy form); --mount-url-contract=legacy: levels 1 and 2 take the legacy form"},
		"contract, a leader before the flag": {shard: shard("", "v1.37.0+kcp-v0.34.0", false), lease: level3, check: CheckMountURLContract, status: OK,
			detail: "(the https form); the plugin's --mount-url-contract is unknown (plugin-lease)"},
		"contract, no leader": {shard: shard("", "v1.31.6+kcp-v0.28.1", false), check: CheckMountURLContract, status: OK, detail: "(the legacy form); the plugin's --mount-url-contract is unknown"},
		"contract, release unknown": {shard: shard("", "v0.0.0-master+$Format:%H$", false), lease: contract("auto", false), check: CheckMountURLContract, status: Skip,
			detail: "with --mount-url-contract=auto the plugin takes the https form"},
		"gate off, level 3":      {shard: shard("", "v1.31.6+kcp-v0.28.1", false), lease: level3, check: CheckGate, status: OK},
		"gate on, level 1":       {shard: shard("", "v1.31.6+kcp-v0.28.1", true), lease: level1, check: CheckGate, status: OK, detail: "level 1"},
		"gate on, level 3":       {shard: shard("r", "v1.31.6+kcp-v0.28.1", true), lease: level3, check: "workspacemounts-gate (shard r)", status: Fail, detail: "--workspace-url"},
		"gate on, level unknown": {shard: shard("", "v1.31.6+kcp-v0.28.1", true), check: CheckGate, status: Warn},
		"gate unknown":           {shard: ShardFacts{GitVersion: "v1.31.6+kcp-v0.28.1", GateErr: errors.New("403")}, lease: level3, check: CheckGate, status: Warn, detail: "403"},
		"gate on, stale level 3": {shard: shard("", "v1.31.6+kcp-v0.28.1", true), check: CheckGate, status: Warn,
			lease: func() LeaseFacts { l := level3; l.Holder = "pod-b_2"; return l }()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := verdict(t, Facts{Now: now, Shards: []ShardFacts{tc.shard}, Lease: tc.lease}, tc.check)
			require.Equal(t, tc.status, r.Status, r.Detail)
			require.Contains(t, r.Detail, tc.detail)
			if r.Status == Fail || r.Status == Warn {
				require.NotEmpty(t, r.Fix, "a %s names its fix", r.Status)
			}
		})
	}
}

func TestJudgeShardsUnlisted(t *testing.T) {
	t.Parallel()
	r := verdict(t, Facts{Now: now, ShardsErr: errors.New("forbidden")}, CheckKCPVersion)
	require.Equal(t, Fail, r.Status)
	require.Contains(t, r.Detail, "forbidden")
}

func TestJudgeLease(t *testing.T) {
	t.Parallel()
	ok := leading(leaderfacts.Facts{Version: "v0.1.0", WorkspaceCondition: true})
	with := func(change func(*LeaseFacts)) LeaseFacts {
		l := ok
		change(&l)
		return l
	}
	for name, tc := range map[string]struct {
		lease  LeaseFacts
		status Status
		detail string
	}{
		"held, published":   {lease: ok, status: OK, detail: "v0.1.0, level 2"},
		"unreadable":        {lease: LeaseFacts{Name: "root/default/x", Err: errors.New("forbidden")}, status: Fail, detail: "forbidden"},
		"absent":            {lease: LeaseFacts{Name: "root/default/x"}, status: Fail, detail: "does not exist"},
		"released":          {lease: with(func(l *LeaseFacts) { l.Holder = "" }), status: Fail, detail: "no holder"},
		"expired":           {lease: with(func(l *LeaseFacts) { l.Renewed = now.Add(-time.Minute) }), status: Fail, detail: "expired 45s ago"},
		"held by cleanup":   {lease: with(func(l *LeaseFacts) { l.Holder = "cleanup_h_1" }), status: Warn, detail: "cleanup"},
		"not published":     {lease: with(func(l *LeaseFacts) { l.Published, l.Facts = false, leaderfacts.Facts{} }), status: Warn, detail: "publishes no version"},
		"a former leader's": {lease: with(func(l *LeaseFacts) { l.Holder = "pod-b_2" }), status: Warn, detail: "former leader's"},
		"unparsable facts":  {lease: with(func(l *LeaseFacts) { l.FactsErr = errors.New("not a bool") }), status: Warn, detail: "not a bool"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := verdict(t, Facts{Now: now, Lease: tc.lease}, CheckLease)
			require.Equal(t, tc.status, r.Status, r.Detail)
			require.Contains(t, r.Detail, tc.detail)
			if r.Status != OK {
				require.NotEmpty(t, r.Fix)
			}
		})
	}
}

func TestJudgeMapping(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		answer Answer
		token  bool
		status Status
		detail string
		fix    string
	}{
		"listed":                {answer: Answer{Code: 200, Kind: "WorkspaceMountList", APIVersion: "workspacemounts.io/v1alpha1"}, status: OK, detail: "WorkspaceMountList"},
		"discovery":             {answer: Answer{Code: 200, Kind: "APIResourceList", APIVersion: "workspacemounts.io/v1alpha1"}, status: OK},
		"refused by the plugin": {answer: Answer{Code: 403, Kind: "Status", Group: "workspacemounts.io", Message: "forbidden"}, status: OK, detail: "403"},
		"refused by kcp":        {answer: Answer{Code: 403, Kind: "Status", Group: "tenancy.kcp.io", Message: "forbidden"}, status: Fail, fix: "--mapping-file"},
		"another list":          {answer: Answer{Code: 200, Kind: "ConfigMapList", APIVersion: "v1"}, status: Fail},
		"unauthorized":          {answer: Answer{Code: 401, Kind: "Status"}, status: Warn, fix: "--token"},
		"unauthorized token":    {answer: Answer{Code: 401, Kind: "Status"}, token: true, status: Warn, fix: "TokenReview"},
		"not mapped":            {answer: Answer{Code: 404, Body: "404 page not found"}, status: Fail, detail: "maps no /services/workspacemounts/", fix: "additionalPathMappings"},
		"kcp's own router": {answer: Answer{Code: 403, Kind: "Status", Message: `forbidden: User "t" cannot get path "/services/workspacemounts/x": Path not resolved to a valid virtual workspace`},
			status: Fail, detail: "403", fix: "additionalPathMappings"},
		"backend down": {answer: Answer{Code: 502}, status: Fail, detail: "does not reach the mapping's backend"},
		"no answer":    {answer: Answer{Err: errors.New("connection refused")}, status: Fail, detail: "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := verdict(t, Facts{Now: now, FrontProxy: &FrontProxyFacts{URL: "https://fp", Token: tc.token, Mapping: tc.answer}}, CheckMapping)
			require.Equal(t, tc.status, r.Status, r.Detail)
			require.Contains(t, r.Detail, tc.detail)
			require.Contains(t, r.Fix, tc.fix)
		})
	}
	require.Equal(t, Skip, verdict(t, Facts{Now: now}, CheckMapping).Status)
}

func TestJudgeIdentityHeaders(t *testing.T) {
	t.Parallel()
	trusting := leading(leaderfacts.Facts{Version: "v0.1.0", TrustsRequestHeaders: true})
	tokensOnly := leading(leaderfacts.Facts{Version: "v0.1.0"})
	old, fixed := "v1.31.6+kcp-v0.28.1", "v1.36.0+kcp-v0.32.3"
	for name, tc := range map[string]struct {
		fp     FrontProxyFacts
		lease  LeaseFacts
		status Status
		detail string
		fix    string
	}{
		"strips by version":               {fp: FrontProxyFacts{GitVersion: fixed}, lease: trusting, status: OK, detail: "v0.32.3"},
		"v0.32.1 strips":                  {fp: FrontProxyFacts{GitVersion: "v1.34.0+kcp-v0.32.1"}, lease: trusting, status: OK},
		"v0.32.0 does not":                {fp: FrontProxyFacts{GitVersion: "v1.34.0+kcp-v0.32.0"}, lease: trusting, status: Fail},
		"old, trusting":                   {fp: FrontProxyFacts{GitVersion: old}, lease: trusting, status: Fail, detail: "GHSA-c8w2-fgvx-vhv4", fix: "v0.32.1"},
		"old, tokens only":                {fp: FrontProxyFacts{GitVersion: old}, lease: tokensOnly, status: OK, detail: "keep it so"},
		"old, plugin unknown":             {fp: FrontProxyFacts{GitVersion: old}, status: Warn, fix: "--requestheader-client-ca-file"},
		"believed the probe, trusting":    {fp: FrontProxyFacts{GitVersion: fixed, ProbeBelieved: true}, lease: trusting, status: Fail, detail: "believed the X-Remote-User or X-Remote-Group"},
		"believed the probe, tokens only": {fp: FrontProxyFacts{ProbeBelieved: true, VersionErr: errors.New("404")}, lease: tokensOnly, status: OK},
		"unknown release":                 {fp: FrontProxyFacts{VersionErr: errors.New("GET /version answered 404")}, lease: trusting, status: Warn, detail: "404"},
		"no kcp release in /version":      {fp: FrontProxyFacts{GitVersion: "v1.31.0"}, lease: tokensOnly, status: Warn},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fp := tc.fp
			r := verdict(t, Facts{Now: now, Lease: tc.lease, FrontProxy: &fp}, CheckIdentityHeaders)
			require.Equal(t, tc.status, r.Status, r.Detail)
			require.Contains(t, r.Detail, tc.detail)
			require.Contains(t, r.Fix, tc.fix)
		})
	}
	require.Equal(t, Skip, verdict(t, Facts{Now: now}, CheckIdentityHeaders).Status)
}

func TestJudgeServingCertificate(t *testing.T) {
	t.Parallel()
	cert := func(notBefore, notAfter time.Time) *CertificateFacts {
		return &CertificateFacts{URL: "https://vw:6443", Subject: "CN=workspacemounts", NotBefore: notBefore, NotAfter: notAfter}
	}
	day := 24 * time.Hour
	for name, tc := range map[string]struct {
		cert   *CertificateFacts
		status Status
		detail string
	}{
		"none":          {status: Skip},
		"valid":         {cert: cert(now.Add(-day), now.Add(90*day)), status: OK, detail: "90 days"},
		"expiring":      {cert: cert(now.Add(-day), now.Add(29*day)), status: Warn, detail: "expiring in 696h"},
		"expired":       {cert: cert(now.Add(-90*day), now.Add(-time.Hour)), status: Fail, detail: "expired 1h0m0s ago"},
		"not yet valid": {cert: cert(now.Add(time.Hour), now.Add(90*day)), status: Fail, detail: "not valid before"},
		"no handshake":  {cert: &CertificateFacts{URL: "https://vw:6443", Err: errors.New("connection refused")}, status: Fail, detail: "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := verdict(t, Facts{Now: now, ServingCertificate: tc.cert}, CheckServingCertificate)
			require.Equal(t, tc.status, r.Status, r.Detail)
			require.Contains(t, r.Detail, tc.detail)
		})
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	require.Zero(t, Failures([]Result{{Status: OK}, {Status: Warn}, {Status: Skip}}))
	require.Equal(t, 2, Failures([]Result{{Status: Fail}, {Status: OK}, {Status: Fail}}))
}

func TestPrint(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Check: CheckKCPVersion, Status: OK, Detail: "kcp v0.28.1"},
		{Check: CheckMapping, Status: Fail, Detail: "GET x: 404\n(not the plugin's)", Fix: "map it"},
	}
	var table strings.Builder
	require.NoError(t, Print(&table, results, "table"))
	require.Equal(t, ""+
		"CHECK                STATUS  DETAIL / FIX\n"+
		"kcp-version          OK      kcp v0.28.1\n"+
		"front-proxy-mapping  FAIL    GET x: 404 (not the plugin's)\n"+
		"                             fix: map it\n", table.String())
	var out strings.Builder
	require.NoError(t, Print(&out, results, "json"))
	var parsed []Result
	require.NoError(t, json.Unmarshal([]byte(out.String()), &parsed))
	require.Equal(t, results, parsed)
	require.ErrorContains(t, Print(&out, results, "yaml"), "--output must be table or json")
}
