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
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

const (
	// MountHopsHeader is the header kcp's mount proxy (kcp v0.33 and later)
	// sets on every request it forwards to a mount target: the mount targets
	// the request has been forwarded to, this one included.
	MountHopsHeader = "X-Kcp-Mount-Hops"
	// MaxMountHops is kcp's bound of those: a request that took as many is
	// a loop, answered 508 Loop Detected.
	MaxMountHops = 3

	remoteUserHeader        = "X-Remote-User"
	remoteGroupHeader       = "X-Remote-Group"
	remoteExtraHeaderPrefix = "X-Remote-Extra-"
)

// mountTarget is the handler of a [MountProvider]: a mount target as kcp's
// newer mount contract wants one (kcp's pkg/server/mountproxy.go and
// docs/content/concepts/workspaces/mounts.md). It believes who the caller is
// only from kcp's mount proxy: a client certificate of proxyCAs whose common
// name is one of proxyNames (the shard's --mount-proxy-client-cert-file),
// and then only from X-Remote-User, X-Remote-Group and X-Remote-Extra-*; an
// Authorization header is never read (kcp v0.33 drops it). A request at
// kcp's hop limit is answered 508. It serves one API: the
// SelfSubjectReview (`kubectl auth whoami`), which answers with the identity
// it believed, and its discovery.
type mountTarget struct {
	proxyCAs   *x509.CertPool
	proxyNames []string
}

// ServeHTTP checks the caller, then the hops, then serves the request.
func (t *mountTarget) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if err := t.checkProxy(req); err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, err.Error())
		return
	}
	if hops := mountHops(req.Header); hops >= MaxMountHops {
		writeStatus(w, http.StatusLoopDetected, "", fmt.Sprintf("request forwarded through %d mount targets (%s): the mount targets form a loop", hops, MountHopsHeader))
		return
	}
	caller := identityFromHeaders(req.Header)
	switch {
	case req.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" && req.Method == http.MethodPost:
		writeJSON(w, http.StatusCreated, &authenticationv1.SelfSubjectReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "SelfSubjectReview"},
			Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
				Username: caller.GetName(), Groups: caller.GetGroups(), Extra: extraValues(caller.GetExtra()),
			}},
		})
	case req.URL.Path == "/apis" && req.Method == http.MethodGet:
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "authentication.k8s.io/v1", Version: "v1"}
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   []metav1.APIGroup{{Name: "authentication.k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}},
		})
	case req.URL.Path == "/apis/authentication.k8s.io/v1" && req.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "authentication.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "selfsubjectreviews", Kind: "SelfSubjectReview", Verbs: metav1.Verbs{"create"}}},
		})
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "this mount target serves only selfsubjectreviews.authentication.k8s.io (kubectl auth whoami)")
	}
}

// checkProxy returns why the caller is not kcp's mount proxy, nil if it is:
// its first certificate verifies, with the others as intermediates, against
// proxyCAs for client authentication, and its common name is one of
// proxyNames (any, if there are none).
func (t *mountTarget) checkProxy(req *http.Request) error {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return fmt.Errorf("no client certificate: only kcp's mount proxy (the shard's --mount-proxy-client-cert-file) may call this mount target")
	}
	certs := req.TLS.PeerCertificates
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: t.proxyCAs, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("the client certificate is not kcp's mount proxy's: %w", err)
	}
	if len(t.proxyNames) > 0 && !slices.Contains(t.proxyNames, certs[0].Subject.CommonName) {
		return fmt.Errorf("the client certificate %q is not kcp's mount proxy's: its common name is none of %s", certs[0].Subject.CommonName, strings.Join(t.proxyNames, ", "))
	}
	return nil
}

// mountHops is the value of MountHopsHeader, 0 where it is missing or not
// a count, as kcp reads it.
func mountHops(header http.Header) int {
	hops, err := strconv.Atoi(header.Get(MountHopsHeader))
	if err != nil || hops < 0 {
		return 0
	}
	return hops
}

// identityFromHeaders is the caller kcp's mount proxy names: X-Remote-User,
// every X-Remote-Group, and X-Remote-Extra-<key> (the key lower-cased and
// percent-decoded, as k8s.io/apiserver's request-header authenticator reads
// it). Without a user it is system:anonymous: kcp forwards an anonymous
// caller without identity headers.
func identityFromHeaders(header http.Header) user.Info {
	name := header.Get(remoteUserHeader)
	if name == "" {
		return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	}
	info := &user.DefaultInfo{Name: name}
	for _, g := range header.Values(remoteGroupHeader) {
		if g != "" {
			info.Groups = append(info.Groups, g)
		}
	}
	for key, values := range header {
		if !strings.HasPrefix(key, remoteExtraHeaderPrefix) {
			continue
		}
		extraKey, err := url.PathUnescape(strings.ToLower(strings.TrimPrefix(key, remoteExtraHeaderPrefix)))
		if err != nil || extraKey == "" {
			continue
		}
		if info.Extra == nil {
			info.Extra = map[string][]string{}
		}
		info.Extra[extraKey] = append(info.Extra[extraKey], values...)
	}
	return info
}

// extraValues converts a user's extra to a SelfSubjectReview's.
func extraValues(extra map[string][]string) map[string]authenticationv1.ExtraValue {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string]authenticationv1.ExtraValue, len(extra))
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// writeStatus answers a metav1.Status, as Kubernetes clients expect.
func writeStatus(w http.ResponseWriter, code int32, reason metav1.StatusReason, message string) {
	writeJSON(w, int(code), &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	})
}

// writeJSON answers obj as JSON with code, or 500 if it cannot be encoded.
func writeJSON(w http.ResponseWriter, code int, obj any) {
	body, err := json.Marshal(obj)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
