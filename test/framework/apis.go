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
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	kcpapiextensionsclientset "github.com/kcp-dev/client-go/apiextensions/client"
	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"
)

// MountVersion is the API version of the kinds built by MountCRD and ExportAndBind.
const MountVersion = "v1alpha1"

// MountCRD returns a CRD for a mount object kind, like kcp's KubeCluster test
// CRD (group contrib.kcp.io): version v1alpha1 with a status subresource, a
// free-form spec, and a status with phase, URL and conditions, and the
// heartbeats --mount-heartbeat-timeout reads (lastHeartbeatTime, kcp-dev/contrib's
// lastProxyHeartbeatTime, a condition's lastHeartbeatTime).
func MountCRD(group, kind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind:     kind,
				ListKind: kind + "List",
				Plural:   plural,
				Singular: strings.ToLower(kind),
			},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    MountVersion,
				Served:  true,
				Storage: true,
				Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: mountSchema()},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
					{Name: "URL", Type: "string", JSONPath: ".status.URL"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}
}

// mountSchema is the OpenAPI schema of a mount object.
func mountSchema() *apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	condition := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"type", "status"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type":               str,
			"status":             str,
			"reason":             str,
			"message":            str,
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"lastHeartbeatTime":  {Type: "string", Format: "date-time"},
		},
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": str,
			"kind":       str,
			"metadata":   {Type: "object"},
			"spec": {
				Type:                   "object",
				XPreserveUnknownFields: ptrTo(true),
			},
			"status": {
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"phase": str,
					"URL":   str,
					// The heartbeats of --mount-heartbeat-timeout.
					"lastHeartbeatTime":      {Type: "string", Format: "date-time"},
					"lastProxyHeartbeatTime": {Type: "string", Format: "date-time"},
					"conditions": {
						Type:  "array",
						Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition},
					},
				},
			},
		},
	}
}

// InstallCRD creates crd in cluster and waits until it is Established and its
// resource is served there (discovery lists it for each served version). cfg
// must be a base config (Server.BaseConfig). It returns the established CRD.
//
// This takes about 5s: kcp configures its apiextensions server as if it had
// three replicas (MasterCount 3), which delays Established by 5s. Discovery
// lists the resource before that.
func InstallCRD(t testing.TB, cfg *rest.Config, cluster logicalcluster.Path, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return InstallCRDs(t, cfg, cluster, crd)[0]
}

// InstallCRDs is InstallCRD for several CRDs at once: it creates them all,
// then waits for each, so that they share the 5s of Established. It returns
// the established CRDs in the order given.
func InstallCRDs(t testing.TB, cfg *rest.Config, cluster logicalcluster.Path, crds ...*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()

	client, err := kcpapiextensionsclientset.NewForConfig(clusterAwareConfig(cfg))
	if err != nil {
		t.Fatalf("creating apiextensions clientset: %v", err)
	}
	crdClient := client.Cluster(cluster).ApiextensionsV1().CustomResourceDefinitions()

	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	for _, crd := range crds {
		if _, err := crdClient.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRD %s in %s: %v", crd.Name, cluster, err)
		}
	}

	established := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, crd := range crds {
		pollT(t, ctx, fmt.Sprintf("CRD %s in %s to be Established", crd.Name, cluster), func(ctx context.Context) (bool, string) {
			established[i], err = crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range established[i].Status.Conditions {
				if c.Type == apiextensionsv1.Established {
					return c.Status == apiextensionsv1.ConditionTrue, fmt.Sprintf("Established=%s (%s: %s)", c.Status, c.Reason, c.Message)
				}
			}
			return false, "no Established condition yet"
		})
	}

	disco := client.Cluster(cluster).Discovery()
	var served []string
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, crd.Spec.Group+"/"+v.Name, crd.Spec.Names.Plural)
			}
		}
	}
	waitServed(t, disco, cluster, served...)
	return established
}

// ExportAndBind exports a cluster-scoped kind with the schema of MountCRD (version v1alpha1)
// from provider and binds it in consumer: it creates the APIResourceSchema
// v1.<plural>.<group> and the APIExport <plural>.<group> in provider and the
// APIBinding <plural>.<group> in consumer, waits until the binding is Bound and
// the resource is served in consumer, and returns the resource's identity hash
// (from the binding's status.boundResources). cfg must be a base config
// (Server.BaseConfig) allowed to bind the export, e.g. of context "base".
// Like InstallCRD, this takes about 5s.
func ExportAndBind(t testing.TB, cfg *rest.Config, provider, consumer logicalcluster.Path, group, kind, plural string) string {
	t.Helper()

	client := kcpClientT(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()

	schema, err := apisv1alpha1.CRDToAPIResourceSchema(MountCRD(group, kind, plural, apiextensionsv1.ClusterScoped), "v1")
	if err != nil {
		t.Fatalf("converting the CRD of %s.%s to an APIResourceSchema: %v", plural, group, err)
	}
	if _, err := client.Cluster(provider).ApisV1alpha1().APIResourceSchemas().Create(ctx, schema, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating APIResourceSchema %s in %s: %v", schema.Name, provider, err)
	}

	name := plural + "." + group
	export := &apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apisv1alpha2.APIExportSpec{
			Resources: []apisv1alpha2.ResourceSchema{{
				Group:   group,
				Name:    plural,
				Schema:  schema.Name,
				Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}},
			}},
		},
	}
	if _, err := client.Cluster(provider).ApisV1alpha2().APIExports().Create(ctx, export, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating APIExport %s in %s: %v", name, provider, err)
	}
	return BindExport(t, cfg, provider, consumer, group, plural)
}

// BindExport binds the APIExport <plural>.<group> of provider, made by
// ExportAndBind, in one more consumer (on any shard): it creates the
// APIBinding <plural>.<group> there, waits until it is Bound and the
// resource is served, and returns the resource's identity hash.
func BindExport(t testing.TB, cfg *rest.Config, provider, consumer logicalcluster.Path, group, plural string) string {
	t.Helper()

	client := kcpClientT(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()

	name := plural + "." + group
	binding := &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apisv1alpha2.APIBindingSpec{
			Reference: apisv1alpha2.BindingReference{
				Export: &apisv1alpha2.ExportBindingReference{Path: provider.String(), Name: name},
			},
		},
	}
	bindings := client.Cluster(consumer).ApisV1alpha2().APIBindings()
	// kcp's admission checks the bind permission against an authorizer cache
	// that may not know the new APIExport yet: Forbidden right after its
	// creation is retried.
	var createErr error
	err := poll(ctx, WaitTimeout, pollInterval, func(ctx context.Context) (bool, string) {
		_, createErr = bindings.Create(ctx, binding, metav1.CreateOptions{})
		if apierrors.IsForbidden(createErr) {
			return false, createErr.Error()
		}
		return true, ""
	})
	if err == nil {
		err = createErr
	}
	if err != nil {
		t.Fatalf("creating APIBinding %s in %s: %v", name, consumer, err)
	}

	var identityHash string
	pollT(t, ctx, fmt.Sprintf("APIBinding %s in %s to be Bound", name, consumer), func(ctx context.Context) (bool, string) {
		binding, err := bindings.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if binding.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return false, fmt.Sprintf("phase %q%s", binding.Status.Phase, falseConditions(binding.Status.Conditions))
		}
		for _, r := range binding.Status.BoundResources {
			if r.Group == group && r.Resource == plural && r.Schema.IdentityHash != "" {
				identityHash = r.Schema.IdentityHash
				return true, ""
			}
		}
		return false, fmt.Sprintf("Bound, but %s.%s with an identity hash is not in status.boundResources", plural, group)
	})

	waitServed(t, client.Cluster(consumer).Discovery(), consumer, group+"/"+MountVersion, plural)
	return identityHash
}

// APIExportIdentityHash waits until the APIExport name in cluster has an
// identity and returns its hash, e.g. for ("root", "tenancy.kcp.io") the
// identity that wildcard requests for workspaces need
// (/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:<hash>).
func APIExportIdentityHash(t testing.TB, cfg *rest.Config, cluster logicalcluster.Path, name string) string {
	t.Helper()

	client := kcpClientT(t, cfg)
	var hash string
	pollT(t, context.Background(), fmt.Sprintf("the identity hash of APIExport %s in %s", name, cluster), func(ctx context.Context) (bool, string) {
		export, err := client.Cluster(cluster).ApisV1alpha2().APIExports().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		hash = export.Status.IdentityHash
		return hash != "", "status.identityHash is empty"
	})
	return hash
}

// restMapperSettle is how long waitServed waits after discovery lists a
// resource. kcp before v0.32 panics (its Workspace index,
// WorkspacesByMountReference) on a Workspace mounting a kind its
// DynamicRESTMapper does not know yet, and that mapper learns a kind from a
// queue of its own, after discovery serves it; nothing kcp serves tells when.
// Measured: the shared kcp of the e2e tests crashed once, on a loaded
// 2-core machine, on a Workspace created right after its kind was served.
const restMapperSettle = 2 * time.Second

// waitServed waits until discovery in cluster lists each resource for its
// groupVersion (pairs: groupVersion, resource, ...), then restMapperSettle
// longer.
func waitServed(t testing.TB, disco discovery.DiscoveryInterface, cluster logicalcluster.Path, groupVersionResources ...string) {
	t.Helper()

	for i := 0; i+1 < len(groupVersionResources); i += 2 {
		groupVersion, resource := groupVersionResources[i], groupVersionResources[i+1]
		pollT(t, context.Background(), fmt.Sprintf("%s in %s to be served", resource+"."+groupVersion, cluster), func(context.Context) (bool, string) {
			resources, err := disco.ServerResourcesForGroupVersion(groupVersion)
			if apierrors.IsNotFound(err) {
				return false, groupVersion + " is not served yet"
			} else if err != nil {
				return false, err.Error()
			}
			for _, r := range resources.APIResources {
				if r.Name == resource {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s is served, but without %s", groupVersion, resource)
		})
	}
	time.Sleep(restMapperSettle)
}

// falseConditions formats the conditions that are not True as ", Type=Status (Reason: Message); ...".
func falseConditions(conditions conditionsv1alpha1.Conditions) string {
	var parts []string
	for _, c := range conditions {
		if c.Status != "True" {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, "; ")
}

func ptrTo[T any](v T) *T {
	return &v
}
