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

package v1alpha1

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// jsonFields returns the JSON field names of a struct type and the subset
// that is not omitempty. Inline embedded structs contribute their fields.
func jsonFields(t *testing.T, typ reflect.Type) (all, required []string) {
	t.Helper()
	for i := range typ.NumField() {
		field := typ.Field(i)
		tag, hasTag := field.Tag.Lookup("json")
		require.True(t, hasTag, "%s.%s has no json tag", typ.Name(), field.Name)
		name, options, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" && field.Anonymous && strings.Contains(options, "inline") {
			inlineAll, inlineRequired := jsonFields(t, field.Type)
			all = append(all, inlineAll...)
			required = append(required, inlineRequired...)
			continue
		}
		require.NotEmpty(t, name, "%s.%s has a json tag without a name", typ.Name(), field.Name)
		all = append(all, name)
		if !strings.Contains(","+options+",", ",omitempty,") && !strings.Contains(","+options+",", ",omitzero,") {
			required = append(required, name)
		}
	}
	return all, required
}

func sortedKeys(m map[string]spec.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func refCallback(path string) spec.Ref {
	return spec.MustCreateRef("#/definitions/" + path)
}

// collectRefs returns every $ref in a schema, recursively.
func collectRefs(s *spec.Schema, refs map[string]struct{}) {
	if s == nil {
		return
	}
	if ref := s.Ref.String(); ref != "" {
		refs[strings.TrimPrefix(ref, "#/definitions/")] = struct{}{}
	}
	for name := range s.Properties {
		p := s.Properties[name]
		collectRefs(&p, refs)
	}
	if s.Items != nil {
		collectRefs(s.Items.Schema, refs)
		for i := range s.Items.Schemas {
			collectRefs(&s.Items.Schemas[i], refs)
		}
	}
	if s.AdditionalProperties != nil {
		collectRefs(s.AdditionalProperties.Schema, refs)
	}
	for _, group := range [][]spec.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range group {
			collectRefs(&group[i], refs)
		}
	}
	collectRefs(s.Not, refs)
}

// TestOpenAPIDefinitionsMatchTypes checks what openapi-gen made of the types
// and their tags: a property per JSON field, the fields without omitempty
// required, a description everywhere kubectl explain shows one.
func TestOpenAPIDefinitionsMatchTypes(t *testing.T) {
	t.Parallel()

	defs := GetOpenAPIDefinitions(refCallback)

	for _, tc := range []struct {
		model string
		typ   reflect.Type
	}{
		{WorkspaceMount{}.OpenAPIModelName(), reflect.TypeFor[WorkspaceMount]()},
		{WorkspaceMountList{}.OpenAPIModelName(), reflect.TypeFor[WorkspaceMountList]()},
		{WorkspaceMountSpec{}.OpenAPIModelName(), reflect.TypeFor[WorkspaceMountSpec]()},
		{MountReference{}.OpenAPIModelName(), reflect.TypeFor[MountReference]()},
		{WorkspaceMountStatus{}.OpenAPIModelName(), reflect.TypeFor[WorkspaceMountStatus]()},
		{MountCondition{}.OpenAPIModelName(), reflect.TypeFor[MountCondition]()},
	} {
		t.Run(tc.typ.Name(), func(t *testing.T) {
			t.Parallel()
			require.True(t, strings.HasPrefix(tc.model, "io.workspacemounts.v1alpha1."), tc.model)
			def, found := defs[tc.model]
			require.True(t, found, "no definition for %s", tc.model)
			all, required := jsonFields(t, tc.typ)
			require.Equal(t, sorted(all), sortedKeys(def.Schema.Properties), "schema properties of %s", tc.model)
			require.Equal(t, sorted(required), sorted(def.Schema.Required), "required properties of %s", tc.model)
			require.Equal(t, []string{"object"}, []string(def.Schema.Type))
			require.NotEmpty(t, def.Schema.Description)
			for name, p := range def.Schema.Properties {
				if name != "items" && name != "conditions" { // array items have no description of their own
					require.NotEmpty(t, p.Description, "%s.%s has no description", tc.model, name)
				}
			}

			// Every model the definition refers to is among its dependencies.
			refs := map[string]struct{}{}
			collectRefs(&def.Schema, refs)
			require.ElementsMatch(t, keys(refs), def.Dependencies, "dependencies of %s", tc.model)
		})
	}
}

func keys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestOpenAPIDefinitionsRefsResolve(t *testing.T) {
	t.Parallel()

	var asked []string
	defs := GetOpenAPIDefinitions(func(path string) spec.Ref {
		asked = append(asked, path)
		return refCallback(path)
	})
	// Every reference, of the API's definitions and of the apimachinery ones
	// generated beside them, resolves to a definition in the map.
	for name, def := range defs {
		refs := map[string]struct{}{}
		collectRefs(&def.Schema, refs)
		for ref := range refs {
			_, found := defs[ref]
			require.True(t, found, "%s refers to %s, which is not defined", name, ref)
		}
		for _, dep := range def.Dependencies {
			_, found := defs[dep]
			require.True(t, found, "%s depends on %s, which is not defined", name, dep)
		}
	}
	for _, path := range asked {
		_, found := defs[path]
		require.True(t, found, "ref callback asked for %s, which is not defined", path)
	}
	for _, model := range []string{
		metav1.ObjectMeta{}.OpenAPIModelName(), metav1.ListMeta{}.OpenAPIModelName(), metav1.Time{}.OpenAPIModelName(),
	} {
		require.Contains(t, defs, model)
	}
}

// TestOpenAPIModelNames checks the names the API server's definition namer
// finds for the types, through the OpenAPIModelName methods.
func TestOpenAPIModelNames(t *testing.T) {
	t.Parallel()
	for _, obj := range []interface{ OpenAPIModelName() string }{
		WorkspaceMount{}, WorkspaceMountList{}, WorkspaceMountSpec{}, WorkspaceMountStatus{}, MountReference{}, MountCondition{},
	} {
		name := reflect.TypeOf(obj).Name()
		require.Equal(t, "io.workspacemounts.v1alpha1."+name, obj.OpenAPIModelName())
	}
	var _ common.GetOpenAPIDefinitions = GetOpenAPIDefinitions
}

func sampleWorkspaceMount() *WorkspaceMount {
	transition := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &WorkspaceMount{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            "team-a",
			ResourceVersion: "42",
			Labels:          map[string]string{"team": "a"},
			Annotations:     map[string]string{"kcp.io/cluster": "root"},
		},
		Spec: WorkspaceMountSpec{MountRef: MountReference{APIVersion: "proxy.example.io/v1", Kind: "Proxy", Name: "p", Namespace: "ns"}},
		Status: WorkspaceMountStatus{
			Phase: "Ready", Ready: true, URL: "https://example.io", Reason: "MountReady", Message: "ok",
			LastTransitionTime: &transition,
			Conditions: []MountCondition{
				{Type: "Ready", Status: "True", Reason: "Up", Message: "up"},
				{Type: "Synced", Status: "False"},
			},
			WorkspacePhase: "Ready",
		},
	}
}

func TestWorkspaceMountDeepCopy(t *testing.T) {
	t.Parallel()

	original := sampleWorkspaceMount()
	pristine := sampleWorkspaceMount()

	copied := original.DeepCopy()
	require.Equal(t, original, copied)
	require.NotSame(t, original, copied)

	copied.Name = "changed"
	copied.Labels["team"] = "b"
	copied.Annotations["kcp.io/cluster"] = "other"
	copied.Spec.MountRef.Name = "q"
	copied.Status.Phase = "Unknown"
	copied.Status.Ready = false
	copied.Status.Conditions[0].Status = "False"
	copied.Status.Conditions[1].Message = "changed"
	copied.Status.Conditions = append(copied.Status.Conditions, MountCondition{Type: "Extra"})
	copied.Status.LastTransitionTime.Time = copied.Status.LastTransitionTime.Add(time.Hour)

	require.Equal(t, pristine, original, "mutating the copy changed the original")

	obj := original.DeepCopyObject()
	require.IsType(t, &WorkspaceMount{}, obj)
	require.Equal(t, original, obj)

	var nilMount *WorkspaceMount
	require.Nil(t, nilMount.DeepCopy())

	// Nil and empty fields stay as they are.
	empty := &WorkspaceMount{}
	require.Equal(t, empty, empty.DeepCopy())
	require.Nil(t, empty.DeepCopy().Status.Conditions)
	require.Nil(t, empty.DeepCopy().Status.LastTransitionTime)
}

func TestWorkspaceMountListDeepCopy(t *testing.T) {
	t.Parallel()

	remaining := int64(3)
	newList := func() *WorkspaceMountList {
		return &WorkspaceMountList{
			TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: ListKind},
			ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "abc", RemainingItemCount: &remaining},
			Items:    []WorkspaceMount{*sampleWorkspaceMount(), *sampleWorkspaceMount()},
		}
	}
	original, pristine := newList(), newList()

	copied := original.DeepCopy()
	require.Equal(t, original, copied)

	*copied.RemainingItemCount = 99
	copied.Items[0].Labels["team"] = "z"
	copied.Items[1].Status.Conditions[0].Type = "Changed"
	copied.Items[1].Status.LastTransitionTime.Time = time.Time{}
	copied.Items = append(copied.Items, WorkspaceMount{})

	require.Equal(t, pristine, original, "mutating the copy changed the original")
	require.Equal(t, int64(3), remaining)

	obj := original.DeepCopyObject()
	require.IsType(t, &WorkspaceMountList{}, obj)
	require.Equal(t, original, obj)

	var nilList *WorkspaceMountList
	require.Nil(t, nilList.DeepCopy())
	require.Nil(t, (&WorkspaceMountList{}).DeepCopy().Items)
}

func TestAddToScheme(t *testing.T) {
	t.Parallel()

	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))

	for _, tc := range []struct {
		obj  runtime.Object
		kind string
	}{
		{&WorkspaceMount{}, Kind},
		{&WorkspaceMountList{}, ListKind},
	} {
		gvks, _, err := scheme.ObjectKinds(tc.obj)
		require.NoError(t, err)
		require.Equal(t, SchemeGroupVersion.WithKind(tc.kind), gvks[0])
	}
	// The meta/v1 options are registered in the group version.
	for _, obj := range []runtime.Object{&metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.WatchEvent{}} {
		_, _, err := scheme.ObjectKinds(obj)
		require.NoError(t, err, "%T", obj)
	}
	require.True(t, scheme.Recognizes(SchemeGroupVersion.WithKind("ListOptions")))

	for _, tc := range []struct {
		label   string
		value   string
		wantErr bool
	}{
		{label: "metadata.name", value: "team-a"},
		{label: "status.phase", value: "Ready"},
		{label: "status.ready", value: "true"},
		{label: "metadata.namespace", value: "x", wantErr: true},
		{label: "spec.mountRef.kind", value: "Proxy", wantErr: true},
		{label: "status.url", value: "x", wantErr: true},
		{label: "", value: "x", wantErr: true},
	} {
		label, value, err := scheme.ConvertFieldLabel(SchemeGroupVersion.WithKind(Kind), tc.label, tc.value)
		if tc.wantErr {
			require.Error(t, err, tc.label)
			require.ErrorContains(t, err, "field label not supported")
			continue
		}
		require.NoError(t, err, tc.label)
		require.Equal(t, tc.label, label)
		require.Equal(t, tc.value, value)
	}
}
