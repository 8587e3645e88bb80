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

package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	genericapiserveroptions "k8s.io/apiserver/pkg/server/options"
)

// refusalsWait is how long a test waits for the server to close a
// connection, or watches it stay open: HTTP/2 closes one a second after its
// GOAWAY once its streams are done.
const refusalsWait = 3 * time.Second

// refusalsServer serves alice (allowed in c1) with one watch per user, and a
// front-proxy; alice's one watch is taken, by a connection of its own.
func refusalsServer(t *testing.T) (*testServer, *pki) {
	t.Helper()
	frontProxy := newPKI(t)
	ts := startServer(t, func(_ *testServer, o *Options, _ *Dependencies) {
		o.Shares.PerUserWatches = 1
		o.RequestHeader = genericapiserveroptions.RequestHeaderAuthenticationOptions{
			ClientCAFile: frontProxy.caFile, AllowedNames: []string{"kcp-front-proxy"},
			UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"},
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clusterURL(ts, "c1", resourcePath+"?watch=true"), http.NoBody)
	require.NoError(t, err)
	client := ts.client(t, "alice")
	client.Timeout = 0
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode, "alice's one watch")
	return ts, frontProxy
}

// refusalCase is a request and what becomes of its connection.
type refusalCase struct {
	name   string
	cert   *tls.Certificate // none: no credential
	header http.Header
	path   string
	code   int
	closed bool
}

func refusalCases(t *testing.T, ts *testServer, frontProxy *pki) []refusalCase {
	t.Helper()
	cert := func(p *pki, name string, groups ...string) *tls.Certificate {
		c := p.clientCert(t, name, groups...)
		return &c
	}
	list, watch := "/services/workspacemounts/clusters/c1"+resourcePath, "/services/workspacemounts/clusters/c1"+resourcePath+"?watch=true"
	return []refusalCase{
		{name: "no credential: 401", path: list, code: http.StatusUnauthorized, closed: true},
		{name: "a certificate of another CA: 401", cert: cert(newPKI(t), "alice"), path: list, code: http.StatusUnauthorized, closed: true},
		{name: "over the user's watches: 429", cert: cert(ts.pki, "alice"), path: watch, code: http.StatusTooManyRequests, closed: true},
		{name: "forbidden: 403, open", cert: cert(ts.pki, "bob"), path: list, code: http.StatusForbidden},
		{name: "allowed: 200, open", cert: cert(ts.pki, "alice"), path: list, code: http.StatusOK},
		{name: "the front-proxy without a user: 401", cert: cert(frontProxy, "kcp-front-proxy"), path: list, code: http.StatusUnauthorized, closed: true},
		{
			name: "the front-proxy for alice over her watches: 429, open", cert: cert(frontProxy, "kcp-front-proxy"),
			header: http.Header{"X-Remote-User": {"alice"}}, path: watch, code: http.StatusTooManyRequests,
		},
		{
			name: "a certificate of the front-proxy's CA with another name: 401", cert: cert(frontProxy, "mallory"),
			header: http.Header{"X-Remote-User": {"alice"}}, path: list, code: http.StatusUnauthorized, closed: true,
		},
	}
}

// dialTLS opens a TLS connection to ts offering one protocol.
func dialTLS(t *testing.T, ts *testServer, cert *tls.Certificate, proto string) *tls.Conn {
	t.Helper()
	config := &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{proto}}
	if cert != nil {
		config.Certificates = []tls.Certificate{*cert}
	}
	conn, err := (&tls.Dialer{Config: config}).DialContext(context.Background(), "tcp", strings.TrimPrefix(ts.url, "https://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.Equal(t, proto, conn.(*tls.Conn).ConnectionState().NegotiatedProtocol)
	return conn.(*tls.Conn)
}

// TestRefusalsCloseTheirConnection: a request answered 401 or 429 ends its
// connection, HTTP/1.1 (closed after the answer) and HTTP/2 (a GOAWAY with
// NO_ERROR, then closed), but a 429 on the front-proxy's connection; other
// answers leave it open.
func TestRefusalsCloseTheirConnection(t *testing.T) {
	t.Parallel()
	ts, frontProxy := refusalsServer(t)
	for _, tc := range refusalCases(t, ts, frontProxy) {
		t.Run("HTTP/1.1 "+tc.name, func(t *testing.T) {
			t.Parallel()
			conn := dialTLS(t, ts, tc.cert, "http/1.1")
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.url+tc.path, http.NoBody)
			require.NoError(t, err)
			req.Header = tc.header.Clone()
			require.NoError(t, req.Write(conn))
			reader := bufio.NewReader(conn)
			resp, err := http.ReadResponse(reader, req)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, tc.code, resp.StatusCode)
			require.Equal(t, tc.closed, resp.Close, "Connection: close")

			require.NoError(t, conn.SetReadDeadline(time.Now().Add(refusalsWait)))
			_, err = reader.ReadByte()
			var timeout net.Error
			if tc.closed {
				require.ErrorIs(t, err, io.EOF, "the server closes the connection")
			} else {
				require.ErrorAs(t, err, &timeout, "the connection stays open")
			}
		})
		t.Run("HTTP/2 "+tc.name, func(t *testing.T) {
			t.Parallel()
			h2 := newH2Conn(t, dialTLS(t, ts, tc.cert, "h2"))
			h2.request(t, 1, tc.path, tc.header)
			got := h2.readUntil(t, time.Now().Add(refusalsWait))
			require.Equal(t, tc.code, got.status[1])
			if tc.closed {
				require.Equal(t, http2.ErrCodeNo, got.goAway, "a graceful GOAWAY")
				require.True(t, got.closed, "then the server closes the connection")
			} else {
				require.Nil(t, got.goAway, "no GOAWAY")
				require.False(t, got.closed, "the connection stays open")
			}
		})
	}
}

// TestRefusalOnASharedHTTP2Connection: a refusal on an HTTP/2 connection
// with another stream open ends the connection gracefully: the GOAWAY names
// the last stream, the open one goes on, the connection stays open.
func TestRefusalOnASharedHTTP2Connection(t *testing.T) {
	t.Parallel()
	ts, _ := refusalsServer(t)
	// alice in group g is another user for the shares: her one watch is free.
	cert := ts.pki.clientCert(t, "alice", "g")
	h2 := newH2Conn(t, dialTLS(t, ts, &cert, "h2"))
	watch := "/services/workspacemounts/clusters/c1" + resourcePath + "?watch=true"
	h2.request(t, 1, watch, nil)
	// The second watch only once the first holds the share: both at once may be served in either order.
	first := h2.readUntilDone(t, time.Now().Add(refusalsWait), func(got h2Result) bool { return got.status[1] != 0 })
	require.Equal(t, map[uint32]int{1: http.StatusOK}, first.status)
	h2.request(t, 3, watch, nil)
	got := h2.readUntil(t, time.Now().Add(refusalsWait))
	require.Equal(t, map[uint32]int{3: http.StatusTooManyRequests}, got.status)
	require.Equal(t, http2.ErrCodeNo, got.goAway)
	require.Equal(t, uint32(3), got.lastStreamID)
	require.NotContains(t, got.reset, uint32(1), "the watch is not reset")
	require.False(t, got.closed, "the watch keeps the connection open")
}

// TestRefusedClientsReconnect: net/http's client, the transport of
// client-go, sends its next request on a new connection after a refusal,
// and on the same one after another answer, in both protocols.
func TestRefusedClientsReconnect(t *testing.T) {
	t.Parallel()
	ts, frontProxy := refusalsServer(t)
	for _, tc := range refusalCases(t, ts, frontProxy) {
		for _, useHTTP2 := range []bool{false, true} {
			name := "HTTP/1.1 " + tc.name
			if useHTTP2 {
				name = "HTTP/2 " + tc.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var dials atomic.Int32
				protocols := new(http.Protocols)
				protocols.SetHTTP1(!useHTTP2)
				protocols.SetHTTP2(useHTTP2)
				config := &tls.Config{RootCAs: ts.serverCAs, MinVersion: tls.VersionTLS12}
				if tc.cert != nil {
					config.Certificates = []tls.Certificate{*tc.cert}
				}
				transport := &http.Transport{
					TLSClientConfig: config, Protocols: protocols,
					DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
						dials.Add(1)
						return (&net.Dialer{}).DialContext(ctx, network, addr)
					},
				}
				t.Cleanup(transport.CloseIdleConnections)
				client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
				for range 2 {
					req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, ts.url+tc.path, http.NoBody)
					require.NoError(t, err)
					req.Header = tc.header.Clone()
					resp, err := client.Do(req)
					require.NoError(t, err)
					_, _ = io.Copy(io.Discard, resp.Body)
					require.NoError(t, resp.Body.Close())
					require.Equal(t, tc.code, resp.StatusCode)
					require.Equal(t, map[bool]int{false: 1, true: 2}[useHTTP2], resp.ProtoMajor)
				}
				want := int32(1)
				if tc.closed {
					want = 2
				}
				require.Equal(t, want, dials.Load(), "connections dialled")
			})
		}
	}
}

// h2Conn speaks HTTP/2 frames on a connection, as a client.
type h2Conn struct {
	conn   *tls.Conn
	framer *http2.Framer
	lock   sync.Mutex // the encoder and framer's writes
	enc    *hpack.Encoder
	buf    bytes.Buffer
	dec    *hpack.Decoder // the server's header blocks, whose dynamic table lasts as long as the connection
}

func newH2Conn(t *testing.T, conn *tls.Conn) *h2Conn {
	t.Helper()
	c := &h2Conn{conn: conn, framer: http2.NewFramer(conn, conn), dec: hpack.NewDecoder(4096, nil)}
	c.enc = hpack.NewEncoder(&c.buf)
	_, err := io.WriteString(conn, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.framer.WriteSettings())
	return c
}

// request opens stream id with a GET of path.
func (c *h2Conn) request(t *testing.T, id uint32, path string, header http.Header) {
	t.Helper()
	c.lock.Lock()
	defer c.lock.Unlock()
	c.buf.Reset()
	fields := []hpack.HeaderField{{Name: ":method", Value: http.MethodGet}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: c.conn.RemoteAddr().String()}, {Name: ":path", Value: path}}
	for name, values := range header {
		for _, v := range values {
			fields = append(fields, hpack.HeaderField{Name: strings.ToLower(name), Value: v})
		}
	}
	for _, f := range fields {
		require.NoError(t, c.enc.WriteField(f))
	}
	require.NoError(t, c.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndStream: true, EndHeaders: true}))
}

// h2Result is what the server sent on an h2Conn.
type h2Result struct {
	status       map[uint32]int // by stream
	reset        []uint32       // streams reset by the server
	goAway       any            // its error code, nil without a GOAWAY
	lastStreamID uint32
	closed       bool // the server closed the connection
}

// readUntil reads frames until the server closes the connection or deadline.
func (c *h2Conn) readUntil(t *testing.T, deadline time.Time) h2Result {
	t.Helper()
	return c.readUntilDone(t, deadline, func(h2Result) bool { return false })
}

// readUntilDone reads frames until done tells so of what was read, the server closes the connection, or deadline.
func (c *h2Conn) readUntilDone(t *testing.T, deadline time.Time, done func(h2Result) bool) h2Result {
	t.Helper()
	got := h2Result{status: map[uint32]int{}}
	require.NoError(t, c.conn.SetReadDeadline(deadline))
	for !done(got) {
		frame, err := c.framer.ReadFrame()
		var timeout net.Error
		switch {
		case errors.Is(err, io.EOF):
			got.closed = true
			return got
		case errors.As(err, &timeout) && timeout.Timeout():
			return got
		}
		require.NoError(t, err)
		switch f := frame.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.lock.Lock()
				require.NoError(t, c.framer.WriteSettingsAck())
				c.lock.Unlock()
			}
		case *http2.HeadersFrame:
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			require.NoError(t, err)
			for _, field := range fields {
				if field.Name == ":status" {
					code, err := strconv.Atoi(field.Value)
					require.NoError(t, err)
					got.status[f.StreamID] = code
				}
			}
		case *http2.RSTStreamFrame:
			got.reset = append(got.reset, f.StreamID)
		case *http2.GoAwayFrame:
			got.goAway, got.lastStreamID = f.ErrCode, f.LastStreamID
		}
	}
	return got
}
