package envserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coder/websocket"
)

// clientFrame is a masked client frame header declaring n payload bytes,
// followed by the payload when it is given.
func clientFrame(n uint64, payload []byte) []byte {
	b := []byte{0x81}
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	b = append(b, 1, 2, 3, 4) // the mask key
	return append(b, payload...)
}

// The guard passes every byte of frames within the limit, however the
// reads split them, and stops at the header of the first frame past it,
// after passing the bytes before that header.
func TestFrameGuard(t *testing.T) {
	ok1 := clientFrame(5, []byte("hello"))
	ok2 := clientFrame(300, bytes.Repeat([]byte("x"), 300))
	ok3 := clientFrame(0, nil)
	tests := []struct {
		name   string
		stream []byte
		pass   int // bytes passed before the error
		tooBig bool
		limit  int64
	}{
		{"frames within the limit", concat(ok1, ok2, ok3), len(ok1) + len(ok2) + len(ok3), false, 1000},
		{"a frame of exactly the limit", concat(ok2), len(ok2), false, 300},
		{"2^62 bytes declared", concat(ok1, clientFrame(1<<62, nil)), len(ok1), true, 16 << 20},
		{"a 64-bit length with the top bit set", concat(clientFrame(1<<63, nil)), 0, true, 16 << 20},
		{"one byte past the limit (16-bit length)", concat(ok1, ok3, clientFrame(301, nil)), len(ok1) + len(ok3), true, 300},
		{"one byte past the limit (7-bit length)", concat(clientFrame(5, []byte("hello"))), 0, true, 4},
	}
	for _, tt := range tests {
		for _, split := range []string{"whole", "byte by byte"} {
			t.Run(tt.name+"/"+split, func(t *testing.T) {
				var r io.Reader = bytes.NewReader(tt.stream)
				if split != "whole" {
					r = iotest.OneByteReader(r)
				}
				got, err := io.ReadAll(&frameGuard{r: r, limit: tt.limit})
				if errors.Is(err, errFrameTooBig) != tt.tooBig || (!tt.tooBig && err != nil) {
					t.Errorf("read = %v, want too big: %v", err, tt.tooBig)
				}
				// Read by read, the start of the refused header has
				// gone through before the guard sees its length.
				if !bytes.HasPrefix(tt.stream, got) || len(got) < tt.pass || len(got) >= tt.pass+14 || (split == "whole" && len(got) != tt.pass) {
					t.Errorf("passed %d bytes, want the first %d and at most the header's start", len(got), tt.pass)
				}
			})
		}
	}
}

func concat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// rawWS opens /ws by hand, for frames no WebSocket library would send.
func rawWS(t *testing.T, base string) (net.Conn, *bufio.Reader) {
	t.Helper()
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return c, br
}

// A frame header declaring 2^62 bytes is refused at the header: the
// server closes with 1009 at once instead of waiting for 16 MiB, and
// frees the connection's slot.
func TestFrameHeaderPastLimit(t *testing.T) {
	f := newFixture(t, nil)
	c, br := rawWS(t, f.url)
	if _, err := c.Write(clientFrame(1<<62, nil)); err != nil {
		t.Fatal(err)
	}
	// Without the check the server would wait for the bytes until the
	// idle timeout (10 minutes): the deadline fails the test long before.
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatalf("no close frame after the header: %v", err)
	}
	if hdr[0] != 0x88 || hdr[1] < 2 || binary.BigEndian.Uint16(hdr[2:]) != uint16(websocket.StatusMessageTooBig) {
		t.Errorf("reply % x, want a close frame with status 1009", hdr)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the server did not close the connection: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "the connection's slot freed", func() bool { return f.slots() == 0 })
}

// Of N+k connections open at once on MaxSessions N, exactly k get
// CAPACITY_REACHED and then a close, whatever they send first; the N
// others are served.
func TestCapacityConcurrent(t *testing.T) {
	const n, k = 3, 5
	f := newFixture(t, func(o *Options) { o.MaxSessions = n })
	type outcome struct {
		w       *wsClient
		first   map[string]any
		closeOK bool
		err     error
	}
	out := make([]outcome, n+k)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := f.tryDial("", nil)
			if err != nil {
				out[i].err = err
				return
			}
			out[i].w = w
			// Every client speaks first, as OpenEnv's clients do: a
			// refused one must still see CAPACITY_REACHED, not a reply.
			// (A refused one may be closed before its write: its error
			// is of no interest.)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w.c.Write(ctx, websocket.MessageText, []byte(`{"type": "state"}`))
			out[i].first, out[i].err = w.tryRecv(time.Minute)
			if errorCode(out[i].first) == CodeCapacityReached {
				_, err := w.tryRecv(30 * time.Second)
				out[i].closeOK = websocket.CloseStatus(err) == websocket.StatusNormalClosure
			}
		}()
	}
	wg.Wait()
	served, refused := 0, 0
	for i, o := range out {
		switch {
		case o.err != nil:
			t.Errorf("connection %d: %v", i, o.err)
		case errorCode(o.first) == CodeCapacityReached:
			refused++
			if !o.closeOK {
				t.Errorf("connection %d: CAPACITY_REACHED without the close after it", i)
			}
		case o.first["type"] == "state":
			served++
		default:
			t.Errorf("connection %d: first message %v", i, o.first)
		}
	}
	if served != n || refused != k {
		t.Errorf("served %d, refused %d; want %d and %d", served, refused, n, k)
	}
	for _, o := range out {
		if o.first["type"] != "state" {
			continue
		}
		if r := o.w.call(`{"type": "reset", "data": {"kind": "shell", "env": "calc-env"}}`); r["type"] != "observation" {
			t.Errorf("reset on a served connection = %v", r)
		}
		if r := o.w.call(bash("echo served")); obs(r)["output"] != "served" {
			t.Errorf("step on a served connection = %v", r)
		}
		o.w.send(`{"type": "close"}`)
	}
	waitFor(t, 30*time.Second, "every slot freed", func() bool { return f.slots() == 0 })
}

// An authenticated request whose body drips is answered 408 once the
// body timeout passes; a request whose body arrived is not bounded by
// it, however long its handler runs.
func TestSlowBody(t *testing.T) {
	const token = "body-t0ken"
	f := newFixture(t, func(o *Options) { o.Token, o.BodyTimeout = token, 300*time.Millisecond })
	addr := strings.TrimPrefix(f.url, "http://")
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/episodes HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr, token)
	stop := make(chan struct{})
	dripped := make(chan struct{})
	go func() {
		defer close(dripped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	close(stop)
	<-dripped
	if err != nil {
		t.Fatalf("no answer to a dripping body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("dripping body = %d %s, want 408", resp.StatusCode, b)
	}

	code, body, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, token)
	if code != 201 {
		t.Fatalf("create = %d %v", code, body)
	}
	id := body["episode_id"].(string)
	step := map[string]any{"action": map[string]any{"text": "<tool: bash>\nsleep 1; echo slow\n</tool>"}}
	if code, r, _ := f.do("POST", "/v1/episodes/"+id+"/step", step, token); code != 200 || obs(r)["output"] != "slow" {
		t.Errorf("a step longer than the body timeout = %d %v", code, r)
	}
	f.do("DELETE", "/v1/episodes/"+id, nil, token)
}

// Episode ids a client names are plain names; anything else is a
// VALIDATION_ERROR (422 over REST) wherever it is named.
func TestEpisodeIDs(t *testing.T) {
	f := newFixture(t, nil)
	bad := []string{"a/b", "..", ".", "../../etc", "x\ny", "a b", "tab\t", "é", strings.Repeat("a", 256), "nul\x00"}
	w := f.dial("")
	for _, id := range bad {
		r := w.call(map[string]any{"type": "reset", "data": map[string]any{"kind": "shell", "env": "calc-env", "episode_id": id}})
		if errorCode(r) != CodeValidationError {
			t.Errorf("reset with episode_id %q = %v, want VALIDATION_ERROR", id, r)
		}
		if code, b, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env", "episode_id": id}, ""); code != 422 || b["code"] != CodeValidationError {
			t.Errorf("POST /v1/episodes with episode_id %q = %d %v, want 422", id, code, b)
		}
	}
	good := "Ep-1.a_b"
	if r := w.call(map[string]any{"type": "reset", "data": map[string]any{"kind": "shell", "env": "calc-env", "episode_id": good}}); r["type"] != "observation" {
		t.Fatalf("reset with episode_id %q = %v", good, r)
	}
	for _, id := range bad {
		if r := w.call(map[string]any{"type": "clone", "data": map[string]any{"episode_id": id}}); errorCode(r) != CodeValidationError {
			t.Errorf("clone with episode_id %q = %v, want VALIDATION_ERROR", id, r)
		}
		if code, b, _ := f.do("POST", "/v1/episodes/"+good+"/clone", map[string]any{"episode_id": id}, ""); code != 422 {
			t.Errorf("REST clone with episode_id %q = %d %v, want 422", id, code, b)
		}
	}
	for _, id := range []string{"a b", "x\ny", "é", "a\\b"} {
		if code, b, _ := f.do("GET", "/v1/episodes/"+url.PathEscape(id), nil, ""); code != 422 || b["code"] != CodeValidationError {
			t.Errorf("GET /v1/episodes/%q = %d %v, want 422", id, code, b)
		}
		a, err := f.tryDial("?episode_id="+url.QueryEscape(id), nil)
		if err != nil {
			t.Fatalf("attach to %q: %v", id, err)
		}
		if r := a.recv(); errorCode(r) != CodeValidationError {
			t.Errorf("attach to %q = %v, want VALIDATION_ERROR", id, r)
		}
	}
	if r := w.call(map[string]any{"type": "clone", "data": map[string]any{"episode_id": "branch-2"}}); r["type"] != "clone" {
		t.Errorf("clone with a good id = %v", r)
	}
	w.send(`{"type": "close"}`)
	waitFor(t, 30*time.Second, "every slot freed", func() bool { return f.slots() == 0 })
}
