package command

import (
	"fmt"
	"strconv"
	"strings"
)

// StringList is a repeatable string flag.
type StringList []string

func (l *StringList) String() string     { return strings.Join(*l, ",") }
func (l *StringList) Set(v string) error { *l = append(*l, v); return nil }

// ByteSize is a size flag that accepts suffixes: 512K, 64M, 2G (powers of
// 1024) or a plain number of bytes.
type ByteSize int64

func (b *ByteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *ByteSize) Set(v string) error {
	n, err := ParseBytes(v)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// ParseBytes parses a size: a number of bytes, optionally fractional and
// followed by K, M, G or T (powers of 1024; a trailing "B" or "iB" is
// allowed, case does not matter).
func ParseBytes(v string) (int64, error) {
	s := strings.TrimSpace(strings.ToUpper(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a number with K, M, G)", v)
	}
	return int64(f * float64(mult)), nil
}
