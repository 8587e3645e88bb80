//go:build tools

// Package kcp only pins the kcp server commands: `build.sh kcp OUTPUT`
// builds the server (cache-server and kcp-front-proxy the other processes
// of a sharded kcp), with the backported fixes of patches/.
package kcp

import (
	_ "github.com/kcp-dev/kcp/cmd/cache-server"
	_ "github.com/kcp-dev/kcp/cmd/kcp"
	_ "github.com/kcp-dev/kcp/cmd/kcp-front-proxy"
)
