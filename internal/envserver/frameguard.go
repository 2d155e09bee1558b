package envserver

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// errFrameTooBig is a /ws frame whose header declares more bytes than a
// message may have.
var errFrameTooBig = errors.New("frame too big")

// frameGuard reads a client's WebSocket byte stream (RFC 6455 frames)
// and fails as soon as a frame header declares a payload longer than
// limit. The WebSocket library counts a message's bytes only as they
// arrive, so a header declaring 2^62 bytes would hold the connection
// until the limit's worth had come; checked here, it is refused at the
// header.
type frameGuard struct {
	r     io.Reader
	limit int64
	hdr   [14]byte // the header being read
	hn    int      // bytes of hdr read
	left  uint64   // payload bytes of the current frame still to come
	err   error    // sticky: the stream is unusable after it
}

// Read passes on the bytes before a refused frame's header, then fails.
func (g *frameGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if ok, ferr := g.scan(p[:n]); ferr != nil {
		g.err = ferr
		if ok == 0 {
			return 0, ferr
		}
		return ok, nil
	}
	return n, err
}

// scan follows the frames through b. On a refused header it returns the
// length of b before that header began (0 if it began in an earlier
// read).
func (g *frameGuard) scan(b []byte) (int, error) {
	start := 0 // where in b the header being read began
	for i := 0; i < len(b); {
		if g.left > 0 {
			k := uint64(len(b) - i)
			if k > g.left {
				k = g.left
			}
			g.left -= k
			i += int(k)
			continue
		}
		if g.hn == 0 {
			start = i
		}
		g.hdr[g.hn] = b[i]
		g.hn++
		i++
		if g.hn < 2 || g.hn < headerLen(g.hdr[1]) {
			continue
		}
		var length uint64
		switch l7 := g.hdr[1] & 0x7f; l7 {
		case 126:
			length = uint64(binary.BigEndian.Uint16(g.hdr[2:4]))
		case 127:
			length = binary.BigEndian.Uint64(g.hdr[2:10])
		default:
			length = uint64(l7)
		}
		if length > uint64(g.limit) {
			if i-start < g.hn {
				start = 0 // the header began in an earlier read
			}
			return start, fmt.Errorf("%w: a frame header declares %d bytes, more than --max-message-bytes (%d)", errFrameTooBig, length, g.limit)
		}
		g.left, g.hn = length, 0
	}
	return len(b), nil
}

// headerLen is a frame header's length given its second byte: the
// extended length (2 or 8 bytes) and the mask key (4) follow it.
func headerLen(b1 byte) int {
	n := 2
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	return n
}

// guardedConn is a hijacked connection whose reads go through a
// frameGuard.
type guardedConn struct {
	net.Conn
	g *frameGuard
}

func (c *guardedConn) Read(p []byte) (int, error) { return c.g.Read(p) }

// guardWriter hands the WebSocket library, when it hijacks the
// connection, a guarded one; it also lifts the body read deadline
// (bodyDeadline), which a long-lived connection must not keep.
type guardWriter struct {
	http.ResponseWriter
	limit int64
}

func (w *guardWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("clear the read deadline: %w", err)
	}
	// Bytes the server read past the request are the first frames'.
	buffered, _ := brw.Reader.Peek(brw.Reader.Buffered())
	src := io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), conn)
	gc := &guardedConn{Conn: conn, g: &frameGuard{r: src, limit: w.limit}}
	return gc, bufio.NewReadWriter(bufio.NewReader(gc), brw.Writer), nil
}

func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
