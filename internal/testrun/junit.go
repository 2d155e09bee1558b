package testrun

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

type junitCase struct {
	Classname string      `xml:"classname,attr"`
	Name      string      `xml:"name,attr"`
	File      string      `xml:"file,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *junitEvent `xml:"failure"`
	Error     *junitEvent `xml:"error"`
	Skipped   *junitEvent `xml:"skipped"`
}

type junitEvent struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// ParseJUnit reads a pytest JUnit XML report (junit_family=xunit1, which
// records each test's file) into per-test outcomes, in report order. A
// test reported twice (a failure in the call, an error in teardown) keeps
// its worse outcome and the sum of its times. Expected failures (xfail)
// count as skipped.
func ParseJUnit(data []byte) ([]Test, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var out []Test
	index := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, fmt.Errorf("junit xml: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := dec.DecodeElement(&c, &se); err != nil {
			return out, fmt.Errorf("junit xml: %w", err)
		}
		t := Test{ID: nodeID(c), Outcome: Pass, Time: seconds(c.Time)}
		switch {
		case c.Failure != nil:
			t.Outcome, t.Message = Fail, firstLine(c.Failure.Message, c.Failure.Text)
		case c.Error != nil:
			t.Outcome, t.Message = Error, firstLine(c.Error.Message, c.Error.Text)
		case c.Skipped != nil:
			t.Outcome, t.Message = Skip, firstLine(c.Skipped.Message, c.Skipped.Type)
		}
		if i, seen := index[t.ID]; seen {
			prev := &out[i]
			prev.Time += t.Time
			if t.Outcome.rank() > prev.Outcome.rank() {
				prev.Outcome, prev.Message = t.Outcome, t.Message
			}
			continue
		}
		index[t.ID] = len(out)
		out = append(out, t)
	}
	return out, nil
}

// nodeID rebuilds pytest's node id from a testcase. pytest derives
// classname from the node id by turning the file path into a dotted
// module and appending the classes; taking the module back off leaves
// the classes. A collection error has the module path as its name.
func nodeID(c junitCase) string {
	if c.File == "" {
		// Not xunit1 (or not pytest): the dotted form is all there is.
		if c.Classname == "" {
			return c.Name
		}
		return c.Classname + "." + c.Name
	}
	file := c.File
	module := strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".")
	if c.Classname == "" && (c.Name == module || strings.HasSuffix(module, "."+c.Name)) {
		return file // a collection error of this module
	}
	var classes string
	switch {
	case c.Classname == module:
	case strings.HasPrefix(c.Classname, module+"."):
		classes = strings.ReplaceAll(strings.TrimPrefix(c.Classname, module+"."), ".", "::")
	case c.Classname == "":
	default:
		// A file outside the rootdir or a custom item: keep what pytest
		// said rather than guess.
		classes = strings.ReplaceAll(c.Classname, ".", "::")
	}
	if classes == "" {
		return file + "::" + c.Name
	}
	return file + "::" + classes + "::" + c.Name
}

func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// firstLine returns the first non-empty line of the first non-empty text,
// shortened: a message is a hint, the full output is kept elsewhere.
func firstLine(texts ...string) string {
	for _, t := range texts {
		for _, line := range strings.Split(t, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				if len(line) > 200 {
					line = line[:200] + "..."
				}
				return line
			}
		}
	}
	return ""
}
