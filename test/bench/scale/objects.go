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
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcp-dev/logicalcluster/v3"
	"github.com/kcp-dev/sdk/apis/core"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	conditionsv1alpha1 "github.com/kcp-dev/sdk/apis/third_party/conditions/apis/conditions/v1alpha1"

	"github.com/workspacemounts/workspacemounts/pkg/mount"
)

// The synthetic objects are what kcp v0.28 serves for the benchmarks'
// Workspaces (test/bench/internal/mountbench), annotated by the controller:
// Workspace mount-<i> in cluster i % clusters mounts KubeCluster mount-<i>
// beside it; one in ten is Connecting with a condition of the mount object,
// the others Ready at a URL.

var created = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

// clusterName is a logical cluster name as kcp makes them: 16 characters of base 36.
func clusterName(c int) logicalcluster.Name {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "cluster-%d", c)
	name := strconv.FormatUint(h.Sum64(), 36)
	for len(name) < 16 {
		name = "0" + name
	}
	return logicalcluster.Name(name[:16])
}

func workspaceName(i int) string { return fmt.Sprintf("mount-%06d", i) }

func uid(kind string, i int) types.UID {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s-%d", kind, i)
	first := h.Sum64()
	_, _ = fmt.Fprint(h, "/uid")
	s := fmt.Sprintf("%016x%016x", first, h.Sum64())
	return types.UID(s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32])
}

// phaseOf is the phase Workspace i starts in.
func phaseOf(i int) string {
	if i%10 == 9 {
		return string(mount.PhaseConnecting)
	}
	return string(mount.PhaseReady)
}

// layout places the synthetic objects of one shard: n mounted Workspaces
// in clusters logical clusters, named apart from every other shard's (shard
// 0's are those of a single shard), with full mount histories or none.
type layout struct {
	shard, n, clusters int
	history            bool
}

// cluster is the shard's logical cluster c.
func (l layout) cluster(c int) logicalcluster.Name { return clusterName(l.shard*l.clusters + c) }

// clusterOf is the logical cluster of Workspace i.
func (l layout) clusterOf(i int) logicalcluster.Name { return l.cluster(i % l.clusters) }

// global is Workspace i's index among every shard's.
func (l layout) global(i int) int { return l.shard*l.n + i }

// workspace is Workspace i as kcp serves it, its mount in phase.
func (l layout) workspace(i int, phase string) *tenancyv1alpha1.Workspace {
	name := workspaceName(i)
	cluster := l.clusterOf(i)
	ref := tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta: metav1.TypeMeta{APIVersion: "tenancy.kcp.io/v1alpha1", Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: uid("workspace", l.global(i)), ResourceVersion: strconv.Itoa(i + 1), Generation: 1, CreationTimestamp: created,
			Annotations: map[string]string{
				logicalcluster.AnnotationKey:        cluster.String(),
				"experimental.tenancy.kcp.io/owner": `{"username":"kcp-admin","groups":["system:kcp:admin","system:authenticated"]}`,
			},
			Labels: map[string]string{"tenancy.kcp.io/phase": "Ready"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tenancy.kcp.io/v1alpha1", Time: &created,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:mount":{".":{},"f:ref":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{}}}}}`)},
				{Manager: "kcp", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tenancy.kcp.io/v1alpha1", Time: &created, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:conditions":{},"f:phase":{}}}`)},
				{Manager: "workspacemounts", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "tenancy.kcp.io/v1alpha1", Time: &created,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:workspacemounts.io/phase":{},"f:workspacemounts.io/status":{}}}}`)},
			},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:  &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"},
			Mount: &tenancyv1alpha1.Mount{Reference: ref},
		},
		Status: tenancyv1alpha1.WorkspaceStatus{Phase: "Ready", Conditions: conditionsv1alpha1.Conditions{
			{Type: "WorkspaceScheduled", Status: "True", LastTransitionTime: created},
			{Type: "WorkspaceInitialized", Status: "True", LastTransitionTime: created},
		}},
	}
	status := l.mountStatus(i, phase)
	ws.Annotations[mount.PhaseAnnotationKey] = phase
	ws.Annotations[mount.StatusAnnotationKey] = status.Encode()
	return ws
}

// mountStatus is the status the controller writes of Workspace i's mount
// in phase: found at created, or with a full history, MaxTransitions states
// an hour apart alternating with the other phase, the last in phase.
func (l layout) mountStatus(i int, phase string) mount.Status {
	if !l.history {
		return mountStatusIn(workspaceName(i), l.clusterOf(i), phase, created)
	}
	other := string(mount.PhaseReady)
	if phase == other {
		other = string(mount.PhaseConnecting)
	}
	var status *mount.Status
	for k := range mount.MaxTransitions {
		p := phase
		if (mount.MaxTransitions-1-k)%2 == 1 {
			p = other
		}
		at := metav1.NewTime(created.Add(time.Duration(k) * time.Hour))
		next := mountStatusIn(workspaceName(i), l.clusterOf(i), p, at).WithHistory(status, at)
		status = &next
	}
	return *status
}

// mountStatusIn is the status of the mount of Workspace name in cluster,
// in phase since at, without a history.
func mountStatusIn(name string, cluster logicalcluster.Name, phase string, at metav1.Time) mount.Status {
	ref := mount.Reference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}
	status := mount.Status{
		Phase: mount.Phase(phase), Ready: phase == string(mount.PhaseReady), MountRef: ref, LastTransitionTime: at,
	}
	if status.Ready {
		status.URL = "https://kc.example/clusters/" + cluster.String() + ":" + name
		status.Reason = mount.ReasonMountReady
		status.Message = "KubeCluster " + name + " (contrib.kcp.io/v1alpha1) is Ready."
		status.Conditions = []mount.Condition{{Type: "AgentConnected", Status: "True", Reason: "Heartbeat"}}
	} else {
		status.Reason = mount.ReasonMountNotReady
		status.Message = "KubeCluster " + name + " (contrib.kcp.io/v1alpha1) is " + phase + ": condition AgentConnected is False (NoHeartbeat: the agent has not connected yet)."
		status.Conditions = []mount.Condition{{Type: "AgentConnected", Status: "False", Reason: "NoHeartbeat", Message: "the agent has not connected yet"}}
	}
	return status
}

// logicalCluster is the LogicalCluster of the shard's cluster c, at path
// root:org-<g>, g its index among every shard's.
func (l layout) logicalCluster(c int) *corev1alpha1.LogicalCluster {
	g := l.shard*l.clusters + c
	return &corev1alpha1.LogicalCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: "core.kcp.io/v1alpha1", Kind: "LogicalCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: corev1alpha1.LogicalClusterName, UID: uid("logicalcluster", g), ResourceVersion: strconv.Itoa(c + 1), CreationTimestamp: created,
			Annotations: map[string]string{
				logicalcluster.AnnotationKey:         l.cluster(c).String(),
				core.LogicalClusterPathAnnotationKey: fmt.Sprintf("root:org-%d", g),
				"tenancy.kcp.io/owner":               `{"username":"kcp-admin","groups":["system:kcp:admin"]}`,
			},
			Finalizers: []string{"core.kcp.io/logicalcluster"},
		},
		Spec: corev1alpha1.LogicalClusterSpec{Owner: &corev1alpha1.LogicalClusterOwner{
			APIVersion: "tenancy.kcp.io/v1alpha1", Resource: "workspaces", Name: fmt.Sprintf("org-%d", g), Cluster: "root", UID: uid("owner", g),
		}},
		Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, URL: "https://kcp.example/clusters/" + l.cluster(c).String()},
	}
}

// crd is the KubeCluster CRD of the shard's cluster c, as test/framework's
// MountCRD makes it, established.
func (l layout) crd(c int) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "kubeclusters.contrib.kcp.io", UID: uid("crd", l.shard*l.clusters+c), ResourceVersion: strconv.Itoa(c + 1), Generation: 1, CreationTimestamp: created,
			Annotations: map[string]string{logicalcluster.AnnotationKey: l.cluster(c).String()},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apiextensions.k8s.io/v1",
				Time: &created, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:group":{},"f:names":{},"f:scope":{},"f:versions":{}}}`)}},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "contrib.kcp.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", ListKind: "KubeClusterList", Plural: "kubeclusters", Singular: "kubecluster"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", XPreserveUnknownFields: ptrTo(true)},
					"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"phase": str, "URL": str,
						"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"type": str, "status": str, "reason": str, "message": str},
						}}},
					}},
				}}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Phase", Type: "string", JSONPath: ".status.phase"}, {Name: "URL", Type: "string", JSONPath: ".status.URL"},
				},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found", LastTransitionTime: created},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted", LastTransitionTime: created},
			},
			AcceptedNames:  apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeCluster", ListKind: "KubeClusterList", Plural: "kubeclusters", Singular: "kubecluster"},
			StoredVersions: []string{"v1alpha1"},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// mountObject is KubeCluster mount-<i> as kcp serves its metadata across clusters.
func (l layout) mountObject(i int) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: workspaceName(i), UID: uid("kubecluster", l.global(i)), ResourceVersion: strconv.Itoa(i + 1), Generation: 1, CreationTimestamp: created,
			Annotations: map[string]string{logicalcluster.AnnotationKey: l.clusterOf(i).String()},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "contrib.kcp.io/v1alpha1", Time: &created, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:URL":{},"f:phase":{}}}`)},
			},
		},
	}
}
