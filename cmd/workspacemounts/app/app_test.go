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

package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	logsapiv1 "k8s.io/component-base/logs/api/v1"

	"github.com/kcp-dev/logicalcluster/v3"

	"github.com/workspacemounts/workspacemounts/pkg/version"
	"github.com/workspacemounts/workspacemounts/server"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

// commandEnv makes TestMain run the command with the arguments after "--"
// instead of the tests: a process of its own, as main runs it, since the
// logging configuration can be applied once per process.
const commandEnv = "WORKSPACEMOUNTS_APP_TEST_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(commandEnv) != "" {
		args := os.Args[1:]
		for i, arg := range args {
			if arg == "--" {
				args = args[i+1:]
				break
			}
		}
		// As main runs it: SIGTERM ends the context.
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		cmd := NewCommand()
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		cancel()
		if err != nil {
			os.Stderr.WriteString("Error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runCommand runs the command with args in a process of its own and returns
// its standard output and error.
func runCommand(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...) //nolint:gosec // G204: this very test binary
	cmd.Env = append(os.Environ(), commandEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	build := version.Get()

	stdout, _, err := runCommand(t, "version")
	require.NoError(t, err)
	require.Equal(t, build.String()+"\n", stdout)
	require.Contains(t, stdout, "workspacemounts "+build.Version+" ")

	stdout, _, err = runCommand(t, "version", "-o", "short")
	require.NoError(t, err)
	require.Equal(t, build.Version+"\n", stdout)

	stdout, _, err = runCommand(t, "version", "-o", "json")
	require.NoError(t, err)
	var got version.Info
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, build, got)

	_, stderr, err := runCommand(t, "version", "-o", "yaml")
	require.Error(t, err)
	require.Contains(t, stderr, `--output must be short or json, not "yaml"`)
}

// TestJSONLogging starts the command with --logging-format=json against a
// kcp that does not answer: its first line, the start-up line with the build,
// is a JSON object, and so is every line it logs while it waits for kcp, up
// to the SIGTERM that stops it.
func TestJSONLogging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := clientcmdapi.NewConfig()
	config.Clusters["kcp"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "token"}
	config.Contexts["kcp"] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: "admin"}
	config.CurrentContext = "kcp"
	require.NoError(t, clientcmd.WriteToFile(*config, kubeconfig))

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$", "--", "start", "--logging-format=json", //nolint:gosec // G204: this very test binary
		"--kubeconfig="+kubeconfig, "--leader-elect=false", "--run-virtual-workspace=false", "--metrics-bind-address=0")
	cmd.Env = append(os.Environ(), commandEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	build := version.Get()
	var lines []map[string]any
	scanner := bufio.NewScanner(stderr)
	for scanner.Scan() {
		line := scanner.Text()
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "a log line that is not JSON: %q", line)
		lines = append(lines, entry)
		if msg, _ := entry["msg"].(string); strings.HasPrefix(msg, "waiting for kcp") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		}
	}
	require.NoError(t, cmd.Wait(), "stopped by SIGTERM, the command exits 0")
	require.NotEmpty(t, lines, "nothing logged")
	first := lines[0]
	require.Equal(t, "Starting workspacemounts", first["msg"], lines)
	require.Equal(t, build.Version, first["version"])
	require.Equal(t, build.Revision, first["revision"])
	require.Equal(t, build.GoVersion, first["goVersion"])
	require.Equal(t, build.KcpVersion, first["kcpVersion"])
	require.Contains(t, first, "ts")
	require.Contains(t, first, "v")
	require.Greater(t, len(lines), 1, "the wait for kcp is logged too")
}

// TestKCPOperatorArguments starts the command with the arguments
// kcp-operator generates for a VirtualWorkspace (framework.KCPOperatorArgs,
// a cache server referenced, -v=2), its files made here, and its
// kubeconfig in the shape of a Kubeconfig object (at a kcp that does not
// answer), with --all-shards and a port of the test's own as
// spec.extraArgs: it starts, says in one line that it ignores the two
// flags of kcp's own virtual workspaces, and waits for kcp.
func TestKCPOperatorArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := framework.NewCA("test-ca")
	require.NoError(t, err)
	files := framework.KCPOperatorFiles{
		ClientCAFile:        filepath.Join(dir, "client-ca.crt"),
		ServingCertFile:     filepath.Join(dir, "server.crt"),
		ServingKeyFile:      filepath.Join(dir, "server.key"),
		RequestHeaderCAFile: filepath.Join(dir, "requestheader-ca.crt"),
		Kubeconfig:          filepath.Join(dir, "kubeconfig"),
		CacheKubeconfig:     filepath.Join(dir, "cache-kubeconfig"),
	}
	require.NoError(t, ca.WriteCertFile(files.ClientCAFile))
	require.NoError(t, ca.WriteCertFile(files.RequestHeaderCAFile))
	serving, err := ca.ServingCert("127.0.0.1")
	require.NoError(t, err)
	require.NoError(t, serving.WriteFiles(files.ServingCertFile, files.ServingKeyFile))
	require.NoError(t, framework.WriteKCPOperatorKubeconfig(files.Kubeconfig, "https://127.0.0.1:1", logicalcluster.NewPath("root"), "workspacemounts",
		&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM}, BearerToken: "token"}))
	port, err := framework.FreePort(t.Context())
	require.NoError(t, err)
	args := framework.KCPOperatorArgs(files, 2, "--all-shards", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--metrics-bind-address=0")

	cmd := exec.CommandContext(t.Context(), os.Args[0], append([]string{"-test.run=^$", "--", "start"}, args...)...) //nolint:gosec // G204: this very test binary
	cmd.Env = append(os.Environ(), commandEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var ignored []string
	var lines []string
	scanner := bufio.NewScanner(stderr)
	for scanner.Scan() {
		line := scanner.Text()
		lines = append(lines, line)
		if strings.Contains(line, "ignoring flags of kcp's own virtual workspaces") {
			ignored = append(ignored, line)
		}
		if strings.Contains(line, "waiting for kcp") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		}
	}
	require.NoError(t, cmd.Wait(), "stopped by SIGTERM, the command exits 0:\n%s", strings.Join(lines, "\n"))
	require.Len(t, ignored, 1, "%s", strings.Join(lines, "\n"))
	require.Contains(t, ignored[0], `flags=["--shard-external-url","--cache-kubeconfig"]`)
}

// TestStartHelpSections: every flag of start is in exactly one section of
// its help, and every flag of the plugin's own has a help of one short
// sentence; Kubernetes' own serving and logging flags keep their help.
func TestStartHelpSections(t *testing.T) {
	t.Parallel()
	_, _, fss := startFlagSets()
	all := pflag.NewFlagSet("start", pflag.ContinueOnError)
	StartFlags(all)
	sectionOf := map[string]string{}
	for _, name := range fss.Order {
		fss.FlagSets[name].VisitAll(func(f *pflag.Flag) {
			require.NotContains(t, sectionOf, f.Name, "--%s in sections %q and %q", f.Name, sectionOf[f.Name], name)
			sectionOf[f.Name] = name
		})
	}
	count := 0
	all.VisitAll(func(f *pflag.Flag) {
		count++
		require.Contains(t, sectionOf, f.Name, "--%s is in no section", f.Name)
	})
	require.Len(t, sectionOf, count)
	require.Equal(t, []string{server.SectionKCP, server.SectionController, server.SectionRouting, server.SectionServing, server.SectionAuthentication,
		server.SectionAuthorization, server.SectionShares, server.SectionMetrics, server.SectionLogging}, fss.Order)
	for flag, section := range map[string]string{"kubeconfig": server.SectionKCP, "workspace-workers": server.SectionController, "max-unavailable": server.SectionRouting,
		"secure-port": server.SectionServing, "requestheader-dedicated-ca": server.SectionAuthentication, "authorization-qps": server.SectionAuthorization,
		"max-watches": server.SectionShares, "leader-elect": server.SectionMetrics, "logging-format": server.SectionLogging} {
		require.Equal(t, section, sectionOf[flag], "--%s", flag)
	}

	kubernetes := pflag.NewFlagSet("kubernetes", pflag.ContinueOnError)
	genericapiserveroptions.NewSecureServingOptions().AddFlags(kubernetes)
	(&genericapiserveroptions.ClientCertAuthenticationOptions{}).AddFlags(kubernetes)
	(&genericapiserveroptions.RequestHeaderAuthenticationOptions{}).AddFlags(kubernetes)
	logsapiv1.AddFlags(logsapiv1.NewLoggingConfiguration(), kubernetes)
	all.VisitAll(func(f *pflag.Flag) {
		if kubernetes.Lookup(f.Name) == nil {
			require.LessOrEqual(t, len(f.Usage), 150, "--%s: %q", f.Name, f.Usage)
			require.Equal(t, 1, strings.Count(strings.TrimSuffix(f.Usage, "."), ". ")+1, "--%s: one sentence: %q", f.Name, f.Usage)
		}
	})

	stdout, _, err := runCommand(t, "start", "--help")
	require.NoError(t, err)
	for _, name := range fss.Order {
		require.Contains(t, stdout, "\n"+strings.ToUpper(name[:1])+name[1:]+" flags:\n", "start --help")
	}
}
