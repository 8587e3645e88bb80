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
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy"}
	with := func(change func(*Reference)) Reference {
		r := valid
		change(&r)
		return r
	}
	for _, tc := range []struct {
		name    string
		ref     Reference
		wantErr string
	}{
		{name: "valid", ref: valid},
		{name: "core group", ref: Reference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", Namespace: "kube-system"}},
		{name: "names Kubernetes allows beyond DNS", ref: with(func(r *Reference) { r.Name = "system:Mount_1@x" })},
		{name: "a 253-byte name", ref: with(func(r *Reference) { r.Name = strings.Repeat("n", 253) })},
		{name: "a 63-byte kind", ref: with(func(r *Reference) { r.Kind = "K" + strings.Repeat("k", 62) })},
		{name: "nothing", ref: Reference{}, wantErr: "has no apiVersion, kind, name"},
		{name: "no version", ref: with(func(r *Reference) { r.APIVersion = "contrib.kcp.io/" }), wantErr: `invalid apiVersion "contrib.kcp.io/"`},
		{name: "three parts", ref: with(func(r *Reference) { r.APIVersion = "a/b/c" }), wantErr: `invalid apiVersion "a/b/c"`},
		{name: "empty group with a slash", ref: with(func(r *Reference) { r.APIVersion = "/v1" }), wantErr: `invalid apiVersion "/v1"`},
		{name: "group not a subdomain", ref: with(func(r *Reference) { r.APIVersion = "Bad_Group/v1" }), wantErr: `the group "Bad_Group" of apiVersion is not a DNS-1123 subdomain`},
		{name: "group too long", ref: with(func(r *Reference) { r.APIVersion = strings.Repeat("g", 254) + "/v1" }), wantErr: "is not a DNS-1123 subdomain"},
		{name: "version not a label", ref: with(func(r *Reference) { r.APIVersion = "example.io/V1.0" }), wantErr: `the version "V1.0" of apiVersion is not a DNS-1035 label`},
		{name: "kind with a slash", ref: with(func(r *Reference) { r.Kind = "a/b" }), wantErr: `kind "a/b" is not a kind`},
		{name: "kind starting with a digit", ref: with(func(r *Reference) { r.Kind = "1Kind" }), wantErr: `kind "1Kind" is not a kind`},
		{name: "kind of 64 bytes", ref: with(func(r *Reference) { r.Kind = strings.Repeat("K", 64) }), wantErr: "is not a kind"},
		{name: "kind with a space", ref: with(func(r *Reference) { r.Kind = "Kube Cluster" }), wantErr: "is not a kind"},
		{name: "name a/b", ref: with(func(r *Reference) { r.Name = "a/b" }), wantErr: `name "a/b" cannot be an object name`},
		{name: "name .", ref: with(func(r *Reference) { r.Name = "." }), wantErr: `name "." cannot be an object name`},
		{name: "name ..", ref: with(func(r *Reference) { r.Name = ".." }), wantErr: `name ".." cannot be an object name`},
		{name: "name with %", ref: with(func(r *Reference) { r.Name = "100%" }), wantErr: `name "100%" cannot be an object name`},
		{name: "name with a newline", ref: with(func(r *Reference) { r.Name = "a\nb" }), wantErr: `name "a\nb" has control or format characters`},
		{name: "name with a right-to-left override", ref: with(func(r *Reference) { r.Name = "ok\u202egnp.exe" }), wantErr: `name "ok\u202egnp.exe" has control or format characters`},
		{name: "name with a zero-width space", ref: with(func(r *Reference) { r.Name = "pro\u200bxy" }), wantErr: `name "pro\u200bxy" has control or format characters`},
		{name: "name not UTF-8", ref: with(func(r *Reference) { r.Name = "a\xffb" }), wantErr: "is not UTF-8"},
		{name: "name of 254 bytes", ref: with(func(r *Reference) { r.Name = strings.Repeat("n", 254) }), wantErr: "is longer than 253 bytes"},
		{name: "namespace not a label", ref: with(func(r *Reference) { r.Namespace = "a.b" }), wantErr: `namespace "a.b" is not a DNS-1123 label`},
		{name: "namespace of 64 bytes", ref: with(func(r *Reference) { r.Namespace = strings.Repeat("n", 64) }), wantErr: "is not a DNS-1123 label"},
		{
			name:    "everything wrong at once, briefly",
			ref:     Reference{APIVersion: strings.Repeat("A", 9999) + "/v1", Kind: strings.Repeat("/", 9999), Name: strings.Repeat("/", 9999), Namespace: strings.Repeat("_", 9999)},
			wantErr: `the mount reference is invalid: the group "AAAA`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.ref.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				_, err := tc.ref.GroupVersionKind()
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.Less(t, len(err.Error()), 600, "the error quotes values cut")
			require.Equal(t, Sanitize(err.Error()), err.Error(), "the error quotes values escaped")
		})
	}
}

func TestTruncateAndSanitize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{name: "short", in: "abc", limit: 8, want: "abc"},
		{name: "exactly", in: "abcdefgh", limit: 8, want: "abcdefgh"},
		{name: "cut and marked", in: "abcdefghi", limit: 8, want: "abcde..."},
		{name: "not inside a character", in: "ééééé", limit: 8, want: "éé..."},
		{name: "control characters", in: "a\nb\tc\x1b[0m\u0085\u2028\u2029", limit: 64, want: "a b c [0m   "},
		{name: "invalid UTF-8", in: "a\xffb", limit: 64, want: "a\uFFFDb"},
		{name: "U+FFFD stays", in: "a\uFFFDb", limit: 64, want: "a\uFFFDb"},
		{name: "sanitized, then cut", in: strings.Repeat("\xff", 10), limit: 9, want: "\uFFFD\uFFFD..."},
		{name: "right-to-left override", in: "ok \u202egnp.exe", limit: 64, want: "ok  gnp.exe"},
		{name: "bidi embeddings, overrides and isolates", in: "\u202aa\u202bb\u202cc\u202dd\u202ee\u2066f\u2067g\u2068h\u2069", limit: 64, want: " a b c d e f g h "},
		{name: "zero-width characters", in: "p\u200br\u200co\u200dx\u200ey\u200f!\u2060\ufeff", limit: 64, want: "p r o x y !  "},
		{name: "other format characters", in: "soft\u00adhyphen, tag\U000E0041, Arabic letter mark\u061c", limit: 64, want: "soft hyphen, tag , Arabic letter mark "},
		{name: "other spaces and marks stay", in: "a\u00a0b\u3000c\u0301\ue000", limit: 64, want: "a\u00a0b\u3000c\u0301\ue000"},
		{name: "a format character is one byte replaced, then cut", in: strings.Repeat("\u202e", 10), limit: 9, want: "      ..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := bound(tc.in, tc.limit)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len(got), tc.limit)
			require.True(t, utf8.ValidString(got))
			require.Equal(t, got, bound(got, tc.limit), "idempotent")
		})
	}
}

// TestSanitizeEveryRune: Sanitize replaces every rune of categories Cc and
// Cf, U+2028 and U+2029 by a space, and keeps every other rune as it is.
func TestSanitizeEveryRune(t *testing.T) {
	t.Parallel()
	var format, control, kept int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		in := string(r) // a surrogate is U+FFFD already
		want := in
		switch {
		case unicode.Is(unicode.Cf, r):
			format++
			want = " "
		case unicode.Is(unicode.Cc, r) || r == '\u2028' || r == '\u2029':
			control++
			want = " "
		default:
			kept++
		}
		if got := Sanitize(in); got != want { // not require: a million runes
			t.Fatalf("Sanitize(%U) = %+q, want %+q", r, got, want)
		}
	}
	// Go's Unicode tables; the list is in them.
	for _, span := range [][2]rune{{0x202A, 0x202E}, {0x2066, 0x2069}, {0x200B, 0x200F}, {0x2060, 0x2060}, {0xFEFF, 0xFEFF}} {
		for r := span[0]; r <= span[1]; r++ {
			require.True(t, unicode.Is(unicode.Cf, r), "%U", r)
		}
	}
	t.Logf("Unicode %s: %d format characters (Cf) and %d control characters, U+2028 and U+2029 replaced; %d other runes kept", unicode.Version, format, control, kept)
}

func TestReferenceBounded(t *testing.T) {
	t.Parallel()
	valid := Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "system:Mount_1@x", Namespace: "ns"}
	require.Equal(t, valid, valid.Bounded())
	spoof := Reference{APIVersion: "v1\u2066", Kind: "Kube\u200bCluster", Name: "ok\u202egnp.exe" + strings.Repeat("n", 400), Namespace: "a\nb"}
	require.Equal(t, Reference{APIVersion: "v1 ", Kind: "Kube Cluster", Name: "ok gnp.exe" + strings.Repeat("n", MaxReferenceField-len("ok gnp.exe...")) + "...", Namespace: "a b"}, spoof.Bounded())
	require.Equal(t, spoof.Bounded(), Status{MountRef: spoof}.Bounded().MountRef, "as the status' mountRef")
}

// worstStatus has every field longer than its limit, in the characters JSON
// escapes, and more conditions than are kept.
func worstStatus() Status {
	worst := strings.Repeat(`"\`, 20000)
	s := Status{
		Phase: Phase(worst), Ready: true, URL: worst, Reason: worst, Message: worst,
		MountRef:           Reference{APIVersion: worst, Kind: worst, Name: worst, Namespace: worst},
		LastTransitionTime: metav1.NewTime(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)),
	}
	for range 3 * MaxConditions {
		s.Conditions = append(s.Conditions, Condition{Type: worst, Status: worst, Reason: worst, Message: worst})
	}
	for range 2 * MaxTransitions {
		s.History = append(s.History, Transition{Phase: Phase(worst), Ready: true, Reason: worst, Time: s.LastTransitionTime})
	}
	since := metav1.NewTime(time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC))
	s.Since, s.ReadySeconds = &since, s.ObservedSeconds()
	return s
}

// TestEncodeWorstCase: whatever a status holds, its annotation is shorter
// than MaxStatusAnnotationBytes, valid JSON that ParseStatus reads back, and
// conditions are what gives way.
func TestEncodeWorstCase(t *testing.T) {
	t.Parallel()
	s := worstStatus()
	bounded := s.Bounded()
	require.Len(t, bounded.Conditions, MaxConditions)
	require.Len(t, bounded.Conditions[0].Type, MaxConditionType)
	encoded := s.Encode()
	require.Less(t, len(encoded), MaxStatusAnnotationBytes)
	require.True(t, json.Valid([]byte(encoded)))

	var raw Status
	require.NoError(t, json.Unmarshal([]byte(encoded), &raw))
	require.NotEmpty(t, raw.Conditions, "conditions are dropped only as far as needed")
	require.Less(t, len(raw.Conditions), MaxConditions, "the guard dropped some")
	require.Len(t, marshal(Status{}.Bounded()), len(`{"phase":"","ready":false,"reason":"","message":"","mountRef":{"apiVersion":"","kind":"","name":""},"lastTransitionTime":null}`))

	require.Len(t, raw.History, MaxTransitions-1, "the history is never what gives way")
	require.Len(t, raw.Transitions(), MaxTransitions)

	// Without conditions even the worst status fits: the guard always ends.
	s.Conditions = nil
	require.Less(t, len(marshal(s.Bounded())), MaxStatusAnnotationBytes*7/10)
	s.History, s.Since, s.ReadySeconds = nil, nil, 0
	require.Less(t, len(marshal(s.Bounded())), MaxStatusAnnotationBytes*6/10)
}

func TestEncodeDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	encoded := Status{Phase: PhaseReady, URL: "https://x/?a=<b>&c"}.Encode()
	require.Contains(t, encoded, `"url":"https://x/?a=<b>&c"`)
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		value   string
		wantErr string
		check   func(t *testing.T, s Status)
	}{
		{name: "the controller's", value: Status{Phase: PhaseNotFound, Reason: ReasonMountObjectNotFound}.Encode()},
		{name: "not JSON", value: "{", wantErr: "not a mount status"},
		{name: "no phase", value: `{"ready":true}`, wantErr: "phase \"\" is none of"},
		{name: "another phase", value: `{"phase":"Pwned"}`, wantErr: `phase "Pwned" is none of`},
		{name: "too long", value: `{"phase":"Ready","message":"` + strings.Repeat("x", MaxStatusAnnotationBytes) + `"}`, wantErr: "bytes, at most 16383"},
		{
			name: "a user's, bounded on the way in", value: `{"phase":"Ready","reason":"` + strings.Repeat("r", 5000) + `","conditions":[` + strings.Repeat(`{"type":"T\n"},`, 20) + `{"type":"T"}]}`,
			check: func(t *testing.T, s Status) {
				require.Len(t, s.Reason, MaxReason)
				require.Len(t, s.Conditions, MaxConditions)
				require.Equal(t, "T ", s.Conditions[0].Type)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseStatus(tc.value)
			_, found := StatusOf(map[string]string{StatusAnnotationKey: tc.value})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.False(t, found)
				return
			}
			require.NoError(t, err)
			require.True(t, found)
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestKindResolved(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]bool{
		ReasonMountReady: true, ReasonMountURLMissing: true, ReasonMountURLInvalid: true, ReasonMountNotReady: true, ReasonMountPhaseUnrecognized: true, ReasonMountObjectNotFound: true, ReasonMountHeartbeatExpired: true,
		ReasonMountKindUnknown: false, ReasonMountReferenceInvalid: false, ReasonMountInformerLimitReached: false, "Pending": false, "": false, "Other": false,
	} {
		require.Equal(t, want, Status{Reason: reason}.KindResolved(), reason)
	}
}
