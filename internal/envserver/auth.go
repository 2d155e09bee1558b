package envserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// auth wraps a handler with the token check: the token comes as
// "Authorization: Bearer TOKEN". Tokens are compared in constant time
// (their hashes, so that the length leaks nothing either) and never
// logged.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc { return s.checkToken(h, false) }

// authWS is auth for GET /ws, which also takes ?token=TOKEN: WebSocket
// clients that cannot set headers (OpenEnv's EnvClient) have no other
// way. Nowhere else is a token in the URL accepted, where proxies and
// browsers' histories keep it.
func (s *Server) authWS(h http.HandlerFunc) http.HandlerFunc { return s.checkToken(h, true) }

func (s *Server) checkToken(h http.HandlerFunc, query bool) http.HandlerFunc {
	if s.opts.Token == "" {
		return h
	}
	want := sha256.Sum256([]byte(s.opts.Token))
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && query {
			got = r.URL.Query().Get("token")
		}
		sum := sha256.Sum256([]byte(got))
		if got == "" || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			s.metrics.failed("UNAUTHORIZED")
			w.Header().Set("WWW-Authenticate", `Bearer realm="cwm serve"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": "missing or wrong token: send Authorization: Bearer TOKEN (or ?token=TOKEN, on /ws only)", "code": "UNAUTHORIZED"})
			return
		}
		h(w, r)
	}
}

// statusWriter remembers a response's status, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (and the WebSocket upgrade) reach
// the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request at debug level: method, path
// (never the query, which may hold the token), status, duration.
func (s *Server) logRequests(h http.Handler) http.Handler {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"seconds", time.Since(t0).Seconds(), "remote", r.RemoteAddr)
	})
}
