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

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
	"github.com/workspacemounts/workspacemounts/test/framework"
)

const (
	// setupConcurrency bounds the set-up's requests in flight; logical
	// clusters are expensive for kcp, a few at a time is faster on 2 cores.
	setupConcurrency = 8

	// mountKind is the cluster-scoped mount CRD's kind, mountGVR its resource.
	mountKind = "KubeCluster"

	// readerRole and accessRole are the ClusterRoles a tenant is bound to in
	// the clusters it may read, as in the e2e tests' grantWorkspaceReader.
	readerRole = "tenants-workspace-reader"
	accessRole = "tenants-access"

	// honestName and flooderName are the two users besides the tenants.
	honestName  = "honest"
	flooderName = "flooder"
	// serviceAccountName is the ServiceAccount whose --sa-tokens tokens
	// flood, in the default namespace of the last cluster.
	serviceAccountName = "flooder-sa"
	// serviceAccountUser is its user name in kcp.
	serviceAccountUser = "system:serviceaccount:default:" + serviceAccountName
)

// serviceAccountTokens creates the ServiceAccount in cluster (once its
// default namespace exists) and n tokens of it (TokenRequest: each its own
// credential id, one user for kcp).
func (c adminClients) serviceAccountTokens(ctx context.Context, cluster logicalcluster.Name, n int) ([]string, error) {
	accounts := c.Kube.Cluster(cluster.Path()).CoreV1().ServiceAccounts("default")
	var last error
	err := wait.PollUntilContextTimeout(ctx, benchsetup.PollInterval, benchsetup.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccountName}}, metav1.CreateOptions{})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating ServiceAccount %s in %s (last: %v): %w", serviceAccountName, cluster, last, err)
	}
	expiration := int64(3600)
	tokens := make([]string, n)
	for i := range tokens {
		req, err := accounts.CreateToken(ctx, serviceAccountName, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating a token of %s in %s: %w", serviceAccountName, cluster, err)
		}
		tokens[i] = req.Status.Token
	}
	return tokens, nil
}

// user is one static-token user of kcp.
type user struct {
	name  string
	token string
}

// tokenFile is kcp's --token-auth-file and the users in it.
type tokenFile struct {
	path    string
	tenants []user
	honest  user
	flooder user
}

// writeTokenFile writes n tenants tenant-00.., the honest user and the
// flooder, each with a random token, in the CSV format of --token-auth-file.
func writeTokenFile(path string, n int) (tokenFile, error) {
	f := tokenFile{path: path}
	var lines []string
	add := func(name string) (user, error) {
		secret := make([]byte, 16)
		if _, err := rand.Read(secret); err != nil {
			return user{}, err
		}
		u := user{name: name, token: hex.EncodeToString(secret)}
		lines = append(lines, fmt.Sprintf("%s,%s,%s", u.token, u.name, u.name))
		return u, nil
	}
	for i := range n {
		u, err := add(fmt.Sprintf("tenant-%02d", i))
		if err != nil {
			return tokenFile{}, err
		}
		f.tenants = append(f.tenants, u)
	}
	var err error
	if f.honest, err = add(honestName); err != nil {
		return tokenFile{}, err
	}
	if f.flooder, err = add(flooderName); err != nil {
		return tokenFile{}, err
	}
	return f, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

var mountGVR = schema.GroupVersionResource{Group: "contrib.kcp.io", Version: framework.MountVersion, Resource: "kubeclusters"}

// adminClients are kcp-admin's clients, with the set-up helpers of this command.
type adminClients struct{ benchsetup.Admin }

func newAdminClients(cfg *rest.Config) (adminClients, error) {
	admin, err := benchsetup.NewAdmin(cfg)
	return adminClients{admin}, err
}

// clusterName names cluster workspace i under root.
func clusterName(i int) string {
	return fmt.Sprintf("tenant-cluster-%03d", i)
}

// createMountedWorkspaces creates n Workspaces mount-<j> in cluster, each
// mounting a KubeCluster of the same name that does not exist (phase NotFound:
// what the load reads does not depend on the mount objects).
func (c adminClients) createMountedWorkspaces(ctx context.Context, cluster logicalcluster.Name, n int) error {
	workspaces := c.KCP.Cluster(cluster.Path()).TenancyV1alpha1().Workspaces()
	for j := range n {
		name := "mount-" + strconv.Itoa(j)
		ws := &tenancyv1alpha1.Workspace{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
				APIVersion: mountGVR.GroupVersion().String(), Kind: mountKind, Name: name,
			}}},
		}
		if _, err := workspaces.Create(ctx, ws, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating mounted workspace %s in %s: %w", name, cluster, err)
		}
	}
	return nil
}

// grant lets users read Workspaces in cluster (and so its WorkspaceMounts):
// verb access on / and get, list, watch workspaces.tenancy.kcp.io.
func (c adminClients) grant(ctx context.Context, cluster logicalcluster.Name, users []string) error {
	rbac := c.Kube.Cluster(cluster.Path()).RbacV1()
	subjects := make([]rbacv1.Subject, 0, len(users))
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	for _, role := range []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: accessRole}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: readerRole}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspaces"}}}},
	} {
		if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s in %s: %w", role.Name, cluster, err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   subjects,
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterRoleBinding %s in %s: %w", role.Name, cluster, err)
		}
	}
	return nil
}

// waitAllowed waits until kcp lets token list the Workspaces of cluster, so
// that the virtual workspace caches no early denial.
func waitAllowed(ctx context.Context, client *http.Client, baseURL string, cluster logicalcluster.Name, token string) error {
	url := baseURL + "/clusters/" + cluster.String() + "/apis/tenancy.kcp.io/v1alpha1/workspaces"
	var last string
	err := wait.PollUntilContextTimeout(ctx, benchsetup.PollInterval, benchsetup.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		code, _, err := get(ctx, client, url, token)
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not reachable yet: try again
		}
		last = strconv.Itoa(code)
		return code == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting until kcp lets a user list Workspaces in %s (last: %s): %w", cluster, last, err)
	}
	return nil
}

// mountList is the part of a WorkspaceMount list the benchmark reads.
type mountList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"items"`
}

// decodeMountList decodes a WorkspaceMount list body.
func decodeMountList(body []byte) (mountList, error) {
	var list mountList
	err := json.Unmarshal(body, &list)
	return list, err
}
