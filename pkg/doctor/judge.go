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
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/workspacemounts/workspacemounts/pkg/kcprelease"
	"github.com/workspacemounts/workspacemounts/pkg/leaderfacts"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// The checks, in the order of the table; a shard's carry its name after theirs.
const (
	CheckKCPVersion         = "kcp-version"
	CheckMountsRelease      = "kcp-mounts-release"
	CheckMountURLContract   = "kcp-mount-url-contract"
	CheckGate               = "workspacemounts-gate"
	CheckLease              = "plugin-lease"
	CheckMapping            = "front-proxy-mapping"
	CheckIdentityHeaders    = "front-proxy-identity-headers"
	CheckServingCertificate = "serving-certificate"
)

// CertificateWarning is how long before its expiry the serving certificate is a WARN.
const CertificateWarning = 30 * 24 * time.Hour

// StripsIdentityHeaders is the first kcp-front-proxy that deletes client-sent X-Remote-* headers
// (GHSA-c8w2-fgvx-vhv4).
var StripsIdentityHeaders = version.MustParseSemantic("v0.32.1")

// verdict is r with its status, detail and fix, if any.
func (r Result) verdict(status Status, detail string, fix ...string) Result {
	r.Status, r.Detail, r.Fix = status, detail, strings.Join(fix, "")
	return r
}

// Judge gives the verdict of every check on f.
func Judge(f Facts) []Result {
	leader, leaderKnown := currentLeaderFacts(f.Lease)
	var results []Result
	if f.ShardsErr != nil {
		results = append(results, Result{Check: CheckKCPVersion, Status: Fail,
			Detail: "cannot list kcp's shards: " + f.ShardsErr.Error(),
			Fix:    "check --kubeconfig (or --root-kubeconfig and --shards-kubeconfig): its user must read the Shards in root and every shard's /version and /metrics"})
	}
	for _, shard := range f.Shards {
		results = append(results, judgeVersion(shard), judgeMountsRelease(shard), judgeMountURLContract(shard, leader, leaderKnown),
			judgeGate(shard, leader, leaderKnown))
	}
	return append(results, judgeLease(f.Lease, f.Now), judgeMapping(f.FrontProxy), judgeIdentityHeaders(f.FrontProxy, leader, leaderKnown),
		judgeServingCertificate(f.ServingCertificate, f.Now))
}

func shardCheck(check string, shard ShardFacts) string {
	if shard.Name == "" {
		return check
	}
	return check + " (shard " + shard.Name + ")"
}

func currentLeaderFacts(lease LeaseFacts) (leaderfacts.Facts, bool) {
	if !lease.Found || lease.Err != nil || !lease.Published || lease.FactsErr != nil || lease.Facts.Identity != lease.Holder {
		return leaderfacts.Facts{}, false
	}
	return lease.Facts, true
}

func judgeVersion(shard ShardFacts) Result {
	r := Result{Check: shardCheck(CheckKCPVersion, shard)}
	if shard.VersionErr != nil {
		return r.verdict(Fail, fmt.Sprintf("GET %s/version: %v", shard.BaseURL, shard.VersionErr),
			"the shard must be reachable with the kubeconfig's credentials (for a sharded kcp, --shards-kubeconfig's, at the Shard's spec.baseURL)")
	}
	release, err := kcprelease.Parse(shard.GitVersion)
	if err != nil {
		return r.verdict(Warn, "cannot tell kcp's release: "+err.Error(),
			"run a released kcp (docs/compatibility.md lists those tested)")
	}
	return r.verdict(OK, fmt.Sprintf("kcp v%s (%s) at %s", release, shard.GitVersion, shard.BaseURL))
}

// brokenMounts are the [first, fixed) kcp releases whose mounts answer 401 through the front-proxy
// (kcp-dev/kcp#4237, #4238).
var brokenMounts = []struct{ first, fixed *version.Version }{
	{version.MustParseGeneric("v0.31.3"), version.MustParseGeneric("v0.31.6")},
	{version.MustParseGeneric("v0.32.1"), version.MustParseGeneric("v0.32.3")},
}

const mountProxyFlags = "--mount-proxy-client-cert-file and --mount-proxy-client-key-file (a client certificate signed by the front-proxy's request-header CA)"

func judgeMountsRelease(shard ShardFacts) Result {
	r := Result{Check: shardCheck(CheckMountsRelease, shard)}
	release, err := kcprelease.Parse(shard.GitVersion)
	if shard.VersionErr != nil || err != nil {
		return r.verdict(Skip, "kcp's release is unknown ("+CheckKCPVersion+")")
	}
	for _, broken := range brokenMounts {
		if release.AtLeast(broken.first) && release.LessThan(broken.fixed) {
			return r.verdict(Fail, fmt.Sprintf("kcp v%s answers 401 for a mounted workspace reached through the front-proxy (kcp-dev/kcp#4237, #4238)", release),
				fmt.Sprintf("upgrade the shards to v%s (or a later release) and give each shard %s", broken.fixed, mountProxyFlags))
		}
	}
	if release.AtLeast(brokenMounts[0].first) {
		return r.verdict(OK, fmt.Sprintf("kcp v%s is not one of v0.31.3-v0.31.5, v0.32.1-v0.32.2 (kcp-dev/kcp#4237, #4238); its mounts work through the front-proxy once the shards have %s", release, mountProxyFlags))
	}
	return r.verdict(OK, fmt.Sprintf("kcp v%s is older than the releases whose mounts answer 401 through the front-proxy (v0.31.3-v0.31.5, v0.32.1-v0.32.2)", release))
}

func contractOf(form mount.URLForm) string {
	if form == mount.URLFormLegacy {
		return "routes http and https mount URLs with a host and no user information (the legacy form)"
	}
	return "routes only https mount URLs with a host and no user information, query or fragment (the https form)"
}

// judgeMountURLContract compares the form kcp routes with the plugin's --mount-url-contract, which
// levels 1 and 2 follow: WARN when the plugin is laxer.
func judgeMountURLContract(shard ShardFacts, leader leaderfacts.Facts, leaderKnown bool) Result {
	r := Result{Check: shardCheck(CheckMountURLContract, shard)}
	release, err := kcprelease.Parse(shard.GitVersion)
	if shard.VersionErr != nil || err != nil {
		return r.verdict(Skip, "kcp's release is unknown ("+CheckKCPVersion+"); with --mount-url-contract=auto the plugin takes the https form")
	}
	kcpForm := release.MountURLForm()
	kcp := fmt.Sprintf("kcp v%s %s", release, contractOf(kcpForm))
	if !leaderKnown || leader.MountURLContract == "" {
		return r.verdict(OK, kcp+"; the plugin's --mount-url-contract is unknown ("+CheckLease+")")
	}
	form := kcpForm
	if leader.MountURLContract != "auto" {
		form = mount.URLForm(leader.MountURLContract)
	}
	plugin := fmt.Sprintf("--mount-url-contract=%s: levels 1 and 2 take the %s form", leader.MountURLContract, form)
	if leader.WorkspaceURL {
		plugin += "; level 3 writes spec.URL in the https form"
	}
	switch {
	case form == mount.URLFormLegacy && kcpForm == mount.URLFormHTTPS:
		return r.verdict(Warn, kcp+"; "+plugin+": http mounts, and those with a query or fragment, are called routable though kcp refuses them",
			"run the plugin with --mount-url-contract=auto (or https)")
	case form == mount.URLFormHTTPS && kcpForm == mount.URLFormLegacy:
		return r.verdict(OK, kcp+"; "+plugin+", stricter than kcp: http mounts are MountURLInvalid though kcp routes them")
	}
	return r.verdict(OK, kcp+"; "+plugin)
}

func judgeGate(shard ShardFacts, leader leaderfacts.Facts, leaderKnown bool) Result {
	r := Result{Check: shardCheck(CheckGate, shard)}
	if shard.GateErr != nil {
		return r.verdict(Warn, "cannot tell whether the feature gate WorkspaceMounts is on: "+shard.GateErr.Error(),
			"let the kubeconfig's user GET /metrics on every shard (system:masters, or a ClusterRole with nonResourceURLs [/metrics], verbs [get])")
	}
	if !shard.Gate {
		return r.verdict(OK, "the feature gate WorkspaceMounts is off: kcp's in-tree mounts controller does not run; the plugin may write spec.URL (level 3)")
	}
	switch {
	case !leaderKnown:
		return r.verdict(Warn, "the feature gate WorkspaceMounts is on (kcp's in-tree mounts controller runs, writing spec.URL) and the plugin's level is unknown ("+CheckLease+")",
			"do not run the plugin with --workspace-url here: it refuses to start beside the gate")
	case leader.WorkspaceURL:
		return r.verdict(Fail, "the feature gate WorkspaceMounts is on (kcp's in-tree mounts controller runs and writes spec.URL) while the plugin runs with --workspace-url (level 3): two writers of spec.URL; the plugin refuses to start on this shard",
			"turn the gate off on the shard (--feature-gates=WorkspaceMounts=false), or drop --workspace-url from the plugin (--workspace-condition works beside the gate)")
	}
	return r.verdict(OK, fmt.Sprintf("the feature gate WorkspaceMounts is on (kcp's in-tree mounts controller runs); the plugin is at level %d, without --workspace-url, and writes beside it", leader.Level()))
}

func judgeLease(lease LeaseFacts, now time.Time) Result {
	r := Result{Check: CheckLease}
	where := "the Lease " + lease.Name
	switch {
	case lease.Err != nil:
		return r.verdict(Fail, "cannot read "+where+": "+lease.Err.Error(),
			"pass doctor the plugin's --leader-election-cluster, --leader-election-namespace and --leader-election-id; the kubeconfig's user must get leases there")
	case !lease.Found:
		return r.verdict(Fail, where+" does not exist: no plugin has led there",
			"start the plugin (with --run-controller and --leader-elect, the defaults), or pass doctor the plugin's --leader-election-cluster, --leader-election-namespace and --leader-election-id")
	case lease.Holder == "":
		return r.verdict(Fail, where+" has no holder: the last leader released it, and no plugin leads",
			"start the plugin; if it runs, see its log (kubectl logs deployment/workspacemounts)")
	case lease.Renewed.Add(lease.Duration).Before(now):
		return r.verdict(Fail, fmt.Sprintf("%s expired %s ago (held by %s, last renewed %s): no plugin leads", where, now.Sub(lease.Renewed.Add(lease.Duration)).Round(time.Second), lease.Holder, lease.Renewed.UTC().Format(time.RFC3339)),
			"the plugin is not running or cannot reach kcp: see its log (kubectl logs deployment/workspacemounts)")
	case strings.HasPrefix(lease.Holder, "cleanup_"):
		return r.verdict(Warn, where+" is held by workspacemounts cleanup ("+lease.Holder+"): no plugin writes meanwhile",
			"let cleanup finish, then start the plugin")
	case lease.FactsErr != nil:
		return r.verdict(Warn, fmt.Sprintf("%s is held by %s, whose published facts cannot be read: %v", where, lease.Holder, lease.FactsErr),
			"upgrade the plugin: the leader rewrites its facts when it leads")
	case !lease.Published:
		return r.verdict(Warn, where+" is held by "+lease.Holder+", which publishes no version and settings (a plugin older than doctor)",
			"upgrade the plugin")
	case lease.Facts.Identity != lease.Holder:
		return r.verdict(Warn, fmt.Sprintf("%s is held by %s; the version and settings on it are a former leader's (%s, %s)", where, lease.Holder, lease.Facts.Identity, lease.Facts.Version),
			"upgrade the plugin: every replica must be of a release that publishes them")
	}
	f := lease.Facts
	return r.verdict(OK, fmt.Sprintf("held by %s, workspacemounts %s, level %d (--workspace-condition=%t, --workspace-url=%t), believes request headers: %t; renewed %s ago",
		lease.Holder, f.Version, f.Level(), f.WorkspaceCondition, f.WorkspaceURL, f.TrustsRequestHeaders, now.Sub(lease.Renewed).Round(time.Second)))
}

// MappingPath is what doctor lists through the front-proxy.
const MappingPath = "/services/workspacemounts/clusters/root/apis/workspacemounts.io/v1alpha1/workspacemounts"

const mappingFix = "map /services/workspacemounts/ to the plugin's Service (https://<service>.<namespace>.svc:<port>/services/workspacemounts): " +
	"kcp-front-proxy's --mapping-file entry {path: /services/workspacemounts/, backend: ..., backend_server_ca: ..., proxy_client_cert: ..., proxy_client_key: ...}, " +
	"kcp-operator's FrontProxy spec.additionalPathMappings, or the kcp chart's kcpFrontProxy.additionalPathMappings (docs/deployment.md)"

const unresolvedPath = "Path not resolved to a valid virtual workspace"

// fromPlugin tells whether the plugin answered: its list, its discovery or its refusal.
func (a Answer) fromPlugin() bool {
	const group = "workspacemounts.io"
	switch a.Code {
	case 200:
		return a.Kind == "WorkspaceMountList" || (a.Kind == "APIResourceList" && strings.HasPrefix(a.APIVersion, group+"/"))
	case 403:
		return a.Kind == "Status" && a.Group == group
	}
	return false
}

func judgeMapping(fp *FrontProxyFacts) Result {
	r := Result{Check: CheckMapping}
	if fp == nil {
		return r.verdict(Skip, "no --front-proxy-url")
	}
	a := fp.Mapping
	url := fp.URL + MappingPath
	switch {
	case a.Err != nil:
		return r.verdict(Fail, fmt.Sprintf("GET %s: %v", url, a.Err),
			"check --front-proxy-url (and --front-proxy-ca-file): the front-proxy must answer there")
	case a.fromPlugin() && a.Code == 200:
		return r.verdict(OK, fmt.Sprintf("GET %s: the plugin's virtual workspace answered (%s)", url, a.Kind))
	case a.fromPlugin():
		return r.verdict(OK, fmt.Sprintf("GET %s: the plugin's virtual workspace answered 403 (%s): the mapping reaches it", url, a.Message))
	case a.Code == 401 && fp.Token:
		return r.verdict(Warn, fmt.Sprintf("GET %s: 401: the credential was refused, and who refused it cannot be told", url),
			"pass a token kcp accepts: the plugin reviews bearer tokens with kcp's TokenReview")
	case a.Code == 401:
		return r.verdict(Warn, fmt.Sprintf("GET %s: 401: the credential was refused, and who refused it cannot be told", url),
			"pass a tenant's token (--token or --token-file) that kcp accepts")
	case a.Code == 404 || strings.Contains(a.Message, unresolvedPath):
		return r.verdict(Fail, fmt.Sprintf("GET %s: %d (%s), not the plugin's answer: the front-proxy maps no /services/workspacemounts/ to this plugin", url, a.Code, a.describe()),
			mappingFix)
	case a.Code == 502 || a.Code == 503:
		return r.verdict(Fail, fmt.Sprintf("GET %s: %d (%s): the front-proxy does not reach the mapping's backend", url, a.Code, a.describe()),
			"the mapping's backend must be the plugin's Service and port, its backend_server_ca the CA of the plugin's serving certificate; check that the plugin runs. "+mappingFix)
	}
	return r.verdict(Fail, fmt.Sprintf("GET %s: %d (%s), not the plugin's answer: the path does not reach this plugin", url, a.Code, a.describe()), mappingFix)
}

func (a Answer) describe() string {
	switch {
	case a.Message != "":
		return a.Kind + ": " + a.Message
	case a.Kind != "":
		return a.Kind
	case a.Body != "":
		return fmt.Sprintf("%q", a.Body)
	}
	return "an empty body"
}

// The probe doctor sends through the front-proxy to tell whether a client's X-Remote-* headers
// reach kcp: a SelfSubjectReview, as a user no one grants anything to.
const (
	ProbePath  = "/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews"
	ProbeUser  = "workspacemounts-doctor:probe"
	ProbeGroup = ProbeUser
)

const advisory = "GHSA-c8w2-fgvx-vhv4"

func judgeIdentityHeaders(fp *FrontProxyFacts, leader leaderfacts.Facts, leaderKnown bool) Result {
	r := Result{Check: CheckIdentityHeaders}
	if fp == nil {
		return r.verdict(Skip, "no --front-proxy-url")
	}
	var strips, known bool
	var how string
	if fp.ProbeBelieved {
		known, how = true, fmt.Sprintf("kcp believed the X-Remote-User or X-Remote-Group %q doctor sent through it", ProbeUser)
	} else if fp.VersionErr == nil {
		if release, err := kcprelease.Parse(fp.GitVersion); err == nil {
			strips, known = release.AtLeast(StripsIdentityHeaders), true
			how = fmt.Sprintf("by its release, v%s (%s), which its /version answered", release, fp.GitVersion)
		}
	}
	if !known {
		detail := "cannot tell whether the front-proxy deletes client-sent X-Remote-User, X-Remote-Group and X-Remote-Extra-* (" + advisory + "): kcp did not take the probe headers, and the front-proxy's /version names no kcp release"
		if fp.VersionErr != nil {
			detail += " (" + fp.VersionErr.Error() + ")"
		}
		return r.verdict(Warn, detail, "run kcp-front-proxy v0.32.1 or later; until then, leave --requestheader-client-ca-file out of the plugin's flags")
	}
	if strips {
		return r.verdict(OK, "the front-proxy deletes client-sent X-Remote-* headers (v0.32.1 and later, "+advisory+"): "+how)
	}
	doesNot := "the front-proxy passes client-sent X-Remote-User, X-Remote-Group and X-Remote-Extra-* on (" + advisory + "; kcp-front-proxy v0.32.1 is the first that deletes them): " + how
	switch {
	case !leaderKnown:
		return r.verdict(Warn, doesNot+"; whether the plugin believes request headers is unknown ("+CheckLease+")",
			"leave --requestheader-client-ca-file out of the plugin's flags (tenants reach it with bearer tokens only), or upgrade kcp-front-proxy to v0.32.1 or later")
	case leader.TrustsRequestHeaders:
		return r.verdict(Fail, doesNot+"; the plugin believes request headers (--requestheader-client-ca-file): any tenant can claim any user and group to it",
			"upgrade kcp-front-proxy to v0.32.1 or later, or remove --requestheader-client-ca-file from the plugin's flags (the chart's frontProxy.requestHeaderCA): tenants then reach it with bearer tokens only")
	}
	return r.verdict(OK, doesNot+"; the plugin does not believe request headers (no --requestheader-client-ca-file): keep it so until the front-proxy is v0.32.1 or later")
}

func judgeServingCertificate(cert *CertificateFacts, now time.Time) Result {
	r := Result{Check: CheckServingCertificate}
	if cert == nil {
		return r.verdict(Skip, "no --virtual-workspace-url")
	}
	const renew = "renew the plugin's serving certificate (--tls-cert-file and --tls-private-key-file; the chart's and kcp-operator's come from cert-manager, which renews them itself when its Certificate is Ready); the plugin reloads the files as they change"
	switch left := cert.NotAfter.Sub(now); {
	case cert.Err != nil:
		return r.verdict(Fail, fmt.Sprintf("TLS handshake with %s: %v", cert.URL, cert.Err),
			"check --virtual-workspace-url: the plugin's own HTTPS address (its Service, port 6443)")
	case now.Before(cert.NotBefore):
		return r.verdict(Fail, fmt.Sprintf("%s presents %q, not valid before %s", cert.URL, cert.Subject, cert.NotBefore.UTC().Format(time.RFC3339)),
			"check the clocks of the issuer and of this machine; "+renew)
	case left <= 0:
		return r.verdict(Fail, fmt.Sprintf("%s presents %q, expired %s ago (%s)", cert.URL, cert.Subject, (-left).Round(time.Minute), cert.NotAfter.UTC().Format(time.RFC3339)),
			renew)
	case left < CertificateWarning:
		return r.verdict(Warn, fmt.Sprintf("%s presents %q, expiring in %s (%s)", cert.URL, cert.Subject, left.Round(time.Hour), cert.NotAfter.UTC().Format(time.RFC3339)),
			renew)
	default:
		return r.verdict(OK, fmt.Sprintf("%s presents %q, valid until %s (%d days)", cert.URL, cert.Subject, cert.NotAfter.UTC().Format(time.RFC3339), int(left.Hours()/24)))
	}
}
