package sim

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"cwm/internal/episode"
	"cwm/internal/model"
	"cwm/internal/trajectory"
)

// The bounds of a context, in bytes (docs/sim.md): whatever the episode
// holds, a world model's prompt stays under about 64 KiB.
const (
	maxStatement  = 8 << 10
	maxDiff       = 16 << 10
	maxFileBytes  = 12 << 10
	maxFilesBytes = 24 << 10
	maxFiles      = 4
	maxRecent     = 3
	maxRecentOut  = 2 << 10
	maxCommand    = 4 << 10
)

// BuildContext is the context a world model is given for command in ep:
// the task's statement, the diff against the task's base, the session's
// directory, the sources of the files the command executes, the recent
// commands and the command, each cut to its bound. It reads only the
// sandbox (which holds neither the gold patch nor the hidden tests) and
// the statement. The real backend's recorded contexts come from here too,
// so that exported transitions are what the sim backend sends.
func BuildContext(ctx context.Context, ep *episode.Episode, command string, recent []trajectory.SimObservation) (*trajectory.SimContext, error) {
	c := &trajectory.SimContext{Recent: []trajectory.SimObservation{}, Files: []trajectory.SimFile{}}
	c.Statement = cut(&c.Truncated, "statement", ep.Task().ProblemStatement, maxStatement)
	diff, err := ep.Diff(ctx)
	if err != nil {
		return nil, fmt.Errorf("diff for the world model's context: %w", err)
	}
	c.Diff = cut(&c.Truncated, "diff", diff, maxDiff)
	s, err := ep.Session(ctx)
	if err != nil {
		return nil, err
	}
	c.Cwd = s.Dir
	if c.Cwd == "" {
		c.Cwd = ep.RepoRoot()
	}
	total := 0
	for _, p := range executedFiles(command) {
		if len(c.Files) == maxFiles || total >= maxFilesBytes {
			c.Truncated = appendOnce(c.Truncated, "files")
			break
		}
		abs := p
		if !path.IsAbs(abs) {
			abs = path.Join(c.Cwd, p)
		}
		if st, err := ep.Sandbox().Stat(ctx, abs); err != nil || st.IsDir {
			continue // not a file: the command will say so
		}
		b, err := ep.Sandbox().ReadFile(ctx, abs, maxFileBytes+1)
		if err != nil {
			continue
		}
		src := cut(&c.Truncated, "files", string(b), min(maxFileBytes, maxFilesBytes-total))
		total += len(src)
		c.Files = append(c.Files, trajectory.SimFile{Path: abs, Source: src})
	}
	if len(recent) > maxRecent {
		recent = recent[len(recent)-maxRecent:]
	}
	for _, r := range recent {
		r.Command = cut(&c.Truncated, "recent", r.Command, maxCommand)
		if len(r.Output) > maxRecentOut {
			// The end of an output (a test summary, the exception) says
			// most.
			r.Output = "[...]" + r.Output[len(r.Output)-maxRecentOut:]
			c.Truncated = appendOnce(c.Truncated, "recent")
		}
		c.Recent = append(c.Recent, r)
	}
	c.Command = cut(&c.Truncated, "command", command, maxCommand)
	return c, nil
}

// cut keeps the start of s in at most max bytes, "[...]" marking the
// cut, noting it under part. Cutting again changes nothing.
func cut(notes *[]string, part, s string, max int) string {
	if len(s) <= max {
		return s
	}
	*notes = appendOnce(*notes, part)
	return strings.ToValidUTF8(s[:max-len("[...]")], "") + "[...]"
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// executedFiles are the words of command that name a program's source:
// a .py, .sh or .js file (a pytest node id's file part), in order, once.
func executedFiles(command string) []string {
	var files []string
	seen := map[string]bool{}
	for _, words := range simpleCommands(command) {
		for _, w := range words[1:] {
			w, _, _ = strings.Cut(w, "::")
			ext := path.Ext(w)
			if (ext == ".py" || ext == ".sh" || ext == ".js") && !strings.HasPrefix(w, "-") && !seen[w] {
				seen[w] = true
				files = append(files, w)
			}
		}
		if len(words) > 0 && (strings.HasSuffix(words[0], ".sh") || strings.HasSuffix(words[0], ".py")) && !seen[words[0]] {
			seen[words[0]] = true
			files = append(files, words[0])
		}
	}
	return files
}

// systemPrompt is the world model's instruction: what it predicts and the
// one reply shape cwm accepts.
const systemPrompt = "You are a world model of a Linux sandbox in which an agent works on a code repository. " +
	"Given the task, the agent's changes so far, the sources of the files a bash command executes, the recent commands and the command, " +
	"predict what running the command prints and its exit status. Reply with one JSON object and nothing else:\n" +
	`{"stdout": "<what the command prints on stdout>", "stderr": "<what it prints on stderr>", "exit_code": <its exit status, 0-255>}`

// Messages renders a context as the chat messages a world model is sent:
// the system prompt, then one user message with the context's parts in
// tagged sections. cwm export transitions writes the same
// messages, so a model trained on them needs no other prompt.
func Messages(c *trajectory.SimContext) []model.Message {
	var b strings.Builder
	section := func(tag, attrs, body string) {
		b.WriteString("<" + tag + attrs + ">\n" + body + "\n</" + tag + ">\n")
	}
	section("statement", "", c.Statement)
	section("diff", "", c.Diff)
	for _, f := range c.Files {
		section("file", " path="+strconv.Quote(f.Path), f.Source)
	}
	for _, r := range c.Recent {
		section("recent", " exit_code=\""+strconv.Itoa(r.ExitCode)+"\"", "$ "+r.Command+"\n"+r.Output)
	}
	if len(c.Truncated) > 0 {
		section("truncated", "", strings.Join(c.Truncated, ", "))
	}
	section("cwd", "", c.Cwd)
	b.WriteString("<command>\n" + c.Command + "\n</command>")
	return []model.Message{
		{Role: model.RoleSystem, Content: systemPrompt},
		{Role: model.RoleUser, Content: b.String()},
	}
}
