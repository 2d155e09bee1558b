package envserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Close statuses of /ws connections the server ends.
const (
	wsGoingAway = websocket.StatusGoingAway       // the server stops
	wsPolicy    = websocket.StatusPolicyViolation // idle past the timeout
)

// writeTimeout bounds sending one reply to a client that does not read.
const writeTimeout = 30 * time.Second

// refusedLinger is how long a refused connection (CAPACITY_REACHED, an
// episode it cannot attach to) stays open for the client's first message
// before it is closed.
const refusedLinger = 2 * time.Second

// wsConn is one /ws connection: OpenEnv's session, which holds at most one
// episode at a time (reset replaces it) and owns the clones it made that
// no other connection attached.
type wsConn struct {
	s      *Server
	ws     *websocket.Conn
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	last   atomic.Int64 // Unix nanoseconds of the last message
	busy   atomic.Bool

	// entry is the connection's episode; bare is set while it holds a
	// slot without one. Both are the handler goroutine's, guarded by the
	// server's mu for readers elsewhere.
	entry *entry
	bare  bool

	shutOnce sync.Once
}

func (c *wsConn) idle(now time.Time) time.Duration {
	if c.busy.Load() {
		return 0
	}
	return now.Sub(time.Unix(0, c.last.Load()))
}

func (c *wsConn) episodeID() string {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.entry == nil {
		return ""
	}
	return c.entry.id
}

// shutdown ends the connection from outside its handler: an error
// message saying why (unless the server stops), then the close
// handshake. The handler's read fails and it cleans up.
func (c *wsConn) shutdown(code websocket.StatusCode, why string) {
	c.shutOnce.Do(func() {
		if code != wsGoingAway {
			c.send(wsReply{Type: "error", Data: map[string]any{"message": why, "code": CodeSessionError}})
		}
		// The close handshake first: cancelling the handler's read would
		// drop the connection without a close frame.
		go func() {
			c.ws.Close(code, why)
			c.cancel()
		}()
	})
}

// send writes one reply.
func (c *wsConn) send(r wsReply) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// errorReply is the error message of err, with OpenEnv's code.
func (s *Server) errorReply(err error) wsReply {
	_, code := classify(err)
	s.metrics.failed(code)
	data := errorDetails(err)
	data["message"], data["code"] = err.Error(), code
	return wsReply{Type: "error", Data: data}
}

// errorDetails are the fields an error adds to its message: pydantic's
// list of a validation error, the counts of a capacity error.
func errorDetails(err error) map[string]any {
	data := map[string]any{}
	var ve *validationError
	var ce *capacityError
	switch {
	case errors.As(err, &ve):
		data["errors"] = ve.errs
	case errors.As(err, &ce):
		data["active_sessions"], data["max_sessions"] = ce.active, ce.max
		if ce.machine != "" {
			data["machine_limit"] = ce.machine
		}
	}
	return data
}

// serveWS is GET /ws: one OpenEnv session per connection. ?episode_id=ID
// attaches the connection to an open episode (a clone, or one made over
// REST) instead of taking a new slot.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	attach := r.URL.Query().Get("episode_id")
	ws, err := websocket.Accept(&guardWriter{ResponseWriter: w, limit: s.opts.MaxMessageBytes}, r, nil)
	if err != nil {
		return // Accept answered the request
	}
	ws.SetReadLimit(s.opts.MaxMessageBytes)
	ctx, cancel := context.WithCancel(context.Background())
	c := &wsConn{s: s, ws: ws, ctx: ctx, cancel: cancel}
	c.last.Store(time.Now().UnixNano())
	if err := s.openConn(c, attach); err != nil {
		c.send(s.errorReply(err))
		cancel()
		// OpenEnv's clients send their first message as soon as they
		// connect and read only after: closed at once, the connection
		// fails their send and the error is never read (openenv-core
		// 0.3's client then raises ConnectionClosed, not the code). So
		// the close waits for that message, or refusedLinger.
		read := make(chan struct{})
		go func() { ws.Read(context.Background()); close(read) }()
		select {
		case <-read:
		case <-time.After(refusedLinger):
		}
		ws.Close(websocket.StatusNormalClosure, firstLine(err.Error()))
		return
	}
	defer s.closeConn(c)
	msgs := make(chan []byte)
	go func() {
		defer close(msgs)
		defer cancel()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				tooBig := errors.Is(err, errFrameTooBig)
				if tooBig || errors.Is(err, websocket.ErrMessageTooBig) {
					s.metrics.failed("MESSAGE_TOO_BIG")
					s.log.Info("closing /ws: message too big", "episode", c.episodeID(), "limit", s.opts.MaxMessageBytes)
				}
				if tooBig {
					// The library closes with 1009 only for the bytes it
					// counted itself.
					ws.Close(websocket.StatusMessageTooBig, "a frame header declares more than the message limit")
				}
				return
			}
			select {
			case msgs <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	for b := range msgs {
		c.last.Store(time.Now().UnixNano())
		c.busy.Store(true)
		// The message counts as in flight until its reply is written, so
		// a drain waits for the reply before it sends the close frame.
		held := s.begin() == nil
		reply, end := c.handle(b)
		c.busy.Store(false)
		c.last.Store(time.Now().UnixNano())
		var err error
		if reply != nil {
			err = c.send(*reply)
		}
		if held {
			s.inflight.Done()
		}
		if err != nil {
			return
		}
		if end {
			// The handshake before the cancel: a cancelled read would
			// drop the connection without its close frame.
			ws.Close(websocket.StatusNormalClosure, "")
			cancel()
			return
		}
	}
}

// openConn registers a connection: it takes a slot, or attaches to the
// open episode id.
func (s *Server) openConn(c *wsConn, id string) error {
	if err := checkEpisodeID(id, "query", "episode_id"); err != nil {
		return err
	}
	if id == "" {
		if err := s.acquire(); err != nil {
			return err
		}
		s.mu.Lock()
		c.bare = true
		s.conns[c] = true
		s.connWG.Add(1)
		s.mu.Unlock()
		s.metrics.connected(1)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errDraining
	}
	e := s.entries[id]
	if e == nil || e.closing.Load() || e.orphaned {
		return errNoEpisode(id)
	}
	for o := range s.conns {
		if o.entry == e {
			return &sessionError{http.StatusConflict, fmt.Sprintf("episode %s is the episode of another connection", id)}
		}
	}
	e.owner, c.entry = c, e
	e.touch()
	s.conns[c] = true
	s.connWG.Add(1)
	s.metrics.connected(1)
	return nil
}

// closeConn ends a connection: its episode and the clones it owns close,
// its bare slot is freed.
func (s *Server) closeConn(c *wsConn) {
	c.cancel()
	s.mu.Lock()
	delete(s.conns, c)
	var owned []*entry
	for _, e := range s.entries {
		if e.owner == c {
			owned = append(owned, e)
		}
	}
	if c.entry != nil && c.entry.owner != c {
		owned = append(owned, c.entry)
	}
	for _, e := range owned {
		e.orphaned = true // closed below, after the lock: attaching in between would get a dying episode
	}
	bare := c.bare
	c.bare, c.entry = false, nil
	s.mu.Unlock()
	for _, e := range owned {
		s.closeEntry(e, "connection closed")
	}
	if bare {
		s.release()
	}
	s.metrics.connected(-1)
	c.ws.CloseNow()
	s.connWG.Done()
}

// handle runs one message and returns the reply (nil for none) and
// whether the connection ends.
func (c *wsConn) handle(raw []byte) (*wsReply, bool) {
	s := c.s
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(raw) {
			s.metrics.failed(CodeInvalidJSON)
			return &wsReply{Type: "error", Data: map[string]any{"message": "Invalid JSON: " + err.Error(), "code": CodeInvalidJSON}}, false
		}
		r := s.errorReply(invalid("model_type", "Input should be an object", "message"))
		return &r, false
	}
	var typ string
	if t, ok := fields["type"]; ok && json.Unmarshal(t, &typ) != nil {
		typ = string(t)
	}
	reply := func(v wsReply, err error) (*wsReply, bool) {
		if err != nil {
			r := s.errorReply(err)
			return &r, false
		}
		return &v, false
	}
	switch typ {
	case "reset":
		if err := onlyFields(fields, "data"); err != nil {
			return reply(wsReply{}, err)
		}
		res, err := c.reset(fields["data"])
		return reply(wsReply{Type: "observation", Data: res}, err)
	case "step":
		if err := onlyFields(fields, "data"); err != nil {
			return reply(wsReply{}, err)
		}
		if d, ok := fields["data"]; !ok || string(d) == "null" {
			return reply(wsReply{}, invalid("missing", "Field required", "data"))
		}
		if c.entry == nil {
			return reply(wsReply{}, errNoReset)
		}
		res, err := s.stepEntry(c.ctx, c.entry, fields["data"])
		return reply(wsReply{Type: "observation", Data: res}, err)
	case "state":
		if err := onlyFields(fields); err != nil {
			return reply(wsReply{}, err)
		}
		if c.entry == nil {
			return reply(wsReply{Type: "state", Data: map[string]any{"episode_id": nil, "step_count": 0}}, nil)
		}
		return reply(wsReply{Type: "state", Data: s.stateOf(c.entry)}, nil)
	case "clone":
		if err := onlyFields(fields, "data"); err != nil {
			return reply(wsReply{}, err)
		}
		var d struct {
			EpisodeID string `json:"episode_id"`
		}
		if err := decodeObject(fields["data"], &d, "data"); err != nil {
			return reply(wsReply{}, err)
		}
		if c.entry == nil {
			return reply(wsReply{}, errNoReset)
		}
		cl, err := s.cloneEntry(c.ctx, c.entry, d.EpisodeID, c)
		if err != nil {
			return reply(wsReply{}, err)
		}
		return reply(wsReply{Type: "clone", Data: s.stateOf(cl)}, nil)
	case "close":
		if err := onlyFields(fields); err != nil {
			return reply(wsReply{}, err)
		}
		return nil, true
	}
	if r, ok, err := c.checkpointMessage(typ, fields); ok {
		return reply(r, err)
	}
	s.metrics.failed(CodeUnknownType)
	return &wsReply{Type: "error", Data: map[string]any{"message": "Unknown message type: " + typ, "code": CodeUnknownType}}, false
}

var errNoReset = &sessionError{http.StatusConflict, "no episode in this session: send reset first"}

// onlyFields refuses a message with fields other than type and allowed,
// as OpenEnv's message models (extra="forbid") do.
func onlyFields(fields map[string]json.RawMessage, allowed ...string) error {
	for k := range fields {
		if k != "type" && (len(allowed) == 0 || k != allowed[0]) {
			return invalid("extra_forbidden", "Extra inputs are not permitted", k)
		}
	}
	return nil
}

// reset starts a new episode in the connection's session: the old one,
// if any, closes, and its slot goes to the new one.
func (c *wsConn) reset(data json.RawMessage) (Result, error) {
	s := c.s
	if err := s.begin(); err != nil {
		return Result{}, err
	}
	defer s.inflight.Done()
	plan, err := s.planReset(data)
	if err != nil {
		return Result{}, err
	}
	if old := c.entry; old != nil {
		// The old episode's slot becomes the new one's, unless someone
		// else closed it (DELETE, the reaper) and freed its slot already.
		kept := s.closeEntrySlot(old, "reset", true)
		s.mu.Lock()
		c.entry, c.bare = nil, kept
		s.mu.Unlock()
	}
	if !c.bare {
		if err := s.acquire(); err != nil {
			return Result{}, err
		}
		s.mu.Lock()
		c.bare = true
		s.mu.Unlock()
	}
	ep, res, err := s.startEpisode(c.ctx, plan)
	if err != nil {
		return Result{}, err
	}
	e, err := s.register(plan.episodeID, plan.kind, ep, c)
	if err != nil {
		ep.close()
		return Result{}, err
	}
	e.mu.Lock()
	e.seed = plan.data.Seed
	e.mu.Unlock()
	s.mu.Lock()
	c.entry, c.bare = e, false
	s.mu.Unlock()
	return res, nil
}

// firstLine is the first line of s, for a close frame's reason (at most
// 123 bytes).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
