// Package envclient is the Go client of cwm serve: its REST API
// (episodes created, stepped, cloned, read and closed by id, fit for
// many concurrent episodes over one HTTP client) and its WebSocket /ws
// (OpenEnv's session protocol: one episode per connection, the lowest
// latency per step). It imports nothing of cwm but the WebSocket library,
// so a trainer can copy it.
package envclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// Result is a reset's or a step's outcome: OpenEnv's {observation,
// reward, done}. Observation is left as JSON for the caller's type (see
// the server's GET /schema).
type Result struct {
	// EpisodeID is set by Create.
	EpisodeID   string          `json:"episode_id,omitempty"`
	Observation json.RawMessage `json:"observation"`
	Reward      *float64        `json:"reward"`
	Done        bool            `json:"done"`
}

// State is an episode's state: episode_id, step_count, kind, done and
// what its kind adds.
type State map[string]any

// ID is the state's episode id.
func (s State) ID() string { id, _ := s["episode_id"].(string); return id }

// Error is an error the server answered: an HTTP status (0 over /ws) and
// OpenEnv's error code (CAPACITY_REACHED, VALIDATION_ERROR, ...).
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the Retry-After header of a 503, in seconds.
	RetryAfter string
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("cwm serve: %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("cwm serve: %s: %s", e.Code, e.Message)
}

// Client talks to one server.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client of the server at baseURL (http://host:port); token
// is "" when the server needs none. The HTTP client is shared by every
// call; nil uses one without a timeout (a step may run for minutes).
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Detail string `json:"detail"`
			Code   string `json:"code"`
		}
		json.Unmarshal(raw, &e)
		if e.Detail == "" {
			e.Detail = strings.TrimSpace(string(raw))
		}
		return &Error{Status: resp.StatusCode, Code: e.Code, Message: e.Detail, RetryAfter: resp.Header.Get("Retry-After")}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// Create starts an episode (POST /v1/episodes) with a reset's data, e.g.
// map[string]any{"task_id": "calc-1"}.
func (c *Client) Create(ctx context.Context, reset any) (*Result, error) {
	if reset == nil {
		reset = map[string]any{}
	}
	var r Result
	return &r, c.do(ctx, "POST", "/v1/episodes", reset, &r)
}

// Step runs one action on an episode.
func (c *Client) Step(ctx context.Context, id string, action any) (*Result, error) {
	var r Result
	return &r, c.do(ctx, "POST", "/v1/episodes/"+url.PathEscape(id)+"/step", map[string]any{"action": action}, &r)
}

// Clone branches an episode and returns the new one's state.
func (c *Client) Clone(ctx context.Context, id string) (State, error) {
	var s State
	return s, c.do(ctx, "POST", "/v1/episodes/"+url.PathEscape(id)+"/clone", map[string]any{}, &s)
}

// Checkpoint freezes an episode's files, shell state and record as a
// checkpoint and returns its description (checkpoint_id, step_count,
// depth, bytes, layers). Past the server's caps: an Error with code
// CHECKPOINT_LIMIT.
func (c *Client) Checkpoint(ctx context.Context, id string) (State, error) {
	var s State
	return s, c.do(ctx, "POST", "/v1/episodes/"+url.PathEscape(id)+"/checkpoints", map[string]any{}, &s)
}

// Rollback brings an episode back to one of its checkpoints and returns
// its state.
func (c *Client) Rollback(ctx context.Context, id, checkpoint string) (State, error) {
	var s State
	return s, c.do(ctx, "POST", "/v1/episodes/"+url.PathEscape(id)+"/checkpoints/"+url.PathEscape(checkpoint)+"/rollback", map[string]any{}, &s)
}

// Branch starts a new episode from one of an episode's checkpoints and
// returns the new one's state.
func (c *Client) Branch(ctx context.Context, id, checkpoint string) (State, error) {
	var s State
	return s, c.do(ctx, "POST", "/v1/episodes/"+url.PathEscape(id)+"/checkpoints/"+url.PathEscape(checkpoint)+"/branch", map[string]any{}, &s)
}

// ReleaseCheckpoint drops one of an episode's checkpoints.
func (c *Client) ReleaseCheckpoint(ctx context.Context, id, checkpoint string) error {
	return c.do(ctx, "DELETE", "/v1/episodes/"+url.PathEscape(id)+"/checkpoints/"+url.PathEscape(checkpoint), nil, nil)
}

// State reads an episode's state.
func (c *Client) State(ctx context.Context, id string) (State, error) {
	var s State
	return s, c.do(ctx, "GET", "/v1/episodes/"+url.PathEscape(id), nil, &s)
}

// Close closes an episode.
func (c *Client) Close(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", "/v1/episodes/"+url.PathEscape(id), nil, nil)
}

// Session is a /ws connection: OpenEnv's session, holding one episode at
// a time. Its methods may be called from one goroutine at a time.
type Session struct {
	conn *websocket.Conn
	mu   sync.Mutex
}

// Dial opens a /ws session; episodeID, when set, attaches it to an open
// episode (a clone, or one created over REST) instead of a new slot.
func (c *Client) Dial(ctx context.Context, episodeID string) (*Session, error) {
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/ws"
	if episodeID != "" {
		u += "?episode_id=" + url.QueryEscape(episodeID)
	}
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.hc})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(-1)
	return &Session{conn: conn}, nil
}

// call sends one message and reads its reply's data into out.
func (s *Session) call(ctx context.Context, msg map[string]any, want string, out any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return err
	}
	_, b, err = s.conn.Read(ctx)
	if err != nil {
		return err
	}
	var reply struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		return fmt.Errorf("cwm serve: reply %.200s: %w", b, err)
	}
	if reply.Type == "error" {
		var e struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		}
		json.Unmarshal(reply.Data, &e)
		return &Error{Code: e.Code, Message: e.Message}
	}
	if reply.Type != want {
		return fmt.Errorf("cwm serve: reply of type %q, want %q", reply.Type, want)
	}
	return json.Unmarshal(reply.Data, out)
}

// Reset starts a new episode in the session (the old one closes).
func (s *Session) Reset(ctx context.Context, data any) (*Result, error) {
	if data == nil {
		data = map[string]any{}
	}
	var r Result
	return &r, s.call(ctx, map[string]any{"type": "reset", "data": data}, "observation", &r)
}

// Step runs one action.
func (s *Session) Step(ctx context.Context, action any) (*Result, error) {
	var r Result
	return &r, s.call(ctx, map[string]any{"type": "step", "data": action}, "observation", &r)
}

// State reads the session's episode state.
func (s *Session) State(ctx context.Context) (State, error) {
	var st State
	return st, s.call(ctx, map[string]any{"type": "state"}, "state", &st)
}

// Clone branches the session's episode; the clone belongs to this
// session until another session attaches to it (Dial with its id).
func (s *Session) Clone(ctx context.Context) (State, error) {
	var st State
	return st, s.call(ctx, map[string]any{"type": "clone"}, "clone", &st)
}

// Close sends OpenEnv's close message and ends the connection; the
// session's episode and its unattached clones close.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5e9)
	defer cancel()
	s.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
	return s.conn.Close(websocket.StatusNormalClosure, "")
}
