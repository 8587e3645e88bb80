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

package apiserver

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/testutil"

	kcpinformers "github.com/kcp-dev/apimachinery/v2/third_party/informers"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/metrics"
	"github.com/workspacemounts/workspacemounts/pkg/mount"
	"github.com/workspacemounts/workspacemounts/pkg/version"
	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	"github.com/workspacemounts/workspacemounts/virtual/authorization"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// noWatchList makes the reflector list, then watch (the fake watch sends no
// initial-events-end bookmark).
type noWatchList struct {
	*cache.ListWatch
}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// testStore is a synced Store over a kcp informer that lists workspaces and
// then watches nothing.
func testStore(t testing.TB, workspaces ...*tenancyv1alpha1.Workspace) *wsmregistry.Store {
	t.Helper()
	store, _ := testStoreWatching(t, workspaces...)
	return store
}

// testStoreWatching is testStore, and the informer's watch, through which
// the caller changes the Workspaces (resource versions above 100).
func testStoreWatching(t testing.TB, workspaces ...*tenancyv1alpha1.Workspace) (*wsmregistry.Store, *watch.FakeWatcher) {
	t.Helper()
	list := &tenancyv1alpha1.WorkspaceList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
	for i, ws := range workspaces {
		ws = ws.DeepCopy()
		ws.ResourceVersion = fmt.Sprint(10 + i)
		list.Items = append(list.Items, *ws)
	}
	source := watch.NewFake()
	informer := kcpinformers.NewSharedIndexInformer(noWatchList{&cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list.DeepCopy(), nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return source, nil },
	}}, &tenancyv1alpha1.Workspace{}, 0, cache.Indexers{})
	store := wsmregistry.NewStore(mount.Rule{})
	require.NoError(t, store.AddShard("", informer, nil))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go informer.Run(ctx.Done())
	require.Eventually(t, store.HasSynced, 5*time.Second, 10*time.Millisecond)
	return store, source
}

func mountedWorkspace(cluster, name string, phase mount.Phase) *tenancyv1alpha1.Workspace {
	ref := tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				logicalcluster.AnnotationKey: cluster,
				mount.StatusAnnotationKey:    mount.Status{Phase: phase, Ready: phase == mount.PhaseReady, Reason: "R", MountRef: mount.Reference(ref)}.Encode(),
			},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: ref}},
	}
}

// pki is a client CA, and certificates it signed.
type pki struct {
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "test-client-ca"}, key)
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600))
	return &pki{caCert: ca, caKey: key, caFile: caFile}
}

// clientCert is a client certificate for a user in groups.
func (p *pki) clientCert(t testing.TB, userName string, groups ...string) tls.Certificate {
	t.Helper()
	return p.sign(t, pkix.Name{CommonName: userName, Organization: groups}, nil)
}

// requestHeader are the options of a server that believes the X-Remote-*
// headers of p's client certificates named kcp-front-proxy.
func (p *pki) requestHeader() genericapiserveroptions.RequestHeaderAuthenticationOptions {
	return genericapiserveroptions.RequestHeaderAuthenticationOptions{
		ClientCAFile:        p.caFile,
		AllowedNames:        []string{"kcp-front-proxy"},
		UsernameHeaders:     []string{"X-Remote-User"},
		GroupHeaders:        []string{"X-Remote-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	}
}

// sign is a client certificate of subject and dnsNames, signed by p's CA.
func (p *pki) sign(t testing.TB, subject pkix.Name, dnsNames []string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      subject,
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, p.caCert, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// testServer is the virtual workspace, served on a free loopback port.
type testServer struct {
	url       string
	serverCAs *x509.CertPool
	pki       *pki
	asked     chan authorizationv1.SubjectAccessReviewSpec
}

// startServer serves the virtual workspace with client-certificate
// authentication, after configure had its say on the options and
// dependencies.
func startServer(t testing.TB, configure func(*testServer, *Options, *Dependencies)) *testServer {
	t.Helper()
	ts := &testServer{pki: newPKI(t), asked: make(chan authorizationv1.SubjectAccessReviewSpec, 100)}

	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := NewOptions()
	o.SecureServing.Listener = listener
	o.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	certDir := t.TempDir()
	o.SecureServing.ServerCert.CertDirectory = certDir
	o.ClientCert.ClientCA = ts.pki.caFile

	store := testStore(t,
		mountedWorkspace("c1", "a", mount.PhaseReady),
		mountedWorkspace("c1", "b", mount.PhaseConnecting),
		mountedWorkspace("c2", "x", mount.PhaseReady),
	)
	// alice may get and list workspaces in c1; nobody may anything elsewhere.
	review := func(_ context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
		select {
		case ts.asked <- spec:
		default:
		}
		return cluster == "c1" && spec.User == "alice", nil
	}
	// The shard holds c1 and c2.
	exists := func(cluster logicalcluster.Name) bool { return cluster == "c1" || cluster == "c2" }
	getWorkspace := func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, error) {
		if cluster == "root" && name == "org" {
			return &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "c1"}}, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}

	deps := Dependencies{
		Store:          store,
		Authorizer:     authorization.New(authorization.NewReviews(review, authorization.DefaultReviewOptions(), nil), exists),
		GetWorkspace:   getWorkspace,
		ClustersSynced: func() bool { return true },
	}
	if configure != nil {
		configure(ts, o, &deps)
	}
	require.NoError(t, o.Validate())
	completed, err := o.Complete()
	require.NoError(t, err)
	require.Empty(t, o.SecureServing.ServerCert.CertKey.CertFile, "Complete leaves the options as they are")
	server, err := New(completed, deps)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, server) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("the server ended with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the server did not stop")
		}
	})

	// The self-signed serving certificate written into the cert dir.
	servingCert, err := os.ReadFile(filepath.Join(certDir, "workspacemounts.crt"))
	require.NoError(t, err)
	ts.serverCAs = x509.NewCertPool()
	require.True(t, ts.serverCAs.AppendCertsFromPEM(servingCert))
	ts.url = "https://" + listener.Addr().String()

	// Serving: any answer will do (the store is synced already).
	probe := ts.client(t, "")
	require.Eventually(t, func() bool {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.url+"/readyz", http.NoBody)
		require.NoError(t, err)
		resp, err := probe.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return true
	}, 30*time.Second, 50*time.Millisecond, "the server did not start serving")
	return ts
}

// client is an HTTPS client trusting the server, with a client certificate
// for userName unless it is empty.
func (ts *testServer) client(t testing.TB, userName string, groups ...string) *http.Client {
	t.Helper()
	config := &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12}
	if userName != "" {
		config.Certificates = []tls.Certificate{ts.pki.clientCert(t, userName, groups...)}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
}

func do(t *testing.T, client *http.Client, method, url string) (int, []byte) {
	t.Helper()
	code, body, _ := doWithHeaders(t, client, method, url)
	return code, body
}

// doWithHeaders is do, with the response's headers.
func doWithHeaders(t *testing.T, client *http.Client, method, url string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body, resp.Header
}

const resourcePath = "/apis/workspacemounts.io/v1alpha1/workspacemounts"

func clusterURL(ts *testServer, cluster, rest string) string {
	return ts.url + "/services/workspacemounts/clusters/" + cluster + rest
}

func TestServer(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	alice := ts.client(t, "alice", "team-a")
	bob := ts.client(t, "bob")
	anonymous := ts.client(t, "")

	listNames := func(t *testing.T, body []byte) []string {
		t.Helper()
		var list wsmv1alpha1.WorkspaceMountList
		require.NoError(t, json.Unmarshal(body, &list), "%s", body)
		require.Equal(t, "WorkspaceMountList", list.Kind)
		require.Equal(t, "workspacemounts.io/v1alpha1", list.APIVersion)
		names := make([]string, 0, len(list.Items))
		for _, item := range list.Items {
			names = append(names, logicalcluster.From(&item).String()+"/"+item.Name)
		}
		return names
	}

	t.Run("list in a cluster", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Equal(t, []string{"c1/a", "c1/b"}, listNames(t, body))
	})
	t.Run("list through a workspace path", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "root:org", resourcePath))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Equal(t, []string{"c1/a", "c1/b"}, listNames(t, body))
	})
	t.Run("what does not exist is answered as what is not visible", func(t *testing.T) {
		t.Parallel()
		forbiddenCode, forbidden := do(t, alice, http.MethodGet, clusterURL(ts, "c2", resourcePath))
		require.Equal(t, http.StatusForbidden, forbiddenCode, "%s", forbidden)
		for _, target := range []string{"root:nope", "c3", "x00001z", "system:a:a:a:a"} {
			code, body := do(t, alice, http.MethodGet, clusterURL(ts, target, resourcePath))
			require.Equal(t, http.StatusForbidden, code, "%s: %s", target, body)
			require.Equal(t, string(forbidden), strings.ReplaceAll(string(body), target, "c2"), target)
		}
	})
	t.Run("only what an API client needs is served", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/flags/v", "/metrics", "/metrics/slis", "/", "/logs/", "/configz"} {
			code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", path))
			require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, code, "%s: %s", path, body)
		}
		for _, path := range []string{"/apis", "/apis/workspacemounts.io/v1alpha1", "/openapi/v3", "/version"} {
			code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", path))
			require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		}
	})
	t.Run("/version is this build's", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", "/version"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		var got apimachineryversion.Info
		require.NoError(t, json.Unmarshal(body, &got), "%s", body)
		require.Equal(t, version.Get().APIServer(), got)
	})
	t.Run("list with a field selector", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath+"?fieldSelector=status.phase%3DReady"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Equal(t, []string{"c1/a"}, listNames(t, body))
	})
	t.Run("unsupported field selector", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath+"?fieldSelector=spec.x%3Dy"))
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
	})
	t.Run("list at * is filtered", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "*", resourcePath))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Equal(t, []string{"c1/a", "c1/b"}, listNames(t, body))

		code, body = do(t, bob, http.MethodGet, clusterURL(ts, "*", resourcePath))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Empty(t, listNames(t, body))
	})
	t.Run("get", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath+"/a"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		var wsm wsmv1alpha1.WorkspaceMount
		require.NoError(t, json.Unmarshal(body, &wsm))
		require.Equal(t, "WorkspaceMount", wsm.Kind)
		require.Equal(t, "a", wsm.Name)
		require.Equal(t, "Ready", wsm.Status.Phase)

		code, _ = do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath+"/nope"))
		require.Equal(t, http.StatusNotFound, code)
		code, _ = do(t, alice, http.MethodGet, clusterURL(ts, "*", resourcePath+"/a"))
		require.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("table", func(t *testing.T) {
		t.Parallel()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "c1", resourcePath), http.NoBody)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := alice.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var table metav1.Table
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&table))
		require.Equal(t, "Table", table.Kind)
		require.Len(t, table.Rows, 2)
		require.Equal(t, "Name", table.ColumnDefinitions[0].Name)
	})
	t.Run("every output of a list at * holds only what alice may see", func(t *testing.T) {
		t.Parallel()
		get := func(t *testing.T, query, accept string) []byte {
			t.Helper()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "*", resourcePath)+query, http.NoBody)
			require.NoError(t, err)
			req.Header.Set("Accept", accept)
			resp, err := alice.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			return body
		}
		require.Equal(t, []string{"c1/a", "c1/b"}, listNames(t, get(t, "", "application/json")))
		require.Equal(t, []string{"c1/a", "c1/b"}, listNames(t, get(t, "?pretty=true", "application/json")))
		page := get(t, "?limit=1", "application/json")
		require.Equal(t, []string{"c1/a"}, listNames(t, page))

		yamlList := string(get(t, "", "application/yaml"))
		require.Contains(t, yamlList, "kind: WorkspaceMountList")
		require.Contains(t, yamlList, "name: a")
		require.NotContains(t, yamlList, "name: x")

		var partial metav1.PartialObjectMetadataList
		require.NoError(t, json.Unmarshal(get(t, "", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"), &partial))
		require.Equal(t, "PartialObjectMetadataList", partial.Kind)
		require.Len(t, partial.Items, 2)
		require.Equal(t, "b", partial.Items[1].Name)

		for _, tc := range []struct {
			includeObject, want string
		}{
			{includeObject: "", want: `"kind":"PartialObjectMetadata"`},
			{includeObject: "Metadata", want: `"kind":"PartialObjectMetadata"`},
			{includeObject: "Object", want: `"kind":"WorkspaceMount"`},
			{includeObject: "None", want: `"object":null`},
		} {
			query := ""
			if tc.includeObject != "" {
				query = "?includeObject=" + tc.includeObject
			}
			body := get(t, query, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
			var table metav1.Table
			require.NoError(t, json.Unmarshal(body, &table), "%s", body)
			require.Len(t, table.Rows, 2, tc.includeObject)
			require.Equal(t, "a", table.Rows[0].Cells[0], tc.includeObject)
			require.Contains(t, string(body), tc.want, tc.includeObject)
		}
	})
	t.Run("a Table of a list is what the handlers make of it, in either version", func(t *testing.T) {
		t.Parallel()
		// The same server without fastTables: every list the list handler's.
		generic := startServer(t, func(_ *testServer, _ *Options, deps *Dependencies) { deps.genericListsOnly = true })
		genericAlice := generic.client(t, "alice", "team-a")
		type answer struct {
			code            int
			contentType     string
			contentEncoding string
			warnings        []string
			body            string
		}
		requestTo := func(t *testing.T, ts *testServer, alice *http.Client, query, accept, acceptEncoding string) answer {
			t.Helper()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "*", resourcePath)+query, http.NoBody)
			require.NoError(t, err)
			req.Header.Set("Accept", accept)
			if acceptEncoding != "" {
				// Set by hand, Go's transport leaves the body as it comes.
				req.Header.Set("Accept-Encoding", acceptEncoding)
			}
			resp, err := alice.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return answer{
				code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), contentEncoding: resp.Header.Get("Content-Encoding"),
				warnings: resp.Header.Values("Warning"), body: string(body),
			}
		}
		request := func(t *testing.T, query, accept, acceptEncoding string) answer {
			t.Helper()
			return requestTo(t, ts, alice, query, accept, acceptEncoding)
		}
		get := func(t *testing.T, query, accept string) string {
			t.Helper()
			got := request(t, query, accept, "")
			require.Equal(t, http.StatusOK, got.code, "%s", got.body)
			return got.body
		}
		const v1, v1beta1 = "application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
		var firstPage metav1.Table
		require.NoError(t, json.Unmarshal([]byte(get(t, "?limit=1", v1)), &firstPage))
		require.NotEmpty(t, firstPage.Continue)
		// v1 Tables are fastTables', written from the store's JSON; the
		// server without it answers them with the list handler
		// (ConvertToTable, handlers.asTable, encoding/json), and so does
		// this one v1beta1 Tables, the same types but for apiVersion.
		for _, query := range []string{
			"", "?includeObject=Metadata", "?includeObject=Object", "?includeObject=None", "?limit=1",
			"?limit=1&continue=" + firstPage.Continue, "?labelSelector=team%3Dnone", "?fieldSelector=status.phase%3DReady",
			"?fieldSelector=metadata.name%3Db", "?resourceVersion=0", "?timeoutSeconds=10", "?pretty=true",
			// What the handler refuses, fastTables leaves to it.
			"?includeObject=Everything", "?fieldSelector=spec.x%3Dy", "?labelSelector=%3D%3D", "?continue=%25%25",
			"?resourceVersionMatch=Exact", "?limit=x", "?sendInitialEvents=true",
		} {
			for _, acceptEncoding := range []string{"", "gzip"} {
				fast := request(t, query, v1+",application/json", acceptEncoding)
				require.Equal(t, requestTo(t, generic, genericAlice, query, v1+",application/json", acceptEncoding), fast, "%s (%s)", query, acceptEncoding)
				handlers := request(t, query, v1beta1+",application/json", acceptEncoding)
				if handlers.code == http.StatusOK {
					require.Contains(t, handlers.body, `"meta.k8s.io/v1beta1"`)
				}
				handlers.body = strings.ReplaceAll(handlers.body, `"meta.k8s.io/v1beta1"`, `"meta.k8s.io/v1"`)
				require.Equal(t, handlers, fast, "%s (%s)", query, acceptEncoding)
				if acceptEncoding == "" && fast.code == http.StatusOK {
					require.Equal(t, fast, request(t, query, "application/json;as=Table;v=v2;g=meta.k8s.io,"+v1, ""), "the version negotiated, not the first asked")
				}
			}
		}
		// includeObject=Object: the objects as a list has them.
		var table struct {
			Rows []struct {
				Object json.RawMessage `json:"object"`
			} `json:"rows"`
		}
		require.NoError(t, json.Unmarshal([]byte(get(t, "?includeObject=Object", v1)), &table))
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		require.NoError(t, json.Unmarshal([]byte(get(t, "", "application/json")), &list))
		require.Len(t, table.Rows, len(list.Items))
		for i := range list.Items {
			require.JSONEq(t, string(list.Items[i]), string(table.Rows[i].Object))
		}
		// Pretty and YAML Tables hold the same.
		require.Contains(t, get(t, "?pretty=true", v1), `"kind": "PartialObjectMetadata"`)
		require.Contains(t, get(t, "", "application/yaml;as=Table;v=v1;g=meta.k8s.io"), "kind: PartialObjectMetadata")
	})
	t.Run("forbidden in another cluster", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c2", resourcePath))
		require.Equal(t, http.StatusForbidden, code, "%s", body)
		code, body = do(t, bob, http.MethodGet, clusterURL(ts, "c1", resourcePath))
		require.Equal(t, http.StatusForbidden, code, "%s", body)
	})
	t.Run("without a client certificate", func(t *testing.T) {
		t.Parallel()
		for _, url := range []string{clusterURL(ts, "c1", resourcePath), clusterURL(ts, "c1", "/apis"), clusterURL(ts, "root:nope", "/apis")} {
			code, body := do(t, anonymous, http.MethodGet, url)
			require.Equal(t, http.StatusUnauthorized, code, "%s: %s", url, body)
		}
	})
	t.Run("a certificate of another CA", func(t *testing.T) {
		t.Parallel()
		other := &testServer{serverCAs: ts.serverCAs, pki: newPKI(t)}
		code, _ := do(t, other.client(t, "alice"), http.MethodGet, clusterURL(ts, "c1", resourcePath))
		require.Equal(t, http.StatusUnauthorized, code)
	})
	t.Run("writes", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ method, path string }{
			{http.MethodPost, resourcePath},
			{http.MethodPut, resourcePath + "/a"},
			{http.MethodPatch, resourcePath + "/a"},
			{http.MethodDelete, resourcePath + "/a"},
			{http.MethodDelete, resourcePath},
			{http.MethodPost, "/apis"},
		} {
			code, body := do(t, alice, tc.method, clusterURL(ts, "c1", tc.path))
			require.Equal(t, http.StatusMethodNotAllowed, code, "%s %s: %s", tc.method, tc.path, body)
		}
	})
	t.Run("discovery", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", "/apis"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Contains(t, string(body), "workspacemounts.io")

		code, body = do(t, alice, http.MethodGet, clusterURL(ts, "c2", "/apis/workspacemounts.io/v1alpha1"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		var resources metav1.APIResourceList
		require.NoError(t, json.Unmarshal(body, &resources))
		require.Len(t, resources.APIResources, 1)
		r := resources.APIResources[0]
		require.Equal(t, "workspacemounts", r.Name)
		require.Equal(t, "workspacemount", r.SingularName)
		require.Equal(t, "WorkspaceMount", r.Kind)
		require.False(t, r.Namespaced)
		require.ElementsMatch(t, []string{"get", "list", "watch"}, []string(r.Verbs))
		require.Equal(t, []string{"wsm"}, r.ShortNames)
		require.Equal(t, []string{"kcp"}, r.Categories)
	})
	t.Run("openapi v3", func(t *testing.T) {
		t.Parallel()
		code, body := do(t, alice, http.MethodGet, clusterURL(ts, "c1", "/openapi/v3"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Contains(t, string(body), "apis/workspacemounts.io/v1alpha1")

		code, body = do(t, alice, http.MethodGet, clusterURL(ts, "c1", "/openapi/v3/apis/workspacemounts.io/v1alpha1"))
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.Contains(t, string(body), "io.workspacemounts.v1alpha1.WorkspaceMount")
	})
	t.Run("outside the prefix", func(t *testing.T) {
		t.Parallel()
		code, _ := do(t, alice, http.MethodGet, ts.url+resourcePath)
		require.Equal(t, http.StatusNotFound, code)
		code, _ = do(t, alice, http.MethodGet, clusterURL(ts, "Bad", "/apis"))
		require.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("health", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			code, body := do(t, alice, http.MethodGet, ts.url+path)
			require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		}
	})
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			query string
			want  []string
		}{
			{name: "from no resource version", query: "?watch=true", want: []string{"ADDED c1/a", "ADDED c1/b"}},
			{
				name:  "sendInitialEvents",
				query: "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
				want:  []string{"ADDED c1/a", "ADDED c1/b", "BOOKMARK initial-events-end"},
			},
			{name: "at *, filtered", query: "?watch=true", want: []string{"ADDED c1/a", "ADDED c1/b"}},
		} {
			cluster := "c1"
			if strings.HasPrefix(tc.name, "at *") {
				cluster = "*"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, clusterURL(ts, cluster, resourcePath+tc.query), http.NoBody)
			require.NoError(t, err)
			resp, err := alice.Do(req)
			require.NoError(t, err, tc.name)
			require.Equal(t, http.StatusOK, resp.StatusCode, tc.name)
			decoder := json.NewDecoder(resp.Body)
			var got []string
			for range tc.want {
				var e struct {
					Type   string                     `json:"type"`
					Object wsmv1alpha1.WorkspaceMount `json:"object"`
				}
				require.NoError(t, decoder.Decode(&e), tc.name)
				require.Equal(t, "WorkspaceMount", e.Object.Kind, tc.name)
				if e.Type == "BOOKMARK" {
					require.Equal(t, "true", e.Object.Annotations[metav1.InitialEventsAnnotationKey], tc.name)
					got = append(got, "BOOKMARK initial-events-end")
					continue
				}
				got = append(got, e.Type+" "+logicalcluster.From(&e.Object).String()+"/"+e.Object.Name)
			}
			require.Equal(t, tc.want, got, tc.name)
			cancel()
			resp.Body.Close()
		}
	})
	t.Run("kcp is asked about workspaces", func(t *testing.T) {
		t.Parallel()
		code, _ := do(t, alice, http.MethodGet, clusterURL(ts, "c1", resourcePath+"/b"))
		require.Equal(t, http.StatusOK, code)
		// Some question was about getting workspaces as alice.
		require.Eventually(t, func() bool {
			for {
				select {
				case spec := <-ts.asked:
					if spec.ResourceAttributes.Verb == "get" && spec.ResourceAttributes.Resource == "workspaces" && spec.User == "alice" {
						return true
					}
				default:
					return false
				}
			}
		}, 5*time.Second, 10*time.Millisecond)
	})
}

// TestServerLargeTables: a Table of a list over 128 KiB comes gzipped when
// asked so, from fastTables (v1) as from the handlers (v1beta1), and the
// same once unzipped.
func TestServerLargeTables(t *testing.T) {
	t.Parallel()
	const n = 1000
	ts := startServerForAlice(t, testStore(t, benchWorkspaces(n)...))
	alice := ts.client(t, "alice")
	get := func(t *testing.T, version string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "*", resourcePath), http.NoBody)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/json;as=Table;v="+version+";g=meta.k8s.io")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := alice.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
		unzipped, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		body, err := io.ReadAll(unzipped)
		require.NoError(t, err)
		require.Greater(t, len(body), 128<<10)
		return string(body)
	}
	require.Equal(t, strings.ReplaceAll(get(t, "v1beta1"), `"meta.k8s.io/v1beta1"`, `"meta.k8s.io/v1"`), get(t, "v1"))
}

// TestServerFrontProxyAndTokens: behind kcp's front-proxy, the user comes in
// X-Remote-User headers of a request with the proxy's client certificate;
// a bearer token is reviewed by kcp (TokenReview) in the cluster of the
// TokenReview config; client certificates go on working.
func TestServerFrontProxyAndTokens(t *testing.T) {
	t.Parallel()

	var reviewedPaths = make(chan string, 100)
	kcp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var review authenticationv1.TokenReview
		if req.Method != http.MethodPost || json.NewDecoder(req.Body).Decode(&review) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		select {
		case reviewedPaths <- req.URL.Path:
		default:
		}
		review.APIVersion, review.Kind = "authentication.k8s.io/v1", "TokenReview"
		if review.Spec.Token == "alice-token" {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(kcp.Close)

	frontProxy := newPKI(t)
	ts := startServer(t, func(_ *testServer, o *Options, deps *Dependencies) {
		o.RequestHeader = frontProxy.requestHeader()
		deps.TokenReviewConfig = &clientrest.Config{Host: kcp.URL + "/clusters/root"}
	})
	url := clusterURL(ts, "c1", resourcePath)

	client := func(t *testing.T, p *pki, commonName string) *http.Client {
		t.Helper()
		config := &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12}
		if p != nil {
			config.Certificates = []tls.Certificate{p.clientCert(t, commonName)}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
	}
	get := func(t *testing.T, c *http.Client, headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}

	proxy := client(t, frontProxy, "kcp-front-proxy")
	for _, tc := range []struct {
		name    string
		client  *http.Client
		headers map[string]string
		want    int
	}{
		{name: "front-proxy for alice", client: proxy, headers: map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "team-a"}, want: http.StatusOK},
		{name: "front-proxy for bob", client: proxy, headers: map[string]string{"X-Remote-User": "bob"}, want: http.StatusForbidden},
		{name: "front-proxy without a user", client: proxy, want: http.StatusUnauthorized},
		{name: "a certificate of the proxy's CA with another name", client: client(t, frontProxy, "mallory"), headers: map[string]string{"X-Remote-User": "alice"}, want: http.StatusUnauthorized},
		{name: "a client certificate, with headers ignored", client: ts.client(t, "bob"), headers: map[string]string{"X-Remote-User": "alice"}, want: http.StatusForbidden},
		{name: "a client certificate", client: ts.client(t, "alice"), want: http.StatusOK},
		{name: "alice's token", client: client(t, nil, ""), headers: map[string]string{"Authorization": "Bearer alice-token"}, want: http.StatusOK},
		{name: "an unknown token", client: client(t, nil, ""), headers: map[string]string{"Authorization": "Bearer nope"}, want: http.StatusUnauthorized},
		{name: "nothing", client: client(t, nil, ""), want: http.StatusUnauthorized},
	} {
		require.Equal(t, tc.want, get(t, tc.client, tc.headers), tc.name)
	}
	select {
	case path := <-reviewedPaths:
		require.Equal(t, "/clusters/root/apis/authentication.k8s.io/v1/tokenreviews", path)
	default:
		t.Fatal("no TokenReview reached kcp")
	}
}

// TestServerRequestHeaderDedicatedCA: over real TLS, a front-proxy client
// certificate without a common name (as kcp-dev/helm-charts' kcp chart issues
// it: a DNS name only) is refused with allowed names, as Kubernetes' verifier
// matches common names only, and accepted with --requestheader-dedicated-ca,
// which trusts every certificate of the CA; a certificate of another CA is
// refused either way.
func TestServerRequestHeaderDedicatedCA(t *testing.T) {
	t.Parallel()
	frontProxy, stranger := newPKI(t), newPKI(t)
	withoutCN := func(t *testing.T, p *pki) tls.Certificate {
		t.Helper()
		cert := p.sign(t, pkix.Name{}, []string{"kcp-front-proxy"})
		parsed, err := x509.ParseCertificate(cert.Certificate[0])
		require.NoError(t, err)
		require.Empty(t, parsed.Subject.CommonName)
		return cert
	}
	for _, tc := range []struct {
		name                 string
		dedicated            bool
		allowedNames         []string
		wantProxy, wantOther int
	}{
		{name: "allowed names (the default)", allowedNames: []string{"kcp-front-proxy"}, wantProxy: http.StatusUnauthorized, wantOther: http.StatusUnauthorized},
		{name: "a dedicated CA", dedicated: true, wantProxy: http.StatusOK, wantOther: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, func(_ *testServer, o *Options, _ *Dependencies) {
				fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
				o.AddFlags(fs)
				args := []string{"--requestheader-client-ca-file=" + frontProxy.caFile, "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group"}
				if tc.dedicated {
					args = append(args, "--requestheader-dedicated-ca")
				}
				if len(tc.allowedNames) > 0 {
					args = append(args, "--requestheader-allowed-names="+strings.Join(tc.allowedNames, ","))
				}
				require.NoError(t, fs.Parse(args))
			})
			get := func(cert tls.Certificate) int {
				config := &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
				client := &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
				req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, clusterURL(ts, "c1", resourcePath), http.NoBody)
				require.NoError(t, err)
				req.Header.Set("X-Remote-User", "alice")
				resp, err := client.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
				return resp.StatusCode
			}
			require.Equal(t, tc.wantProxy, get(withoutCN(t, frontProxy)), "the front-proxy's certificate without a common name")
			require.Equal(t, tc.wantOther, get(withoutCN(t, stranger)), "a certificate of another CA")
		})
	}
}

// TestServerSelectorsDoNotChangeReviews: at *, the SubjectAccessReviews a
// list costs do not depend on objects its user cannot see: a selector that
// matches only c2/x (alice may not see c2) costs what one that matches
// nothing costs, a review per cluster, with and without a limit; counted
// where kcp is asked, and by the plugin's own
// workspacemounts_authorization_reviews_total.
//
//nolint:paralleltest // the review counter is the process's: no other test may review meanwhile
func TestServerSelectorsDoNotChangeReviews(t *testing.T) {
	metrics.Register()
	counted := func() float64 {
		var sum float64
		for _, result := range []string{metrics.ReviewAllowed, metrics.ReviewDenied, metrics.ReviewError} {
			v, err := testutil.GetCounterMetricValue(metrics.AuthorizationReviews.WithLabelValues(result))
			require.NoError(t, err)
			sum += v
		}
		return sum
	}
	var lock sync.Mutex
	reviews := map[string]int{} // per user
	ts := startServer(t, func(_ *testServer, _ *Options, deps *Dependencies) {
		review := func(_ context.Context, cluster logicalcluster.Name, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
			lock.Lock()
			defer lock.Unlock()
			reviews[spec.User]++
			return cluster == "c1", nil
		}
		exists := func(cluster logicalcluster.Name) bool { return cluster == "c1" || cluster == "c2" }
		deps.Authorizer = authorization.New(authorization.NewReviews(review, authorization.DefaultReviewOptions(), nil), exists)
	})
	for i, query := range []string{"", "&limit=1"} {
		before := counted()
		// A user of their own per request: nothing remembered.
		matching, notMatching := fmt.Sprintf("matching-%d", i), fmt.Sprintf("not-matching-%d", i)
		for user, selector := range map[string]string{matching: "x", notMatching: "nope"} {
			code, body := do(t, ts.client(t, user), http.MethodGet, clusterURL(ts, "*", resourcePath+"?fieldSelector=metadata.name%3D"+selector+query))
			require.Equal(t, http.StatusOK, code, "%s", body)
		}
		lock.Lock()
		require.Equal(t, 2, reviews[matching], "%q: a review per cluster", query)
		require.Equal(t, reviews[notMatching], reviews[matching], query)
		lock.Unlock()
		require.InDelta(t, float64(reviews[matching]+reviews[notMatching]), counted()-before, 0, "%q: authorization_reviews_total counts each review", query)
	}
}

// TestServerWatchTimeout: through the handlers, a watch lasts at most
// --max-watch-timeout, whatever timeoutSeconds it asks for (none, or a
// year), and at least half of it; one asking for less lasts that.
func TestServerWatchTimeout(t *testing.T) {
	t.Parallel()
	const maxTimeout = 4 * time.Second
	ts := startServer(t, func(_ *testServer, o *Options, _ *Dependencies) { o.MaxWatchTimeout = maxTimeout })
	alice := ts.client(t, "alice")
	for _, tc := range []struct {
		query    string
		min, max time.Duration
	}{
		{query: "?watch=true", min: maxTimeout / 2, max: maxTimeout},
		{query: "?watch=true&timeoutSeconds=31536000", min: maxTimeout / 2, max: maxTimeout},
		{query: "?watch=true&timeoutSeconds=1", min: time.Second, max: time.Second},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, clusterURL(ts, "c1", resourcePath+tc.query), http.NoBody)
			require.NoError(t, err)
			began := time.Now()
			resp, err := alice.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			_, err = io.Copy(io.Discard, resp.Body) // until the server ends the watch
			require.NoError(t, err)
			lasted := time.Since(began)
			require.GreaterOrEqual(t, lasted, tc.min)
			require.Less(t, lasted, tc.max+time.Second)
		})
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	o := NewOptions()
	require.Equal(t, DefaultSecurePort, o.SecureServing.BindPort)
	require.NoError(t, o.Validate())

	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--secure-port=7443", "--client-ca-file=/ca.crt", "--requestheader-client-ca-file=/rh.crt",
		"--authentication-kubeconfig=/kc", "--authentication-token-webhook-cache-ttl=1m",
	}))
	require.Equal(t, 30*time.Minute, NewOptions().MaxWatchTimeout)
	require.NoError(t, fs.Parse([]string{"--max-watch-timeout=10m"}))
	require.Equal(t, 10*time.Minute, o.MaxWatchTimeout)
	require.Equal(t, 7443, o.SecureServing.BindPort)
	require.Equal(t, "/ca.crt", o.ClientCert.ClientCA)
	require.Equal(t, "/rh.crt", o.RequestHeader.ClientCAFile)
	require.Equal(t, "/kc", o.AuthenticationKubeconfig)
	require.Equal(t, time.Minute, o.TokenCacheTTL)

	o.TokenCacheTTL = -time.Second
	require.ErrorContains(t, o.Validate(), "must not be negative")
	o = NewOptions()
	o.SecureServing.BindPort = 70000
	require.Error(t, o.Validate())
	o = NewOptions()
	o.MaxWatchTimeout = time.Second
	require.ErrorContains(t, o.Validate(), "--max-watch-timeout must be at least 2s")
}

// TestOptionsRequestHeaderNeedsAllowedNames: a request-header CA without
// allowed names would let any certificate of that CA assert any user and
// group; the plugin refuses to start with one line naming both flags, unless
// --requestheader-dedicated-ca says so explicitly (and alone).
func TestOptionsRequestHeaderNeedsAllowedNames(t *testing.T) {
	t.Parallel()
	const needsNames = "--requestheader-client-ca-file needs --requestheader-allowed-names"
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
	}{
		"no request header CA":                {args: nil},
		"CA and the front-proxy's name":       {args: []string{"--requestheader-client-ca-file=/rh.crt", "--requestheader-allowed-names=kcp-front-proxy"}},
		"CA without allowed names":            {args: []string{"--requestheader-client-ca-file=/rh.crt"}, wantErr: needsNames},
		"CA with an empty allowed names":      {args: []string{"--requestheader-client-ca-file=/rh.crt", "--requestheader-allowed-names="}, wantErr: needsNames},
		"allowed names without a CA (unused)": {args: []string{"--requestheader-allowed-names=kcp-front-proxy"}},
		"a dedicated CA":                      {args: []string{"--requestheader-client-ca-file=/rh.crt", "--requestheader-dedicated-ca"}},
		"a dedicated CA, said false":          {args: []string{"--requestheader-client-ca-file=/rh.crt", "--requestheader-dedicated-ca=false"}, wantErr: needsNames},
		"a dedicated CA with allowed names": {
			args:    []string{"--requestheader-client-ca-file=/rh.crt", "--requestheader-dedicated-ca", "--requestheader-allowed-names=kcp-front-proxy"},
			wantErr: "--requestheader-dedicated-ca and --requestheader-allowed-names exclude each other",
		},
		"dedicated without a CA": {args: []string{"--requestheader-dedicated-ca"}, wantErr: "--requestheader-dedicated-ca needs --requestheader-client-ca-file"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			err := o.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.NotContains(t, err.Error(), "\n", "one line")
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
