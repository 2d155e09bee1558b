package selection

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/template"

	_ "embed"

	"cwm/internal/lazyre"
	"cwm/internal/model"
	"cwm/internal/task"
)

// generatePrompt is the prompt that asks the model for one reproduction
// test (Agentless's format: the test prints "Issue reproduced", "Issue
// resolved" or "Other issues").
//
//go:embed prompts/generate_test.md
var generatePrompt string

var promptTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("generate_test").Parse(generatePrompt))
})

// File is a file of the unpatched tree shown to the test writer.
type File struct {
	Path    string
	Content string
}

// Limits on what the test writer is shown: the files the most candidates
// touch, each cut at fileLimit bytes.
const (
	promptFiles = 5
	fileLimit   = 24 << 10
)

// GeneratedTest is one test the model wrote, and what became of it.
type GeneratedTest struct {
	Index int    `json:"index"`
	Code  string `json:"code"`
	// Reply is the model's answer when no code could be taken from it.
	Reply string `json:"reply,omitempty"`
	// Unpatched is the test's verdict on the unpatched tree; Reproduces
	// is set when that is "reproduced" (the test is kept for the
	// candidates), and Dropped says why a test is not.
	Unpatched Verdict `json:"unpatched"`
	Detail    string  `json:"detail,omitempty"`
	Dropped   string  `json:"dropped,omitempty"`
	// Tokens is the model's completion tokens for the test.
	Tokens int64 `json:"tokens"`
}

// Reproduces reports whether the test reproduces the issue on the
// unpatched tree.
func (g GeneratedTest) Reproduces() bool { return g.Unpatched == Reproduced }

// Prompt is the test-generation prompt for t, showing files.
func Prompt(t *task.Task, files []File) (string, error) {
	var b bytes.Buffer
	err := promptTemplate().Execute(&b, struct {
		Problem string
		Files   []File
	}{t.ProblemStatement, files})
	return b.String(), err
}

var codeBlock = lazyre.New("(?s)```(?:python|py)?[ \t]*\n(.*?)```")

// extractCode is the first fenced code block of a reply ("" if none).
func extractCode(reply string) string {
	m := codeBlock().FindStringSubmatch(reply)
	if m == nil {
		return ""
	}
	return m[1]
}

// generateConcurrency bounds a task's model calls in flight.
const generateConcurrency = 8

// Generate asks the model for n tests, one request each with seed i (so
// that a server sampling with seeds gives n different tests, and a rerun
// the same ones). A reply with no code block is a test with no code,
// dropped later. The error is the model endpoint failing.
func Generate(ctx context.Context, c *model.Client, prompt string, n int) ([]GeneratedTest, error) {
	tests := make([]GeneratedTest, n)
	errs := make([]error, n)
	sem := make(chan struct{}, generateConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			seed := int64(i)
			rep, err := c.Complete(ctx, model.Request{Seed: &seed,
				Messages: []model.Message{{Role: model.RoleUser, Content: prompt}}})
			if err != nil {
				errs[i] = fmt.Errorf("generate test %d: %w", i, err)
				return
			}
			tests[i] = GeneratedTest{Index: i, Code: extractCode(rep.Message.Content), Tokens: rep.Usage.CompletionTokens}
			if tests[i].Code == "" {
				tests[i].Reply = capString(rep.Message.Content, 2000)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return tests, nil
}

// touchedFiles lists the files the candidates change, those the most
// candidates touch first (ties by path), at most promptFiles.
func touchedFiles(patches []string) []string {
	count := map[string]int{}
	for _, p := range patches {
		for name := range parseDiff(p) {
			if name != "" && name != "/dev/null" {
				count[name]++
			}
		}
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if count[names[a]] != count[names[b]] {
			return count[names[a]] > count[names[b]]
		}
		return names[a] < names[b]
	})
	return names[:min(len(names), promptFiles)]
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n[... cut]"
}

// Verdict is what a generated test printed.
type Verdict string

const (
	// Reproduced: the test printed "Issue reproduced".
	Reproduced Verdict = "reproduced"
	// Resolved: the test printed "Issue resolved".
	Resolved Verdict = "resolved"
	// Other: "Other issues", both verdicts, none, a crash or a timeout.
	Other Verdict = "other"
	// NoCode: the model's reply held no code block.
	NoCode Verdict = "no_code"
)

// verdictOf reads a test's output: exactly one of the verdict lines, or
// Other with what went wrong.
func verdictOf(r runRecord) (Verdict, string) {
	has := func(s string) bool { return strings.Contains(r.Stdout, s) }
	switch {
	case r.Timeout:
		return Other, "timed out"
	case has("Other issues"):
		return Other, "printed Other issues" + lastLine(r.Stderr)
	case has("Issue reproduced") && has("Issue resolved"):
		return Other, "printed both Issue reproduced and Issue resolved"
	case has("Issue reproduced"):
		return Reproduced, ""
	case has("Issue resolved"):
		return Resolved, ""
	}
	exit := "killed"
	if r.Exit != nil {
		exit = fmt.Sprintf("exit %d", *r.Exit)
	}
	return Other, "printed no verdict (" + exit + ")" + lastLine(r.Stderr)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + capString(s, 300)
}
