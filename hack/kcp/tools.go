//go:build tools

// Package kcp only pins the kcp server commands: `go build
// github.com/kcp-dev/kcp/cmd/kcp` builds the server (cmd/cache-server and
// cmd/kcp-front-proxy the other processes of a sharded kcp).
package kcp

import (
	_ "github.com/kcp-dev/kcp/cmd/cache-server"
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/cmd/kcp-front-proxy"
)
