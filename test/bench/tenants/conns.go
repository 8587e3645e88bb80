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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/workspacemounts/workspacemounts/test/bench/internal/benchsetup"
)

const (
	// connsConcurrency is how many connections are being opened at once.
	connsConcurrency = 32
	// connsSettle is how long the connections are left alone after the last
	// answer before they are counted and the plugin's memory read: past
	// HTTP/2's second between a graceful GOAWAY and the close.
	connsSettle = 10 * time.Second
)

// connsResult is what --conns measured: N connections of one tenant, each
// asking for a watch at *.
type connsResult struct {
	protocol string
	// codes counts the answers (200: a watch accepted).
	codes *counter
	// openAccepted and openRefused are the connections still open after
	// connsSettle, of those whose watch was accepted and of the others.
	openAccepted, openRefused int
	accepted, refused         int
	// before: before the first connection; with: after connsSettle, every
	// connection as the plugin left it; closed: --idle after the client
	// closed all of them.
	before, with, closed memorySample
	// socketsBefore and socketsWith are the plugin's open sockets before
	// the first connection and after connsSettle.
	socketsBefore, socketsWith int
}

// trackedConn is a client connection that remembers when it ended: a read
// from the server failed (the server closed it), or the client closed it
// (net/http's does after an HTTP/1.1 answer with "Connection: close", whose
// server closes it too, and after an HTTP/2 GOAWAY).
type trackedConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.closed.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// sockets counts the open sockets of a process (/proc/<pid>/fd, Linux only):
// its connections, to kcp as well, and its listeners.
func sockets(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n, nil
}

// oneConn is one connection of the tenant: its own transport, so its own
// TCP connection, and what became of it.
type oneConn struct {
	transport *http.Transport
	conn      atomic.Pointer[trackedConn]
	code      int
	cancel    context.CancelFunc
}

// conns opens --conns connections as the first tenant, each with a watch at *,
// leaves them for connsSettle, counts those the plugin left open, and reads the
// plugin's memory before, with the connections, and --idle after closing them.
func (b *bench) conns(ctx context.Context, res *result) error {
	tlsConfig, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: b.plugin.CAFile}})
	if err != nil {
		return err
	}
	protocols := new(http.Protocols)
	cr := &connsResult{codes: &counter{}, protocol: "HTTP/2"}
	if b.opts.connsHTTP1 {
		protocols.SetHTTP1(true)
		cr.protocol = "HTTP/1.1"
	} else {
		protocols.SetHTTP2(true)
	}
	res.conns = cr
	token := b.tokens.tenants[0].token
	url := b.plugin.VirtualWorkspaceURL + wildcardList + "?watch=true&allowWatchBookmarks=true"

	if !sleep(ctx, connsSettle) { // the set-up's garbage collected
		return ctx.Err()
	}
	cr.before = b.sampleMemory(ctx)
	if cr.socketsBefore, err = sockets(b.plugin.Pid()); err != nil {
		return err
	}
	logf("opening %d %s connections as %s, each asking for a watch at *", b.opts.conns, cr.protocol, b.tokens.tenants[0].name)
	conns := make([]*oneConn, b.opts.conns)
	var drains sync.WaitGroup
	err = benchsetup.ForEach(ctx, b.opts.conns, connsConcurrency, func(ctx context.Context, i int) error {
		c := &oneConn{}
		dialer := &net.Dialer{Timeout: 30 * time.Second}
		c.transport = &http.Transport{
			TLSClientConfig: tlsConfig.Clone(), Protocols: protocols, MaxConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				raw, err := dialer.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				tracked := &trackedConn{Conn: raw}
				c.conn.Store(tracked)
				return tracked, nil
			},
		}
		conns[i] = c
		// The watch lives until the end: not the callback's context.
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c.cancel = cancel
		req, err := http.NewRequestWithContext(watchCtx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		resp, err := (&http.Client{Transport: c.transport, Timeout: 0}).Do(req)
		if err != nil {
			cr.codes.add(codeOf(0, err))
			return nil
		}
		c.code = resp.StatusCode
		cr.codes.add(codeOf(resp.StatusCode, nil))
		if resp.StatusCode == http.StatusOK {
			drains.Go(func() {
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
			})
			return nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return resp.Body.Close()
	})
	if err != nil {
		return err
	}
	logf("answers: %s; leaving the connections alone for %s", codes(cr.codes.snapshot()), connsSettle)
	if !sleep(ctx, connsSettle) {
		return ctx.Err()
	}
	for _, c := range conns {
		open := c.conn.Load() != nil && !c.conn.Load().closed.Load()
		if c.code == http.StatusOK {
			cr.accepted++
			if open {
				cr.openAccepted++
			}
			continue
		}
		cr.refused++
		if open {
			cr.openRefused++
		}
	}
	cr.with = b.sampleMemory(ctx)
	if cr.socketsWith, err = sockets(b.plugin.Pid()); err != nil {
		return err
	}
	logf("%d of %d refused connections open, %d of %d accepted; the plugin's sockets: %d before, %d now; closing them all",
		cr.openRefused, cr.refused, cr.openAccepted, cr.accepted, cr.socketsBefore, cr.socketsWith)
	for _, c := range conns {
		c.cancel()
		c.transport.CloseIdleConnections()
		if conn := c.conn.Load(); conn != nil {
			if err := conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				logf("warning: closing a connection: %v", err)
			}
		}
	}
	drains.Wait()
	logf("idling %s", b.opts.idle)
	if !sleep(ctx, b.opts.idle) {
		return ctx.Err()
	}
	cr.closed = b.sampleMemory(ctx)
	return nil
}
