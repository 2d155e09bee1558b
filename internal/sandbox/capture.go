package sandbox

import (
	"fmt"
)

// capture keeps the head and the tail of a stream once it outgrows its
// limit, and counts everything, so a command's output is bounded in memory
// but its start and end survive.
type capture struct {
	limit int   // bytes kept in all; half head, half tail
	total int64 // bytes seen
	head  []byte
	tail  []byte // ring buffer once full
	pos   int    // next write position in tail
	full  bool
}

func newCapture(limit int) *capture {
	if limit < 2 {
		limit = 2
	}
	return &capture{limit: limit}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	headCap := c.limit / 2
	if len(c.head) < headCap {
		k := min(headCap-len(c.head), len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := c.limit - headCap
	for len(p) > 0 {
		if !c.full {
			k := min(tailCap-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == tailCap {
				c.full = true
				c.pos = 0
			}
			continue
		}
		if len(p) >= tailCap {
			copy(c.tail, p[len(p)-tailCap:])
			c.pos = 0
			p = nil
			break
		}
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % tailCap
		p = p[k:]
	}
	return n, nil
}

// Bytes returns what was kept; when bytes were dropped, a marker between
// head and tail says how many.
func (c *capture) Bytes() []byte {
	kept := int64(len(c.head) + len(c.tail))
	out := make([]byte, 0, kept+64)
	out = append(out, c.head...)
	if dropped := c.total - kept; dropped > 0 {
		out = append(out, fmt.Sprintf("\n[... %d bytes dropped ...]\n", dropped)...)
	}
	if c.full {
		out = append(out, c.tail[c.pos:]...)
		out = append(out, c.tail[:c.pos]...)
	} else {
		out = append(out, c.tail...)
	}
	return out
}
