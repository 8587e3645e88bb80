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
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServingCertificate reads the dates of the certificate a TLS server
// presents, and fails without one.
func TestServingCertificate(t *testing.T) {
	t.Parallel()
	server := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(server.Close)
	cert := ServingCertificate(context.Background(), server.URL)
	require.NoError(t, cert.Err)
	require.Equal(t, server.Certificate().NotAfter, cert.NotAfter)
	require.Equal(t, server.Certificate().NotBefore, cert.NotBefore)

	require.ErrorContains(t, ServingCertificate(context.Background(), "http://127.0.0.1:1").Err, "not an https:// URL")
	require.Error(t, ServingCertificate(context.Background(), "https://127.0.0.1:1").Err)
}

// TestAsk reads a Status's kind, message and group, and a probe is
// believed only when kcp names the probe user.
func TestAsk(t *testing.T) {
	t.Parallel()
	var body string
	var code int
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			code = http.StatusUnauthorized
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(server.Close)

	code, body = 403, `{"kind":"Status","apiVersion":"v1","message":"workspacemounts.workspacemounts.io is forbidden","details":{"group":"workspacemounts.io","kind":"workspacemounts"}}`
	a := ask(context.Background(), server.Client(), http.MethodGet, server.URL, "t", nil, nil)
	require.Equal(t, Answer{Code: 403, Kind: "Status", APIVersion: "v1", Group: "workspacemounts.io", Message: "workspacemounts.workspacemounts.io is forbidden", Body: body}, a)
	require.True(t, a.fromPlugin())

	code, body = 404, "404 page not found"
	a = ask(context.Background(), server.Client(), http.MethodGet, server.URL, "t", nil, nil)
	require.Equal(t, Answer{Code: 404, Body: body}, a)
	require.False(t, a.fromPlugin())

	for _, tc := range []struct {
		code     int
		body     string
		believed bool
	}{
		{201, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"` + ProbeUser + `"}}}`, true},
		{201, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"tenant"}}}`, false},
		{201, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"tenant","groups":["system:authenticated","` + ProbeGroup + `"]}}}`, true},
		{403, `{"kind":"Status","message":"selfsubjectreviews.authentication.k8s.io is forbidden: User \"` + ProbeUser + `\" cannot create resource"}`, true},
		{403, `{"kind":"Status","message":"selfsubjectreviews.authentication.k8s.io is forbidden: User \"tenant\" cannot create resource"}`, false},
		{401, `{"kind":"Status"}`, false},
	} {
		code, body = tc.code, tc.body
		fp := FrontProxy(context.Background(), server.Client(), server.URL, "t")
		require.Equal(t, tc.believed, fp.ProbeBelieved, tc.body)
	}
}
