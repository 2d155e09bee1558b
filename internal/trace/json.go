package trace

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON in a trace is what CPython's json.dumps writes with its default
// settings, because that is what CWM was trained on: ensure_ascii=True (every
// non-ASCII code point as a lowercase \uXXXX escape, astral ones as a
// surrogate pair), the short escapes \" \\ \n \r \t \b \f, every other byte
// below 0x20 and DEL as \u00XX, and nothing else escaped ('/', '<', '>', '&'
// stay literal). encoding/json differs on <, >, &, U+2028/2029 and raw UTF-8,
// so the package writes and reads the strings itself.

const hexDigits = "0123456789abcdef"

// appendString appends s as json.dumps writes a str. Invalid UTF-8 (which a
// Python str cannot hold) is written as \ufffd, as Python would after a
// lossy decode; Validate rejects such traces, so this only keeps Encode total.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = appendU(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xffff {
			hi, lo := utf16.EncodeRune(r)
			dst = appendU(appendU(dst, hi), lo)
		} else {
			dst = appendU(dst, r)
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// readString decodes the JSON string that starts at s[i] and returns its
// value and the offset just past the closing quote.
//
// strict accepts only the bytes appendString would write for the value, so
// that a strictly parsed trace re-encodes to the identical text. Otherwise it
// accepts what Python's json.loads accepts (raw UTF-8, upper-case hex, "\/",
// needless escapes); a lone surrogate, which a Go string cannot hold,
// becomes U+FFFD. Raw control characters are refused in both modes, as
// json.loads refuses them by default.
func readString(s string, i int, strict bool) (string, int, *SyntaxError) {
	if i >= len(s) || s[i] != '"' {
		return "", i, errAt(i, "expected a JSON string")
	}
	i++
	start := i
	var buf []byte // nil until the first escape: most values have none
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			if buf == nil {
				return s[start:i], i + 1, nil
			}
			return string(buf), i + 1, nil
		case c == '\\':
			if buf == nil {
				buf = append(make([]byte, 0, i-start+16), s[start:i]...)
			}
			var r rune
			var err *SyntaxError
			r, i, err = readEscape(s, i, strict)
			if err != nil {
				return "", i, err
			}
			buf = utf8.AppendRune(buf, r)
			continue
		case c < 0x20:
			return "", i, errAt(i, "raw control character in JSON string")
		case strict && c == 0x7f:
			return "", i, errAt(i, "raw DEL in JSON string (json.dumps writes \\u007f)")
		case c >= utf8.RuneSelf:
			if strict {
				return "", i, errAt(i, "raw non-ASCII byte in JSON string (json.dumps escapes it)")
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if buf != nil {
				buf = utf8.AppendRune(buf, r)
			} else if r == utf8.RuneError && size == 1 {
				// Invalid UTF-8 is replaced, so the value can no
				// longer be a substring of the input.
				buf = append(append(make([]byte, 0, i-start+16), s[start:i]...), "\uFFFD"...)
			}
			i += size
			continue
		}
		if buf != nil {
			buf = append(buf, c)
		}
		i++
	}
	return "", len(s), errAt(len(s), "unterminated JSON string")
}

// readEscape decodes the escape that starts with the backslash at s[i].
func readEscape(s string, i int, strict bool) (rune, int, *SyntaxError) {
	if i+1 >= len(s) {
		return 0, len(s), errAt(len(s), "unterminated escape in JSON string")
	}
	switch e := s[i+1]; e {
	case '"', '\\':
		return rune(e), i + 2, nil
	case 'n':
		return '\n', i + 2, nil
	case 'r':
		return '\r', i + 2, nil
	case 't':
		return '\t', i + 2, nil
	case 'b':
		return '\b', i + 2, nil
	case 'f':
		return '\f', i + 2, nil
	case '/':
		if strict {
			return 0, i, errAt(i, `escaped "/" (json.dumps writes it raw)`)
		}
		return '/', i + 2, nil
	case 'u':
	default:
		return 0, i, errAt(i, "invalid escape in JSON string")
	}
	r, err := readHex4(s, i, strict)
	if err != nil {
		return 0, i, err
	}
	next := i + 6
	switch {
	case utf16.IsSurrogate(r) && r < 0xdc00:
		if next+1 < len(s) && s[next] == '\\' && s[next+1] == 'u' {
			lo, err := readHex4(s, next, strict)
			if err != nil {
				return 0, next, err
			}
			if lo >= 0xdc00 && lo <= 0xdfff {
				return utf16.DecodeRune(r, lo), next + 6, nil
			}
		}
		if strict {
			return 0, i, errAt(i, "unpaired surrogate escape in JSON string")
		}
		return utf8.RuneError, next, nil
	case utf16.IsSurrogate(r):
		if strict {
			return 0, i, errAt(i, "unpaired surrogate escape in JSON string")
		}
		return utf8.RuneError, next, nil
	}
	if strict {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f' || r == '"' || r == '\\':
			return 0, i, errAt(i, "\\u escape where json.dumps writes a short escape")
		case r >= 0x20 && r < 0x7f:
			return 0, i, errAt(i, "needless \\u escape of a printable ASCII character")
		}
	}
	return r, next, nil
}

// readHex4 reads the four hex digits of the \u escape at s[i].
func readHex4(s string, i int, strict bool) (rune, *SyntaxError) {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return 0, errAt(i, "truncated \\u escape in JSON string")
	}
	var r rune
	for j := i + 2; j < i+6; j++ {
		c := s[j]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F' && !strict:
			d = c - 'A' + 10
		case c >= 'A' && c <= 'F':
			return 0, errAt(j, "upper-case hex digit (json.dumps writes lower case)")
		default:
			return 0, errAt(j, "invalid hex digit in \\u escape")
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}
