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
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1validation "k8s.io/apimachinery/pkg/apis/meta/v1beta1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/util/apihelpers"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// tableLists answers a list of WorkspaceMounts negotiated to a
// meta.k8s.io/v1 Table (what kubectl get asks for) as the list handler
// (handlers.ListResource) does, but for the Table: REST.ListTable's, whose
// rows the meta.k8s.io JSON encoder writes from the store's encodings,
// where the handler would convert the list (ConvertToTable, a
// PartialObjectMetadata per row) and encode the Table with encoding/json.
// The list options, the Table options and their errors, the negotiated
// encoder (pretty JSON, YAML), the response writer (gzip) and the request
// metrics are the handler's; the bytes are the same (TestServer).
type tableLists struct {
	storage      *wsmregistry.REST
	restrictions negotiation.EndpointRestrictions
	// errors are written as the handler writes them: in this API's version.
	errors runtime.NegotiatedSerializer
}

// isTableList is whether a request withListAnswer negotiated to convert
// (nil: the list itself) is a list of WorkspaceMounts answered as a
// meta.k8s.io/v1 Table.
func isTableList(info *genericapirequest.RequestInfo, method string, convert *schema.GroupVersionKind) bool {
	return method == http.MethodGet && info.Verb == "list" && info.APIGroup == wsmv1alpha1.GroupName &&
		info.APIVersion == wsmv1alpha1.SchemeGroupVersion.Version && info.Resource == wsmv1alpha1.Resource &&
		info.Subresource == "" && info.Name == "" &&
		convert != nil && *convert == metav1.SchemeGroupVersion.WithKind("Table")
}

// ServeHTTP lists, instrumented as the installer instruments the list route.
func (t *tableLists) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	apimetrics.InstrumentHandlerFunc("LIST", wsmv1alpha1.GroupName, wsmv1alpha1.SchemeGroupVersion.Version, wsmv1alpha1.Resource, "",
		"cluster", apimetrics.APIServerComponent, false, "", t.list)(w, req)
}

func (t *tableLists) list(w http.ResponseWriter, req *http.Request) {
	options, err := listOptions(req)
	if err != nil {
		t.error(w, req, err)
		return
	}
	tableOptions, err := tableOptions(req)
	if err != nil {
		t.error(w, req, err)
		return
	}
	ctx := genericapirequest.WithNamespace(req.Context(), "")
	table, err := t.storage.ListTable(ctx, &options, tableOptions)
	if err != nil {
		t.error(w, req, err)
		return
	}
	responsewriters.WriteObjectNegotiated(apihelpers.GetMetaInternalVersionCodecs(), t.restrictions, metav1.SchemeGroupVersion, w, req.WithContext(ctx), http.StatusOK, table, false)
}

func (t *tableLists) error(w http.ResponseWriter, req *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, t.errors, wsmv1alpha1.SchemeGroupVersion, w, req)
}

// listOptions are a list request's options, as the list handler decodes
// and validates them (handlers.listOpts, for a list without a name).
func listOptions(req *http.Request) (metainternalversion.ListOptions, error) {
	options := metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &options); err != nil {
		return options, apierrors.NewBadRequest(err.Error())
	}
	watchList := utilfeature.DefaultFeatureGate.Enabled(features.WatchList)
	metainternalversion.SetListOptionsDefaults(&options, watchList)
	if errs := metainternalversionvalidation.ValidateListOptions(&options, watchList); len(errs) > 0 {
		return options, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if options.FieldSelector != nil {
		var err error
		convert := func(label, value string) (string, string, error) {
			return scheme.ConvertFieldLabel(wsmv1alpha1.SchemeGroupVersion.WithKind(wsmv1alpha1.Kind), label, value)
		}
		if options.FieldSelector, err = options.FieldSelector.Transform(convert); err != nil {
			return options, apierrors.NewBadRequest(err.Error())
		}
	}
	return options, nil
}

// tableOptions are a Table request's options, as the handlers decode and
// validate them (handlers.optionsForTransform).
func tableOptions(req *http.Request) (*metav1.TableOptions, error) {
	options := &metav1.TableOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, options); err != nil {
		return nil, err
	}
	switch errs := metav1beta1validation.ValidateTableOptions(options); len(errs) {
	case 0:
		return options, nil
	case 1:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs))
	}
}
