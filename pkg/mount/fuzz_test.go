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
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
)

// checkValidReference fails unless ref has every property a valid reference
// promises its users: request paths, index keys and label values.
func checkValidReference(t *testing.T, ref Reference) {
	t.Helper()
	gvk, err := ref.GroupVersionKind()
	if err != nil {
		t.Fatalf("valid reference %#v has no GroupVersionKind: %v", ref, err)
	}
	if gvk.Version == "" || ref.Kind == "" || ref.Name == "" {
		t.Fatalf("valid reference %#v misses a part", ref)
	}
	if len(ref.Name) > MaxReferenceName || ref.Name == "." || ref.Name == ".." || strings.ContainsAny(ref.Name, "/%") {
		t.Fatalf("valid reference %#v has a name that is no path segment", ref)
	}
	if len(ref.Kind) > MaxReferenceKind || strings.ContainsAny(ref.Kind, "/| .") {
		t.Fatalf("valid reference %#v has a kind that is no kind", ref)
	}
	if strings.Count(ref.APIVersion, "/") > 1 || strings.ContainsAny(gvk.Group+gvk.Version+ref.Namespace, "/| %") {
		t.Fatalf("valid reference %#v has an apiVersion or namespace with separators", ref)
	}
	if bounded := (Status{MountRef: ref}).Bounded().MountRef; bounded != ref {
		t.Fatalf("bounding changed valid reference %#v into %#v", ref, bounded)
	}
}

func FuzzReferenceValidate(f *testing.F) {
	for _, seed := range [][4]string{
		{"contrib.kcp.io/v1alpha1", "KubeCluster", "proxy", ""},
		{"v1", "ConfigMap", "cm", "kube-system"},
		{"a/b/c", "K", "n", ""},
		{"/v1", "K", "n", ""},
		{"example.io/v1", "Kube/Cluster", "a/b", "Bad_NS"},
		{"example.io/v1", "K", "..", ""},
		{"example.io/v1", "K", "100%", ""},
		{"example.io/v1", "K", "system:x", ""},
		{"example.io/v1", "K", "a\nb", ""},
		{"example.io/v1", strings.Repeat("K", 64), strings.Repeat("n", 254), strings.Repeat("n", 64)},
		{"", "", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, apiVersion, kind, name, namespace string) {
		ref := Reference{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: namespace}
		err := ref.Validate()
		if err == nil {
			checkValidReference(t, ref)
			return
		}
		if message := err.Error(); message == "" || len(message) > 1024 {
			t.Fatalf("an error of %d bytes for %#v", len(message), ref)
		}
	})
}

func FuzzReferenceOf(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"proxy"}},"status":{"phase":"Ready","url":"https://x"}}`,
		`{"spec":{"ref":{"apiVersion":"v1","kind":"ConfigMap","name":"cm","namespace":"ns"}}}`,
		`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":"a/b"}}}`,
		`{"spec":{"ref":{"apiVersion":"contrib.kcp.io/v1alpha1","kind":"KubeCluster","name":5}}}`,
		`{"spec":{"ref":null}}`,
		`{"spec":[]}`,
		`{"status":{}}`,
		`{"spec":`,
		``,
		`null`,
	} {
		f.Add(seed, true, false, "", "", "", true)
	}
	f.Add("", false, true, "contrib.kcp.io/v1alpha1", "KubeCluster", "proxy", false)
	f.Add(`{"spec":{"ref":{"apiVersion":"v1","kind":"Other","name":"b"}}}`, true, true, "a/b/c", "K", "n", true)
	f.Add(`{"spec":{"ref":{"apiVersion":"v1","kind":"Other","name":"b"}}}`, true, false, "", "", "", false)
	f.Fuzz(func(t *testing.T, legacy string, withLegacy, withSpec bool, apiVersion, kind, name string, honourLegacy bool) {
		rule := Rule{LegacyAnnotation: honourLegacy}
		ws := &tenancyv1alpha1.Workspace{}
		if withLegacy {
			ws.Annotations = map[string]string{LegacyAnnotationKey: legacy}
		}
		if withSpec {
			ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}}
		}
		// What the rule reads: spec.mount, else the legacy annotation if honoured.
		hasReference := withSpec || withLegacy && honourLegacy
		ref, err := rule.ReferenceOf(ws)
		if rule.IsMounted(ws) != hasReference {
			t.Fatalf("IsMounted %v, with spec.mount %v, the legacy annotation %v (honoured %v)", rule.IsMounted(ws), withSpec, withLegacy, honourLegacy)
		}
		switch {
		case errors.Is(err, ErrNotMounted):
			if hasReference {
				t.Fatalf("not mounted, but the Workspace has a reference the rule reads")
			}
		case err != nil:
			if !hasReference {
				t.Fatalf("an invalid reference on a Workspace that is not mounted")
			}
			gvk, gvkErr := ref.GroupVersionKind()
			notAllowed := errors.Is(err, ErrKindNotAllowed)
			if notAllowed != (ref.Validate() == nil && gvkErr == nil && !GroupAllowed(gvk.Group)) {
				t.Fatalf("error %v: not allowed %v, for group %q", err, notAllowed, gvk.Group)
			}
			if ref.Validate() == nil && !notAllowed && !strings.Contains(err.Error(), LegacyAnnotationKey) {
				t.Fatalf("error %v for a reference that validates", err)
			}
		default:
			if !hasReference {
				t.Fatalf("a reference on a Workspace that is not mounted")
			}
			if gvk, err := ref.GroupVersionKind(); err != nil || !GroupAllowed(gvk.Group) {
				t.Fatalf("a usable reference %+v to a kind that is not allowed", ref)
			}
			if withSpec && ref != Reference(ws.Spec.Mount.Reference) {
				t.Fatalf("spec.mount does not win")
			}
			checkValidReference(t, ref)
		}
		// A Workspace that only gains or loses an annotation the rule does not read has not changed mount.
		bare := ws.DeepCopy()
		bare.Annotations = nil
		if changed := rule.MountChanged(bare, ws); changed != (withLegacy && honourLegacy && !withSpec) {
			t.Fatalf("MountChanged %v when only the legacy annotation (honoured %v, spec.mount %v) differs", changed, honourLegacy, withSpec)
		}
	})
}

// checkAnnotation fails unless value is an annotation the contract allows:
// short enough, valid JSON, and read back by StatusOf as itself.
func checkAnnotation(t *testing.T, value string) Status {
	t.Helper()
	if len(value) >= MaxStatusAnnotationBytes {
		t.Fatalf("an annotation of %d bytes", len(value))
	}
	if !json.Valid([]byte(value)) || !utf8.ValidString(value) {
		t.Fatalf("an annotation that is not valid JSON: %q", value)
	}
	parsed, found := StatusOf(map[string]string{StatusAnnotationKey: value})
	if !found {
		t.Fatalf("StatusOf cannot read the annotation %q", value)
	}
	if again := parsed.Encode(); again != value {
		t.Fatalf("the annotation does not survive a round trip:\n%s\n%s", value, again)
	}
	return parsed
}

// checkBounded fails unless every field of s is within its limit.
func checkBounded(t *testing.T, s Status) {
	t.Helper()
	within := func(what, value string, limit int) {
		if len(value) > limit || Sanitize(value) != value {
			t.Fatalf("%s of %d bytes (limit %d) or with control or format characters: %+q", what, len(value), limit, value)
		}
	}
	within("phase", string(s.Phase), MaxPhase)
	within("url", s.URL, MaxURL)
	within("reason", s.Reason, MaxReason)
	within("message", s.Message, MaxMessage)
	for _, field := range []string{s.MountRef.APIVersion, s.MountRef.Kind, s.MountRef.Name, s.MountRef.Namespace} {
		within("mountRef", field, MaxReferenceField)
	}
	if len(s.Conditions) > MaxConditions {
		t.Fatalf("%d conditions", len(s.Conditions))
	}
	for _, c := range s.Conditions {
		within("condition type", c.Type, MaxConditionType)
		within("condition status", c.Status, MaxConditionStatus)
		within("condition reason", c.Reason, MaxConditionReason)
		within("condition message", c.Message, MaxConditionMessage)
	}
	if len(s.History) > MaxTransitions-1 {
		t.Fatalf("%d transitions before the current one", len(s.History))
	}
	for _, h := range s.History {
		within("transition phase", string(h.Phase), MaxPhase)
		within("transition reason", h.Reason, MaxReason)
	}
}

// checkHistory fails unless the history of s, a status ParseStatus
// returned, adds up: at most MaxTransitions transitions with known phases,
// in order, and between 0 and the observed seconds ready.
func checkHistory(t *testing.T, s Status) {
	t.Helper()
	transitions := s.Transitions()
	if len(transitions) > MaxTransitions {
		t.Fatalf("%d transitions", len(transitions))
	}
	first := s.FirstSeen()
	for i, tr := range transitions {
		if !slices.Contains(Phases, tr.Phase) {
			t.Fatalf("transition %d has phase %q", i, tr.Phase)
		}
		if tr.Time.Before(&first) || i > 0 && tr.Time.Before(&transitions[i-1].Time) {
			t.Fatalf("transition %d out of order: %v", i, transitions)
		}
	}
	if s.ReadySeconds < 0 || s.ReadySeconds > s.ObservedSeconds() {
		t.Fatalf("%d ready seconds of %d observed", s.ReadySeconds, s.ObservedSeconds())
	}
}

func FuzzStatusOf(f *testing.F) {
	ref := Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy"}
	for _, s := range []Status{
		{Phase: PhaseConnecting, Reason: ReasonMountNotReady, Message: "KubeCluster proxy (contrib.kcp.io/v1alpha1) is Connecting: condition Ready is False (NoHeartbeat).",
			MountRef: ref, LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)),
			Conditions: []Condition{{Type: "Ready", Status: "False", Reason: "NoHeartbeat", Message: "the agent has not connected yet"}}},
		{Phase: PhaseReady, Ready: true, URL: "https://kcp.example/clusters/root:b?a=1&b=<2>", Reason: ReasonMountReady, MountRef: ref},
		{Phase: PhaseInvalid, Reason: ReasonMountReferenceInvalid, Message: "bad", MountRef: Reference{Name: "a/b"}},
		{Phase: PhaseUnknown, Reason: ReasonMountInformerLimitReached, MountRef: ref},
	} {
		f.Add(s.Encode())
	}
	for _, seed := range []string{
		`{`, `null`, `[]`, `{"phase":"Pwned"}`, `{"phase":"Ready","ready":"yes"}`,
		`{"phase":"Ready","conditions":[{"type":"a\u0000b"},{"type":"` + strings.Repeat("é", 200) + `"}]}`,
		`{"phase":"NotFound","lastTransitionTime":"not a time"}`,
		`{"phase":"Ready","message":"\ud800","url":"\u2028"}`,
		`{"phase":"Connecting","message":"ok \u202egnp.exe","conditions":[{"type":"A\u200bB","status":"False","message":"\u2066x\u2069\ufeff"}]}`,
		`{"phase":"Ready","ready":true,"lastTransitionTime":"2026-12-06T08:00:00Z","history":[["Connecting",false,"MountNotReady","2026-12-06T07:00:00Z"]],"since":"2026-12-06T07:00:00Z"}`,
		`{"phase":"Ready","lastTransitionTime":"2026-12-06T08:00:00Z","history":[["Pwned",false,"","2026-12-06T07:00:00Z"]],"since":"2026-12-06T07:00:00Z"}`,
		`{"phase":"Ready","lastTransitionTime":"2026-12-06T08:00:00Z","history":[["Ready",true,"r","2026-12-06T07:00:00Z"],["Ready",true,"r"]],"readySeconds":-1}`,
		`{"phase":"Ready","lastTransitionTime":"2026-12-06T08:00:00Z","history":[["Ready",true,"\u202e","2026-12-06T07:00:00Z",1]],"since":"9999-12-31T23:59:59Z","readySeconds":9223372036854775807}`,
		`{"phase":"Ready","lastTransitionTime":"2026-12-06T08:00:00Z","history":[` + strings.Repeat(`["Ready",true,"r","2026-12-06T07:00:00Z"],`, 20) + `["Ready",true,"r","2026-12-06T07:00:00Z"]],"since":"2026-12-06T06:00:00Z","readySeconds":3600}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := ParseStatus(value)
		_, found := StatusOf(map[string]string{StatusAnnotationKey: value})
		if (err == nil) != found {
			t.Fatalf("ParseStatus and StatusOf disagree")
		}
		if err != nil {
			return
		}
		if !slices.Contains(Phases, s.Phase) {
			t.Fatalf("phase %q is none of %v", s.Phase, Phases)
		}
		checkHistory(t, s)
		checkBounded(t, s)
		checkAnnotation(t, s.Encode())
	})
}

func FuzzStatusEncode(f *testing.F) {
	f.Add("Connecting", "https://x", "MountNotReady", "m.", "contrib.kcp.io/v1alpha1", "KubeCluster", "proxy", "", "Ready", "False", "NoHeartbeat", "no agent", uint8(2),
		"Ready", "MountReady", uint8(3), uint32(60), int64(60))
	f.Add("Ready", strings.Repeat(`"`, 3000), strings.Repeat(`\`, 300), strings.Repeat("<", 3000), "a/b/c", "K", strings.Repeat("n", 400), "ns",
		strings.Repeat(`"`, 300), strings.Repeat(`\`, 30), strings.Repeat("\x00", 300), strings.Repeat("\u2028", 300), uint8(20),
		strings.Repeat(`"`, 300), strings.Repeat(`<\`, 300), uint8(15), uint32(1<<31), int64(-1))
	f.Add("Connecting", "https://x/\u202egnp.exe", "MountNotReady", "ok \u202egnp.exe", "v1\u2066", "K\u200b", "n\ufeff", "", "A\u2060", "False", "R\u200f", strings.Repeat("\u202e", 300), uint8(3),
		"Connecting", "\u202e", uint8(9), uint32(0), int64(0))
	f.Fuzz(func(t *testing.T, phase, url, reason, message, apiVersion, kind, name, namespace, cType, cStatus, cReason, cMessage string, conditions uint8,
		hPhase, hReason string, transitions uint8, spacing uint32, readySeconds int64) {
		s := Status{
			Phase: Phase(phase), URL: url, Reason: reason, Message: message,
			MountRef:           Reference{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: namespace},
			LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)),
		}
		for range int(conditions % 32) {
			s.Conditions = append(s.Conditions, Condition{Type: cType, Status: cStatus, Reason: cReason, Message: cMessage})
		}
		n := int(transitions % 16)
		for i := range n {
			at := metav1.NewTime(s.LastTransitionTime.Add(-time.Duration(n-i) * time.Duration(spacing) * time.Second))
			s.History = append(s.History, Transition{Phase: Phase(hPhase), Ready: i%2 == 0, Reason: hReason, Time: at})
		}
		if n > 0 {
			s.Since, s.ReadySeconds = s.History[0].Time.DeepCopy(), readySeconds
		}
		bounded := s.Bounded()
		checkBounded(t, bounded)
		encoded := s.Encode()
		if len(encoded) >= MaxStatusAnnotationBytes || !json.Valid([]byte(encoded)) {
			t.Fatalf("an annotation of %d bytes, or not JSON", len(encoded))
		}
		if bounded.Encode() != encoded {
			t.Fatalf("Bounded is not idempotent")
		}
		if slices.Contains(Phases, bounded.Phase) && bounded.checkHistory() == nil {
			checkAnnotation(t, encoded)
		}
	})
}

// formatCharacters are all runes of Unicode category Cf (unicode.Cf).
var formatCharacters = func() []rune {
	var runes []rune
	for _, r16 := range unicode.Cf.R16 {
		for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
			runes = append(runes, r)
		}
	}
	for _, r32 := range unicode.Cf.R32 {
		for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
			runes = append(runes, r)
		}
	}
	return runes
}()

// FuzzSanitize: a format character (one of all of unicode.Cf, picked by
// index) put anywhere in any string, also inside another character's bytes.
// Sanitize replaces each rune of categories Cc and Cf, U+2028 and U+2029 by a
// space and each invalid byte by U+FFFD, and keeps every other rune: its
// output is valid UTF-8 without such runes, no longer than the input (three
// times for invalid bytes), and Sanitize leaves it as it is; bound cuts it
// within the limit, on a character boundary, marked. The seeds alone put
// every rune of unicode.Cf into a string.
func FuzzSanitize(f *testing.F) {
	for i := range formatCharacters {
		f.Add("ok gnp.exe", uint16(i), uint16(3))
	}
	f.Add("a\xffb\u2028c\x1b[0m\u0085", uint16(0), uint16(1))
	f.Add(strings.Repeat("é", 200), uint16(1), uint16(1))
	f.Fuzz(func(t *testing.T, s string, pick, at uint16) {
		inserted := formatCharacters[int(pick)%len(formatCharacters)]
		cut := int(at) % (len(s) + 1)
		in := s[:cut] + string(inserted) + s[cut:]
		out := Sanitize(in)

		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%+q) = %+q: not UTF-8", in, out)
		}
		var want strings.Builder
		for i := 0; i < len(in); {
			r, size := utf8.DecodeRuneInString(in[i:])
			i += size
			switch {
			case unicode.In(r, unicode.Cc, unicode.Cf) || r == '\u2028' || r == '\u2029':
				want.WriteByte(' ')
			default: // an invalid byte decodes as utf8.RuneError, U+FFFD
				want.WriteRune(r)
			}
		}
		if out != want.String() {
			t.Fatalf("Sanitize(%+q) = %+q, want %+q", in, out, want.String())
		}
		if !strings.Contains(out, " ") {
			t.Fatalf("Sanitize(%+q) = %+q: the inserted %U is not replaced", in, out, inserted)
		}
		for _, r := range out {
			if unicode.In(r, unicode.Cc, unicode.Cf) {
				t.Fatalf("Sanitize(%+q) = %+q keeps %U", in, out, r)
			}
		}
		if len(out) > 3*len(in) || (utf8.ValidString(in) && len(out) > len(in)) {
			t.Fatalf("Sanitize of %d bytes is %d bytes", len(in), len(out))
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("Sanitize is not idempotent: %+q, then %+q", out, again)
		}
		for _, limit := range []int{MaxConditionStatus, MaxConditionMessage} {
			bounded := bound(in, limit)
			prefix, cut := strings.CutSuffix(bounded, TruncationMarker)
			switch {
			case len(bounded) > limit || !utf8.ValidString(bounded):
				t.Fatalf("bound(%+q, %d) = %+q: %d bytes, or not UTF-8", in, limit, bounded, len(bounded))
			case bounded != out && (!cut || !strings.HasPrefix(out, prefix)):
				t.Fatalf("bound(%+q, %d) = %+q is not Sanitize's %+q, cut and marked", in, limit, bounded, out)
			}
		}
	})
}

// FuzzURLFormHTTPSWithinKCP: the https form, with or without the host
// rules, never accepts a URL that kcp v0.33's rule refuses, read two
// ways: as kcp's docs word it (a URL starting "https://", a host, no user
// information, query or fragment), by hand on the string; and as kcp's
// code checks a parsed URL.
func FuzzURLFormHTTPSWithinKCP(f *testing.F) {
	for _, seed := range []string{
		"https://new.example.com/clusters/root:dest", "http://attacker.example.com", "https://user:token@attacker.example.com",
		"https://attacker.example.com/?x=y", "attacker.example.com", "", "https://h#", "https://h?", "HTTPS://h/", "https://:443/",
		"https://[::1]:6443/", "https://h/a%3Fb", "https:h", "https:/h", "//h/", "https://@h/", "https://h./#",
	} {
		f.Add(seed)
	}
	rules := []URLRule{{}, {Form: URLFormHTTPS, CheckHosts: true, AllowInternalHosts: true}}
	f.Fuzz(func(t *testing.T, rawURL string) {
		for _, rule := range rules {
			if rule.Check(rawURL) != nil {
				continue
			}
			if why := kcpWordsRefuse(rawURL); why != "" {
				t.Fatalf("%q accepted by the https form, refused by kcp's words: %s", rawURL, why)
			}
			if why := kcpCodeRefuses(rawURL); why != "" {
				t.Fatalf("%q accepted by the https form, refused by kcp's code: %s", rawURL, why)
			}
		}
	})
}

// kcpWordsRefuse reads kcp's rule on the string itself: "https://", then
// an authority with no "@" and a host, and no "?" or "#" anywhere.
func kcpWordsRefuse(rawURL string) string {
	rest, ok := strings.CutPrefix(rawURL, "https://")
	if !ok {
		return "not https://"
	}
	if strings.ContainsAny(rawURL, "?#") {
		return "a query or fragment"
	}
	authority := rest
	if i := strings.IndexAny(rest, "/"); i >= 0 {
		authority = rest[:i]
	}
	if strings.Contains(authority, "@") {
		return "user information"
	}
	host := authority
	if strings.HasPrefix(host, "[") {
		if i := strings.Index(host, "]"); i >= 0 {
			host = host[:i+1]
		}
	} else if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	if strings.Trim(host, "[]") == "" {
		return "no host"
	}
	return ""
}

// kcpCodeRefuses reads kcp's rule as Go code checks a URL it parsed.
func kcpCodeRefuses(rawURL string) string {
	u, err := url.Parse(rawURL)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "https":
		return "not https"
	case u.Host == "" || u.Hostname() == "":
		return "no host"
	case u.User != nil:
		return "user information"
	case u.RawQuery != "" || u.ForceQuery:
		return "a query"
	case u.Fragment != "" || u.RawFragment != "":
		return "a fragment"
	}
	return ""
}
