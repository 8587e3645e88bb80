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
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1validation "k8s.io/apimachinery/pkg/apis/meta/v1beta1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/util/apihelpers"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/tracing"

	wsmv1alpha1 "github.com/workspacemounts/workspacemounts/virtual/apis/workspacemounts/v1alpha1"
	wsmregistry "github.com/workspacemounts/workspacemounts/virtual/registry/workspacemounts"
)

// fastTables, ahead of the generic handlers, answers the one request kubectl get sends, a list negotiated to a
// meta.k8s.io/v1 Table as plain JSON, with [wsmregistry.REST.WriteTableJSON], through k8s.io/apiserver's negotiation,
// response writer and metrics; anything else it hands on untouched. Without it the list handler answers the same
// bytes, slower (BenchmarkList); why it cannot be given them: docs/design/virtual-apiserver.md.
type fastTables struct {
	storage    *wsmregistry.REST
	serializer runtime.NegotiatedSerializer
	// scope restricts negotiation as the list route's does, from the two fields negotiation reads.
	scope *handlers.RequestScope
	// tableEncoder is the meta.k8s.io/v1 JSON encoder's, which the Table's bytes are written for.
	tableEncoder runtime.Identifier
}

var listPath = "/apis/" + wsmv1alpha1.GroupName + "/" + wsmv1alpha1.SchemeGroupVersion.Version + "/" + wsmv1alpha1.Resource

var tableV1 = metav1.SchemeGroupVersion.WithKind("Table")

func newFastTables(storage *wsmregistry.REST, serializer runtime.NegotiatedSerializer) (*fastTables, error) {
	tableEncoder, err := jsonEncoder(apihelpers.GetMetaInternalVersionCodecs(), metav1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &fastTables{
		storage:      storage,
		serializer:   serializer,
		scope:        &handlers.RequestScope{TableConvertor: storage, MetaGroupVersion: metav1.SchemeGroupVersion},
		tableEncoder: tableEncoder.Identifier(),
	}, nil
}

// ahead puts fastTables ahead of handler, the generic handlers.
func (t *fastTables) ahead(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !t.serve(w, req) {
			handler.ServeHTTP(w, req)
		}
	})
}

// serve answers req if it is the one request fastTables answers, and tells whether it did; if not, it wrote nothing.
func (t *fastTables) serve(w http.ResponseWriter, req *http.Request) bool {
	info, ok := request.RequestInfoFrom(req.Context())
	if !ok || req.Method != http.MethodGet || info.Verb != "list" || req.URL.Path != listPath {
		return false
	}
	mediaType, serializer, err := negotiation.NegotiateOutputMediaType(req, t.serializer, t.scope)
	if err != nil || mediaType.Convert == nil || *mediaType.Convert != tableV1 || !plainJSON(serializer) {
		return false
	}
	options, err := listOptions(req)
	if err != nil {
		return false
	}
	tableOptions, err := tableOptions(req)
	if err != nil || !wsmregistry.WritesTableJSON(tableOptions) {
		return false
	}

	// As handlers.ListResource, then handleList.
	ctx := request.WithNamespace(req.Context(), "")
	ctx, span := tracing.Start(ctx, "List")
	defer span.End(500 * time.Millisecond)
	list, err := t.storage.List(ctx, &options)
	if err != nil {
		span.AddEvent("Left to the list handler")
		return false
	}
	req = req.WithContext(ctx)
	var table runtime.Object
	request.TrackTransformResponseObjectLatency(ctx, func() {
		// The Table's rows are made as they are written.
		table = &tableJSON{write: func(w io.Writer) error { return t.storage.WriteTableJSON(w, list, tableOptions) }, encoder: t.tableEncoder}
	})
	metrics.InstrumentHandlerFunc(metrics.NormalizedVerb(req), info.APIGroup, info.APIVersion, info.Resource, info.Subresource,
		metrics.CleanScope(info), metrics.APIServerComponent, false, "",
		func(w http.ResponseWriter, req *http.Request) {
			responsewriters.WriteObjectNegotiated(apihelpers.GetMetaInternalVersionCodecs(), t.scope, metav1.SchemeGroupVersion, w, req, http.StatusOK, table, false)
		})(w, req)
	return true
}

// plainJSON tells whether a negotiated serializer is JSON and not the pretty one negotiation may swap in.
func plainJSON(info runtime.SerializerInfo) bool {
	return info.MediaType == runtime.ContentTypeJSON && info.PrettySerializer != nil &&
		info.Serializer.Identifier() != info.PrettySerializer.Identifier()
}

// listOptions are a list request's options as handlers/get.go decodes, defaults, validates and converts them; an
// error leaves the request to the handler.
func listOptions(req *http.Request) (metainternalversion.ListOptions, error) {
	options := metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &options); err != nil {
		return options, err
	}
	watchList := utilfeature.DefaultFeatureGate.Enabled(features.WatchList)
	metainternalversion.SetListOptionsDefaults(&options, watchList)
	if errs := metainternalversionvalidation.ValidateListOptions(&options, watchList); len(errs) > 0 {
		return options, errs.ToAggregate()
	}
	if options.FieldSelector != nil {
		var err error
		options.FieldSelector, err = options.FieldSelector.Transform(func(label, value string) (string, string, error) {
			return scheme.ConvertFieldLabel(wsmv1alpha1.SchemeGroupVersion.WithKind(wsmv1alpha1.Kind), label, value)
		})
		if err != nil {
			return options, err
		}
	}
	return options, nil
}

// tableOptions are a Table request's options as handlers/response.go decodes and validates them.
func tableOptions(req *http.Request) (*metav1.TableOptions, error) {
	options := &metav1.TableOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, options); err != nil {
		return nil, err
	}
	return options, metav1beta1validation.ValidateTableOptions(options).ToAggregate()
}

// tableJSON is a Table the storage writes: for the meta.k8s.io/v1 JSON encoder its bytes, for any other the Table
// they decode to.
type tableJSON struct {
	write   func(io.Writer) error
	encoder runtime.Identifier
}

var _ runtime.CacheableObject = &tableJSON{}

// CacheEncode implements [runtime.CacheableObject].
func (t *tableJSON) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	if id == t.encoder {
		return t.write(w)
	}
	return encode(t.GetObject(), w)
}

// GetObject implements [runtime.CacheableObject]: the Table.
func (t *tableJSON) GetObject() runtime.Object {
	var written bytes.Buffer
	table := &metav1.Table{}
	if err := t.write(&written); err != nil {
		utilruntime.HandleError(err)
		return table
	}
	if err := json.Unmarshal(written.Bytes(), table); err != nil {
		utilruntime.HandleError(err)
	}
	return table
}

// DeepCopyObject implements [runtime.Object].
func (t *tableJSON) DeepCopyObject() runtime.Object { return t.GetObject() }

// GetObjectKind implements [runtime.Object].
func (t *tableJSON) GetObjectKind() schema.ObjectKind {
	return &metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: tableV1.Kind}
}
