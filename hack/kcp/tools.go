//go:build tools

// Package kcp only pins the kcp server command; `go build github.com/kcp-dev/kcp/cmd/kcp` builds it.
package kcp

import (
	_ "github.com/kcp-dev/kcp/cmd/kcp"
)
