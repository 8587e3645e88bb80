//go:build tools

// Package tools only pins the development tools of this repository;
// `go build github.com/golangci/golangci-lint/v2/cmd/golangci-lint` run from
// this directory builds the pinned linter.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
