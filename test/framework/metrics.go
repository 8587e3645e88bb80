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
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a Prometheus text endpoint, by metric family name.
type Metrics map[string]*dto.MetricFamily

// ScrapeMetrics GETs url (a /metrics endpoint) with client and parses the
// Prometheus text format with expfmt.
func ScrapeMetrics(ctx context.Context, client *http.Client, url string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	// The text format only: expfmt's text parser reads nothing else.
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return ParseMetrics(resp.Body)
}

// ParseMetrics parses the Prometheus text exposition format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return Metrics(families), nil
}

// Sum adds up the values of the counter, gauge or untyped samples of metric
// name whose labels include want, and tells whether there was any.
func (m Metrics) Sum(name string, want map[string]string) (float64, bool) {
	family, ok := m[name]
	if !ok {
		return 0, false
	}
	var sum float64
	var found bool
	for _, metric := range family.GetMetric() {
		if !hasLabels(metric, want) {
			continue
		}
		switch {
		case metric.Counter != nil:
			sum += metric.GetCounter().GetValue()
		case metric.Gauge != nil:
			sum += metric.GetGauge().GetValue()
		case metric.Untyped != nil:
			sum += metric.GetUntyped().GetValue()
		default:
			continue
		}
		found = true
	}
	return sum, found
}

// LabelValues returns the values label takes in the samples of metric name.
func (m Metrics) LabelValues(name, label string) map[string]bool {
	values := map[string]bool{}
	for _, metric := range m[name].GetMetric() {
		for _, pair := range metric.GetLabel() {
			if pair.GetName() == label {
				values[pair.GetValue()] = true
			}
		}
	}
	return values
}

func hasLabels(metric *dto.Metric, want map[string]string) bool {
	matched := 0
	for _, pair := range metric.GetLabel() {
		if v, ok := want[pair.GetName()]; ok {
			if v != pair.GetValue() {
				return false
			}
			matched++
		}
	}
	return matched == len(want)
}
