// Command modelreplay serves modeltest's scripted OpenAI-compatible
// endpoint as a process, so that cwm's commands (forage, select, search)
// can be driven end to end by scripted replies outside a Go test: the
// one fake of cwm's tests, a model endpoint, and nothing else.
//
// usage: go run ./internal/model/modeltest/modelreplay SCRIPT.json
//
// SCRIPT.json scripts episodes by their task's issue text:
//
//	{"episodes": [{"issue": "a substring of the task's statement",
//	               "replies": [{"content": "..."}, ...]}],
//	 "fallback": {"content": "done"}}
//
// The episode whose first user message contains an "issue" gets its
// replies in order, one per turn; a turn past them, or an issue no
// episode names, gets the fallback. The server listens on 127.0.0.1 at a
// free port, prints its base URL (ending in /v1) as its first line on
// stdout, and serves until it is sent SIGINT or SIGTERM.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cwm/internal/model/modeltest"
)

// script is SCRIPT.json.
type script struct {
	Episodes []struct {
		Issue   string  `json:"issue"`
		Replies []reply `json:"replies"`
	} `json:"episodes"`
	Fallback *reply `json:"fallback"`
}

// reply is one scripted answer: an assistant message's text (CWM's text
// tool calls go in it), or an error status.
type reply struct {
	Content string `json:"content"`
	Status  int    `json:"status"`
	Error   string `json:"error"`
}

func (r reply) modeltest() modeltest.Reply {
	return modeltest.Reply{Content: r.Content, Status: r.Status, Error: r.Error}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: modelreplay SCRIPT.json")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "modelreplay:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s script
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	byIssue := map[string][]modeltest.Reply{}
	for i, e := range s.Episodes {
		if e.Issue == "" {
			return fmt.Errorf("%s: episode %d has no issue text to match", path, i)
		}
		for _, r := range e.Replies {
			byIssue[e.Issue] = append(byIssue[e.Issue], r.modeltest())
		}
	}
	fallback := modeltest.Text("done")
	if s.Fallback != nil {
		fallback = s.Fallback.modeltest()
	}
	srv, err := modeltest.Start(modeltest.ByIssue(byIssue, fallback), false)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println(srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
