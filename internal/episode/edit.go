package episode

import (
	"cwm/internal/lazyre"
	"fmt"
	"strconv"
	"strings"
)

// The edit and create tools follow CWM's plugins (cwm/rl/swerl/plugins
// edit.py and create.py) message for message. They run in Go on the
// sandbox's file API instead of as Python inside the sandbox, which saves a
// process per call and works in environments whose Python is too old or
// absent; the file content semantics are Python's text mode.

// searchReplaceRe is the plugin's SEARCH_REPLACE_REGEX: the path is the line
// right before the SEARCH marker.
var searchReplaceRe = lazyre.New(`(.*)\n<<<<<<< SEARCH\n((?s:.*?))\n=======\n((?s:.*?))\n>>>>>>> REPLACE`)

// EditParseError is the edit tool's feedback for an input that is not an
// edit block, as CWM's plugin words it.
const EditParseError = "Failed to parse the edit tool call. Make sure it has the following format:\n\n<tool: edit>\n[path]\n<<<<<<< SEARCH\n[search_lines]\n=======\n[replacement_lines]\n>>>>>>> REPLACE\n</tool>"

// snippetLines is how many lines of context the edit result shows.
const snippetLines = 8

// parseEdit splits an edit tool input into path, search and replacement.
// A non-empty msg is the tool's failure message.
func parseEdit(input string) (path, search, replace, msg string) {
	ms := searchReplaceRe().FindAllStringSubmatch(input, -1)
	switch {
	case len(ms) == 0:
		return "", "", "", EditParseError
	case len(ms) > 1:
		return "", "", "", fmt.Sprintf("Only one search/replace block is allowed. Got: %d.", len(ms))
	}
	return ms[0][1], ms[0][2], ms[0][3], ""
}

// textMode gives file content as Python's open(path, "r") reads it:
// universal newlines turn \r\n and lone \r into \n. CWM's plugin writes the
// result back, so an edited file ends up with \n line ends, as under CWM.
func textMode(b []byte) string {
	s := string(b)
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// applyEdit replaces search with replace in content where search matches
// whole consecutive lines exactly once. It returns the new content and
// CWM's feedback; ok reports whether the file changed. path is only shown.
func applyEdit(path, content, search, replace string) (newContent, msg string, ok bool) {
	// A leading "\n" on both sides makes a match start at a line start, so
	// indentation must match too.
	file := "\n" + content
	needle := "\n" + search
	occ := occurrences(file, needle)
	switch {
	case len(occ) == 0:
		msg = fmt.Sprintf("No replacement was performed, the search lines did not appear verbatim in %s.", path)
		first, _, _ := strings.Cut(search, "\n")
		if strings.Contains(file, strings.TrimLeft(first, " \t\n\r\v\f")) {
			msg += " The search lines must exactly match one or more consecutive lines from the file, with indentations preserved."
		}
		return "", msg, false
	case len(occ) > 1:
		// Line numbers of the matches: the match at file offset i starts on
		// line 1 + the number of newlines before i (the prepended one
		// counts for the first line).
		var lines []string
		nl := 0
		for i := 0; i < len(file); i++ {
			if file[i] != '\n' {
				continue
			}
			nl++
			if strings.HasPrefix(file[i:], needle) {
				lines = append(lines, strconv.Itoa(nl))
			}
		}
		return "", fmt.Sprintf("No replacement was performed. Multiple occurrences of the search text in lines [%s] of %s. Please ensure it is unique.",
			strings.Join(lines, ", "), path), false
	}
	at := occ[0]
	newContent = (file[:at] + "\n" + replace + file[at+len(needle):])[1:]
	line := strings.Count(file[:at], "\n") + 1
	numLines := strings.Count(newContent, "\n") + 1
	start := max(1, line-snippetLines)
	end := line + snippetLines + strings.Count(replace, "\n")
	return newContent, fmt.Sprintf("File %s has been successfully updated at line %d and now contains %d lines. The surrounding lines after the edit are shown below:\n%s\nReview the changes and make sure they are as expected.",
		path, line, numLines, numberLines(newContent, start, end)), true
}

// occurrences lists every (possibly overlapping) offset of sub in s, as the
// plugin's find_all_occurrences.
func occurrences(s, sub string) []int {
	var out []int
	for from := 0; ; {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return out
		}
		out = append(out, from+i)
		from += i + 1
		if from > len(s) {
			return out
		}
	}
}

// numberLines shows lines start..end (1-based, inclusive, clipped to the
// file) of content as "%6d\t%s" joined by newlines, like Python's
// content.split("\n")[start-1:end].
func numberLines(content string, start, end int) string {
	lines := strings.Split(content, "\n")
	start = max(start, 1)
	end = min(end, len(lines))
	var b strings.Builder
	for i := start; i <= end; i++ {
		if i > start {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d\t%s", i, lines[i-1])
	}
	return b.String()
}

// parseCreate splits a create tool input: the first line is the path, the
// rest the content (a single line means an empty file).
func parseCreate(input string) (path, content string) {
	path, content, _ = strings.Cut(input, "\n")
	return path, content
}

// createdMessage is the create tool's success message.
func createdMessage(path, content string) string {
	return fmt.Sprintf("File created successfully at: %s (%d lines).", path, strings.Count(content, "\n")+1)
}
