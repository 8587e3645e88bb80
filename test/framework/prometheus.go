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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

const (
	// prometheusReadyTimeout bounds how long StartPrometheus waits for /-/ready.
	prometheusReadyTimeout = time.Minute
	// prometheusStopTimeout bounds how long Stop waits after SIGTERM before SIGKILL.
	prometheusStopTimeout = 15 * time.Second
)

// PrometheusOptions says how StartPrometheus runs Prometheus.
type PrometheusOptions struct {
	// Binary is the Prometheus executable. Default: $PROMETHEUS_BINARY, else
	// <repo root>/bin/prometheus (built from hack/prometheus by `make bin/prometheus`).
	Binary string
	// WorkDir holds the configuration, the TSDB and the log. It must exist.
	WorkDir string
	// Job is the scrape job's name, the job label of its series (the alert
	// rules of deploy/monitoring expect "workspacemounts").
	Job string
	// Targets are the host:port addresses the job scrapes /metrics of, over plain HTTP.
	Targets []string
	// Interval is both the scrape and the rule evaluation interval. Default: 1s.
	Interval time.Duration
	// RuleFiles are Prometheus rule files to load.
	RuleFiles []string
}

// Prometheus is a Prometheus server running as a Process, with a static
// scrape configuration, its TSDB in its work directory, and its HTTP API on
// a free port of 127.0.0.1.
type Prometheus struct {
	// Process is the process; LogPath its log.
	*Process
	client *http.Client

	// URL is the HTTP API and UI, http://127.0.0.1:<port>.
	URL string
}

// prometheusConfig is the part of prometheus.yml StartPrometheus writes.
type prometheusConfig struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles     []string       `json:"rule_files,omitempty"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string         `json:"job_name"`
	StaticConfigs []staticConfig `json:"static_configs"`
}

type staticConfig struct {
	Targets []string `json:"targets"`
}

// StartPrometheus writes a prometheus.yml scraping opts.Targets as job
// opts.Job and loading opts.RuleFiles, starts Prometheus with it, and waits
// until Prometheus says it is ready (/-/ready), which is before the first
// scrape. The caller must call Stop.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	var err error
	if opts.Binary, err = findBinary(opts.Binary, "PROMETHEUS_BINARY", "prometheus", "bin/prometheus"); err != nil {
		return nil, err
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}

	var cfg prometheusConfig
	cfg.Global.ScrapeInterval = model.Duration(opts.Interval).String()
	cfg.Global.EvaluationInterval = cfg.Global.ScrapeInterval
	cfg.RuleFiles = opts.RuleFiles
	cfg.ScrapeConfigs = []scrapeConfig{{JobName: opts.Job, StaticConfigs: []staticConfig{{Targets: opts.Targets}}}}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(opts.WorkDir, "prometheus.yml")
	if err := os.WriteFile(configPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("writing the Prometheus configuration: %w", err)
	}

	port, err := FreePort(ctx)
	if err != nil {
		return nil, err
	}
	address := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--config.file=" + configPath,
		"--storage.tsdb.path=" + filepath.Join(opts.WorkDir, "data"),
		"--web.listen-address=" + address,
	}
	apiURL := "http://" + address
	p := &Prometheus{
		Process: newProcess("prometheus", apiURL, opts.Binary, args, opts.WorkDir, filepath.Join(opts.WorkDir, "prometheus.log"), prometheusStopTimeout),
		client:  &http.Client{Timeout: 10 * time.Second},
		URL:     apiURL,
	}
	i, err := p.start()
	if err != nil {
		return nil, err
	}
	err = p.waitReady(ctx, i, prometheusReadyTimeout, func(ctx context.Context) (bool, string) {
		return probe(ctx, p.client, p.URL+"/-/ready")
	})
	if err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

// Query evaluates expr at the current time (/api/v1/query) and returns the
// resulting vector; an expression that returns no vector is an error.
func (p *Prometheus) Query(ctx context.Context, expr string) (model.Vector, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query?"+url.Values{"query": {expr}}.Encode(), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, not a vector", expr, data.ResultType)
	}
	var vector model.Vector
	if err := json.Unmarshal(data.Result, &vector); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	return vector, nil
}

// Alert is one active (pending or firing) alert of /api/v1/alerts.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is "pending" or "firing".
	State    string    `json:"state"`
	ActiveAt time.Time `json:"activeAt"`
	Value    string    `json:"value"`
}

// Alerts returns the active alerts: those whose rule's expression returns
// something, pending for the rule's `for:`, then firing.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", &data); err != nil {
		return nil, err
	}
	return data.Alerts, nil
}

// get GETs an API path and decodes the data of a successful answer into out.
func (p *Prometheus) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	if answer.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, answer.Error)
	}
	return json.Unmarshal(answer.Data, out)
}
