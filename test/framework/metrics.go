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
	"strings"

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

// Sum adds up the values of the samples of metric name whose labels include
// want, and tells whether there was any. name is a counter, gauge or untyped
// family, or the _count or _sum series of a histogram or summary family.
func (m Metrics) Sum(name string, want map[string]string) (float64, bool) {
	family, value := m[name], sampleValue
	if family == nil {
		family, value = m.histogramOrSummary(name)
		if family == nil {
			return 0, false
		}
	}
	var sum float64
	var found bool
	for _, metric := range family.GetMetric() {
		if !hasLabels(metric, want) {
			continue
		}
		v, ok := value(metric)
		if !ok {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// Value is Sum with 0 for a metric without a sample matching want.
func (m Metrics) Value(name string, want map[string]string) float64 {
	v, _ := m.Sum(name, want)
	return v
}

// sampleValue is the value of a counter, gauge or untyped sample.
func sampleValue(metric *dto.Metric) (float64, bool) {
	switch {
	case metric.Counter != nil:
		return metric.GetCounter().GetValue(), true
	case metric.Gauge != nil:
		return metric.GetGauge().GetValue(), true
	case metric.Untyped != nil:
		return metric.GetUntyped().GetValue(), true
	default:
		return 0, false
	}
}

// histogramOrSummary returns the family whose _count or _sum series name is,
// and how to read that series from its samples; nil if there is none.
func (m Metrics) histogramOrSummary(name string) (*dto.MetricFamily, func(*dto.Metric) (float64, bool)) {
	if base, ok := strings.CutSuffix(name, "_count"); ok && m[base] != nil {
		return m[base], func(metric *dto.Metric) (float64, bool) {
			switch {
			case metric.Histogram != nil:
				return float64(metric.GetHistogram().GetSampleCount()), true
			case metric.Summary != nil:
				return float64(metric.GetSummary().GetSampleCount()), true
			default:
				return 0, false
			}
		}
	}
	if base, ok := strings.CutSuffix(name, "_sum"); ok && m[base] != nil {
		return m[base], func(metric *dto.Metric) (float64, bool) {
			switch {
			case metric.Histogram != nil:
				return metric.GetHistogram().GetSampleSum(), true
			case metric.Summary != nil:
				return metric.GetSummary().GetSampleSum(), true
			default:
				return 0, false
			}
		}
	}
	return nil, nil
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
