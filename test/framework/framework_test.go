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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	kcptestinghelpers "github.com/kcp-dev/sdk/testing/helpers"

	"github.com/workspacemounts/workspacemounts/pkg/doctor"
)

// TestLogTail: a log's tail is read from its last 64 KiB, from where a
// start's output begins, and cut to its last lines, a partial one included.
func TestLogTail(t *testing.T) {
	t.Parallel()

	p := &Process{LogPath: filepath.Join(t.TempDir(), "kcp.log")}
	require.Contains(t, p.LogTail(1), "(reading the log: ")
	data := strings.Repeat("x", logTailBytes) + "\nline1\nline2\nline3\npartial"
	require.NoError(t, os.WriteFile(p.LogPath, []byte(data), 0o600))
	require.Len(t, p.readLog(0), logTailBytes, "keeps the last 64 KiB")
	require.Equal(t, "line2\nline3\npartial", p.LogTail(3))
	require.Equal(t, "partial", p.LogTail(1))
	require.Equal(t, "line3\npartial", p.readLog(int64(len(data)-len("line3\npartial"))), "from a start's offset")
	require.Equal(t, "e3\npartial", lastLines("e3\npartial\n", 5))
}

func TestGoModModule(t *testing.T) {
	t.Parallel()

	require.Equal(t, "example.com/a", goModModule([]byte("// comment\nmodule example.com/a\n\ngo 1.24\n")))
	require.Equal(t, "example.com/b", goModModule([]byte(`module "example.com/b"`)))
	require.Empty(t, goModModule([]byte("go 1.24\n")))
}

func TestRepoRoot(t *testing.T) {
	t.Parallel()

	root, err := RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, modulePath, goModModule(data))
}

func TestUniqueName(t *testing.T) {
	t.Parallel()

	a, b := UniqueName("Test"), UniqueName("Test")
	require.NotEqual(t, a, b)
	require.Regexp(t, `^test-[a-z0-9]{5}$`, a)
	require.Len(t, UniqueName(strings.Repeat("x", 100)), 63)
}

func TestClusterAwareConfig(t *testing.T) {
	t.Parallel()

	for host, want := range map[string]string{
		"https://127.0.0.1:6443":                    "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root":      "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root:a:b/": "https://127.0.0.1:6443",
	} {
		require.Equal(t, want, clusterAwareConfig(&rest.Config{Host: host}).Host, host)
	}
}

func TestMountCRD(t *testing.T) {
	t.Parallel()

	crd := MountCRD("contrib.kcp.io", "KubeCluster", "kubeclusters", apiextensionsv1.ClusterScoped)
	require.Equal(t, "kubeclusters.contrib.kcp.io", crd.Name)
	require.NotNil(t, crd.Spec.Versions[0].Subresources.Status)
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	require.ElementsMatch(t, []string{"phase", "URL", "conditions", "lastHeartbeatTime", "lastProxyHeartbeatTime"}, keys(status.Properties))
	require.True(t, *crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XPreserveUnknownFields)

	schema, err := apisv1alpha1.CRDToAPIResourceSchema(crd, "v1")
	require.NoError(t, err)
	require.Equal(t, "v1.kubeclusters.contrib.kcp.io", schema.Name)
}

func TestStartMissingBinary(t *testing.T) {
	t.Parallel()

	_, err := Start(t.Context(), Options{Binary: filepath.Join(t.TempDir(), "kcp")})
	require.ErrorContains(t, err, "make kcp")
}

func TestStartEarlyExit(t *testing.T) {
	t.Parallel()

	binary := fakeKCP(t, `echo "the log says why"; exit 3`)
	_, err := Start(t.Context(), Options{Binary: binary, RootDir: t.TempDir()})
	require.ErrorContains(t, err, "kcp exited before it became ready")
	require.ErrorContains(t, err, "the log says why")
	require.ErrorContains(t, err, "exit status 3")
}

func TestStartRetriesTakenPorts(t *testing.T) {
	t.Parallel()

	runs := filepath.Join(t.TempDir(), "runs")
	binary := fakeKCP(t, `echo run >> `+runs+`; echo "listen tcp 127.0.0.1:1234: bind: address already in use"; exit 1`)
	_, err := Start(t.Context(), Options{Binary: binary})
	require.ErrorIs(t, err, errPortInUse)
	data, err := os.ReadFile(runs)
	require.NoError(t, err)
	require.Equal(t, startAttempts, strings.Count(string(data), "run"))
}

func TestStartCancelled(t *testing.T) {
	t.Parallel()

	marker := filepath.Join(t.TempDir(), "terminated")
	binary := fakeKCP(t, `trap 'echo > `+marker+`; exit 0' TERM; while true; do sleep 0.05; done`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	t.Cleanup(cancel)
	_, err := Start(ctx, Options{Binary: binary, RootDir: t.TempDir()})
	require.ErrorContains(t, err, "waiting for kcp")
	require.ErrorContains(t, err, "admin.kubeconfig not written yet")
	require.FileExists(t, marker, "kcp got SIGTERM")
}

// fakeKCP writes a shell script that stands in for the kcp binary.
func fakeKCP(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kcp")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return path
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fakeKCPEnv makes TestFakeKCPProcess act as kcp instead of testing.
const fakeKCPEnv = "WORKSPACEMOUNTS_FRAMEWORK_FAKE_KCP"

// fakeKCPServer writes a script standing in for the kcp binary that runs this
// test binary's TestFakeKCPProcess as a fake kcp: enough of `kcp start` for
// Start, StopProcess, StartAgain, Restart, Pause and Resume.
func fakeKCPServer(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return fakeKCP(t, fakeKCPEnv+`=1 exec '`+self+`' -test.run='^TestFakeKCPProcess$' -- "$@"`)
}

// startFakeKCP starts a fake kcp (fakeKCPServer) that the test stops or
// kills at will, and stops it at the end.
func startFakeKCP(t *testing.T) *Server {
	t.Helper()
	s, err := Start(t.Context(), Options{Binary: fakeKCPServer(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestFakeKCPProcess is not a test: run by fakeKCPServer's script, it serves
// as kcp does with --root-directory, --kubeconfig-path and --secure-port:
// /readyz on 127.0.0.1 for the shard-base token of admin.kubeconfig, which it
// writes once listening. The serving certificate and that token are kept in
// the root directory, as kcp keeps them. It exits 0 on SIGTERM, and 7 once
// the root directory holds a file "exit-now".
func TestFakeKCPProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv(fakeKCPEnv) == "" {
		t.Skip("only run as a fake kcp by the tests of Server")
	}
	args := map[string]string{}
	for i, arg := range os.Args {
		if arg == "--" {
			for _, flag := range os.Args[i+1:] {
				if name, value, ok := strings.Cut(flag, "="); ok {
					args[name] = value
				}
			}
		}
	}
	root := args["--root-directory"]
	fmt.Printf("fake kcp pid %d starting\n", os.Getpid())

	certPath, keyPath := filepath.Join(root, "apiserver.crt"), filepath.Join(root, "apiserver.key")
	if _, err := os.Stat(certPath); err != nil {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(certPath, certPEM, 0o600))
		require.NoError(t, os.WriteFile(keyPath, keyPEM, 0o600))
	}
	tokenPath := filepath.Join(root, ".admin-token-store")
	if _, err := os.Stat(tokenPath); err != nil {
		require.NoError(t, os.WriteFile(tokenPath, []byte(UniqueName("token")), 0o600))
	}
	certPEM, err := os.ReadFile(certPath)
	require.NoError(t, err)
	token, err := os.ReadFile(tokenPath)
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	require.NoError(t, err)

	listener, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:"+args["--secure-port"])
	if err != nil {
		fmt.Println(err) // "... bind: address already in use", as kcp says it
		os.Exit(1)
	}
	server := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+string(token) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, "ok")
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = server.ServeTLS(listener, "", "") }()

	base := "https://" + listener.Addr().String()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["base"] = &clientcmdapi.Cluster{Server: base, CertificateAuthorityData: certPEM}
	kubeconfig.Clusters["root"] = &clientcmdapi.Cluster{Server: base + "/clusters/root", CertificateAuthorityData: certPEM}
	kubeconfig.AuthInfos["shard-admin"] = &clientcmdapi.AuthInfo{Token: string(token)}
	kubeconfig.AuthInfos["kcp-admin"] = &clientcmdapi.AuthInfo{Token: UniqueName("volatile")}
	kubeconfig.Contexts["shard-base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: "shard-admin"}
	kubeconfig.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: "kcp-admin"}
	kubeconfig.Contexts["root"] = &clientcmdapi.Context{Cluster: "root", AuthInfo: "kcp-admin"}
	kubeconfig.CurrentContext = "root"
	require.NoError(t, clientcmd.WriteToFile(*kubeconfig, args["--kubeconfig-path"]))
	fmt.Printf("fake kcp pid %d serving at %s\n", os.Getpid(), base)

	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM)
	for {
		select {
		case <-terminated:
			fmt.Printf("fake kcp pid %d terminating\n", os.Getpid())
			os.Exit(0)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(root, "exit-now")); err == nil {
			fmt.Printf("fake kcp pid %d exiting by itself\n", os.Getpid())
			os.Exit(7)
		}
	}
}

// readyz GETs /readyz of s with the shard-base credentials, within timeout.
func readyz(t *testing.T, s *Server, timeout time.Duration) error {
	t.Helper()
	cfg, err := s.BaseConfig("shard-base")
	require.NoError(t, err)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	client.Timeout = timeout
	ok, state := probe(t.Context(), client, s.BaseURL+"/readyz")
	if !ok {
		return errors.New(state)
	}
	return nil
}

// TestServerRestart: Restart stops kcp and starts it again on the same
// address, root directory and log, in a new process, and ready.
func TestServerRestart(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)
	base, root, pid := s.BaseURL, s.RootDir, s.Pid()
	require.NoError(t, s.CheckRunning())

	require.NoError(t, s.Restart(t.Context()))
	require.NoError(t, s.CheckRunning())
	require.Equal(t, base, s.BaseURL)
	require.Equal(t, root, s.RootDir)
	require.NotEqual(t, pid, s.Pid(), "a new process")
	require.NoError(t, readyz(t, s, 5*time.Second))
	require.Positive(t, s.ReadyAfter)

	log, err := os.ReadFile(s.LogPath)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(log), "serving at "+base), "both starts in one log:\n%s", log)
	require.Contains(t, string(log), fmt.Sprintf("fake kcp pid %d terminating", pid))
	require.Contains(t, s.LogTail(5), "kcp started again (start 2)")
	require.Contains(t, s.LogTail(5), fmt.Sprintf("fake kcp pid %d serving", s.Pid()))

	require.NoError(t, s.Stop())
	require.NoDirExists(t, root, "Stop removes a root directory of its own")
	require.ErrorContains(t, s.StartAgain(t.Context()), "stopped for good")
	require.ErrorContains(t, s.Restart(t.Context()), "stopped for good")
	require.ErrorContains(t, s.CheckRunning(), "stopped by Stop")
	require.NoError(t, s.Stop(), "Stop again")
}

// TestServerStopProcessAndKill: kcp stopped by StopProcess or killed by Kill
// is not running, keeps its root directory and starts again with StartAgain;
// StartAgain refuses a running kcp.
func TestServerStopProcessAndKill(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)
	require.ErrorContains(t, s.StartAgain(t.Context()), "still running")

	require.NoError(t, s.StopProcess())
	require.ErrorContains(t, s.CheckRunning(), "stopped by StopProcess")
	require.FileExists(t, s.KubeconfigPath)
	require.Error(t, readyz(t, s, time.Second), "nothing listens")
	require.NoError(t, s.StopProcess(), "StopProcess again")
	require.NoError(t, s.StartAgain(t.Context()))
	require.NoError(t, s.CheckRunning())
	require.NoError(t, readyz(t, s, 5*time.Second))

	pid := s.Pid()
	require.NoError(t, s.Kill())
	require.ErrorContains(t, s.CheckRunning(), "killed by Kill")
	log, err := os.ReadFile(s.LogPath)
	require.NoError(t, err)
	require.NotContains(t, string(log), fmt.Sprintf("fake kcp pid %d terminating", pid), "SIGKILL, no SIGTERM")
	require.NoError(t, s.StartAgain(t.Context()))
	require.NoError(t, readyz(t, s, 5*time.Second))
}

// TestServerExitedByItself: a kcp that exits by itself is reported by
// CheckRunning and StopProcess, and can be started again.
func TestServerExitedByItself(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)
	marker := filepath.Join(s.RootDir, "exit-now")
	require.NoError(t, os.WriteFile(marker, nil, 0o600))
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		err := s.CheckRunning()
		return err != nil, "still running"
	}, 10*time.Second, 50*time.Millisecond)
	require.ErrorContains(t, s.CheckRunning(), "exit status 7")
	require.ErrorContains(t, s.CheckRunning(), "exiting by itself", "with the log's tail")
	require.ErrorContains(t, s.StopProcess(), "had exited by itself")

	require.NoError(t, os.Remove(marker))
	require.NoError(t, s.StartAgain(t.Context()))
	require.NoError(t, s.CheckRunning())
}

// TestServerPause: a paused kcp runs but does not answer; after Resume it
// does; Stop stops a paused kcp at once.
func TestServerPause(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)

	require.NoError(t, s.Pause())
	kcptestinghelpers.Eventually(t, func() (bool, string) {
		state := processState(t, s.Pid())
		return state == "T", "process state " + state
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, s.CheckRunning(), "paused is running")
	require.Error(t, readyz(t, s, 500*time.Millisecond), "a paused kcp does not answer")

	require.NoError(t, s.Resume())
	require.NoError(t, readyz(t, s, 5*time.Second))
	require.NotEqual(t, "T", processState(t, s.Pid()))

	require.NoError(t, s.Pause())
	began := time.Now()
	require.NoError(t, s.Stop())
	require.Less(t, time.Since(began), stopTimeout, "SIGTERM reaches a paused kcp")
	require.ErrorContains(t, s.Pause(), "stopped for good")
	require.ErrorContains(t, s.Resume(), "stopped for good")
}

// TestServerStartAgainPortTaken: StartAgain keeps the ports; one taken
// meanwhile fails it, after a few tries, and it can be called again.
func TestServerStartAgainPortTaken(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)
	require.NoError(t, s.StopProcess())

	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", strings.TrimPrefix(s.BaseURL, "https://"))
	require.NoError(t, err)
	err = s.StartAgain(t.Context())
	require.ErrorIs(t, err, errPortInUse)
	require.ErrorContains(t, s.CheckRunning(), "did not become ready")
	log, err := os.ReadFile(s.LogPath)
	require.NoError(t, err)
	require.Equal(t, startAttempts, strings.Count(string(log), "address already in use"), "tried %d times:\n%s", startAttempts, log)

	require.NoError(t, taken.Close())
	require.NoError(t, s.StartAgain(t.Context()))
	require.NoError(t, readyz(t, s, 5*time.Second))
}

// processState is the state letter of /proc/<pid>/stat (R, S, T, ...), or
// "" where there is no /proc.
func processState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return fields[0]
}

// TestLogTailsServers: LogTails shows each kcp process by name, whether it
// runs, its log file and the last lines of its log.
func TestLogTailsServers(t *testing.T) {
	t.Parallel()

	s := startFakeKCP(t)
	tails := LogTails{Lines: 1, Servers: []*Server{s}}
	require.Contains(t, tails.String(), fmt.Sprintf("--- last 1 lines of kcp (running, %s) ---\nfake kcp pid %d serving", s.LogPath, s.Pid()))

	require.NoError(t, s.StopProcess())
	require.Contains(t, tails.String(), "(kcp at "+s.BaseURL+" is not running: stopped by StopProcess, ")
}

// TestLoadKubeconfigBeingRewritten: kcp rewrites admin.kubeconfig in place
// on every start; a read that sees it cut short reads it again, and a
// context that never appears is an error once kubeconfigRewriteTimeout is over.
func TestLoadKubeconfigBeingRewritten(t *testing.T) {
	t.Parallel()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["base"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kubeconfig.AuthInfos["shard-admin"] = &clientcmdapi.AuthInfo{Token: "t"}
	kubeconfig.Contexts["shard-base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: "shard-admin"}
	data, err := clientcmd.Write(*kubeconfig)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600)) // cut short, as while kcp writes it

	written := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		written <- os.WriteFile(path, data, 0o600)
	}()
	raw, err := loadKubeconfigContext(path, "shard-base")
	require.NoError(t, <-written)
	require.NoError(t, err, "the file once written whole")
	require.Equal(t, "t", raw.AuthInfos["shard-admin"].Token)

	_, err = loadKubeconfigContext(path, "root")
	require.ErrorContains(t, err, `context "root" not found`)
}

func TestParseKCPRelease(t *testing.T) {
	t.Parallel()
	for output, want := range map[string]string{
		"kcp version v1.36.0+kcp-v0.32.3\n":             "0.32.3",
		"kcp-front-proxy version v1.32.3+kcp-v0.28.1\n": "0.28.1",
		"kcp version v1.36.0+kcp-v0.33.0-rc.1":          "0.33.0-rc.1",
	} {
		got, err := parseKCPRelease(output)
		require.NoError(t, err, output)
		require.Equal(t, want, got.String(), output)
	}
	_, err := parseKCPRelease("kcp version v0.0.0-master+$Format:%H$\n")
	require.ErrorContains(t, err, "no kcp release")
	release, err := parseKCPRelease("kcp-front-proxy version v1.36.0+kcp-v0.32.3")
	require.NoError(t, err)
	require.True(t, release.AtLeast(doctor.StripsIdentityHeaders))
	release, err = parseKCPRelease("kcp-front-proxy version v1.32.3+kcp-v0.28.1")
	require.NoError(t, err)
	require.False(t, release.AtLeast(doctor.StripsIdentityHeaders))
}

// TestOnlyKilled: a kcp stop that only had to kill is logged, anything
// else beside it (a root directory left, a process that would not die) is
// an error of the test.
func TestOnlyKilled(t *testing.T) {
	t.Parallel()
	killed := fmt.Errorf("shard-2 did not stop within 20s after SIGTERM and was %w", ErrKilled)
	other := errors.New("removing the root directory: permission denied")
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"killed":                 {err: killed, want: true},
		"two killed":             {err: errors.Join(killed, killed), want: true},
		"killed, joined twice":   {err: errors.Join(errors.Join(killed), nil), want: true},
		"killed and another":     {err: errors.Join(killed, other), want: false},
		"another":                {err: other, want: false},
		"not exiting after kill": {err: errors.New("kcp (pid 1) did not exit even after SIGKILL"), want: false},
	} {
		require.Equal(t, tc.want, onlyKilled(tc.err), name)
	}
}
