//go:build tools

// Package tools only pins the development tools of this repository: `go build
// <import path>` run from this directory builds the pinned version of each
// (the Makefile does, into bin/).
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
	// actionlint checks the GitHub Actions workflows (.github/workflows,
	// make lint).
	_ "github.com/rhysd/actionlint/cmd/actionlint"
	// deepcopy-gen and openapi-gen write the zz_generated files of the API
	// package (make codegen). They are the generators of the Kubernetes the
	// plugin builds against, kcp's fork, so the output is what that
	// Kubernetes's own API packages have.
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
