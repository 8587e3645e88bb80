//go:build tools

// Package tools pins helm (make test-chart builds bin/helm from here), in a
// module of its own so that helm's Kubernetes dependencies do not move those
// of golangci-lint and code-generator in hack/tools.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
