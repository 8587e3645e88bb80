//go:build tools

// Package prometheus only pins the Prometheus server and promtool commands;
// `go build github.com/prometheus/prometheus/cmd/prometheus` (and
// .../cmd/promtool) builds them.
package prometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
