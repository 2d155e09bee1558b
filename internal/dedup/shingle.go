package dedup

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// shingles returns the sorted, distinct 64-bit hashes of the k-word
// shingles of text. Words are maximal runs of non-space characters (as
// strings.Fields splits them), so reformatting whitespace does not change a
// trajectory. A text of fewer than k words is one shingle of all its words;
// an empty text has none.
//
// Jaccard similarity is computed on these hashes, not on the word tuples:
// with 64 bits, a collision between two of the few hundred shingles of a
// pair has probability about 1e-14, far below the LSH miss probability.
func shingles(text string, k int, buf []uint64) (set, words []uint64) {
	words = wordHashes(text, buf[:0])
	if len(words) == 0 {
		return nil, words
	}
	n := max(len(words)-k+1, 1)
	set = make([]uint64, n)
	for i := range n {
		h := uint64(0x5851f42d4c957f2d)
		for _, w := range words[i:min(i+k, len(words))] {
			h = (h ^ w) * 0x100000001b3
			h ^= h >> 29
		}
		set[i] = mix64(h)
	}
	slices.Sort(set)
	return slices.Compact(set), words
}

// wordHashes appends the FNV-1a hash of each whitespace-separated word.
func wordHashes(s string, out []uint64) []uint64 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h, inWord := uint64(offset), false
	for i := 0; i < len(s); {
		c := s[i]
		size, space := 1, asciiSpace[c] != 0
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
		}
		if space {
			if inWord {
				out = append(out, h)
				h, inWord = offset, false
			}
		} else {
			for _, b := range []byte(s[i : i+size]) {
				h = (h ^ uint64(b)) * prime
			}
			inWord = true
		}
		i += size
	}
	if inWord {
		out = append(out, h)
	}
	return out
}

var asciiSpace = [256]uint8{'\t': 1, '\n': 1, '\v': 1, '\f': 1, '\r': 1, ' ': 1}

// mix64 is the splitmix64 finalizer: FNV alone leaves the high bits, which
// MinHash ranks by, poorly mixed.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// jaccardAtLeast returns the Jaccard similarity of the sorted sets a and b
// and whether it is >= t. It gives up early (returning 0, false) once even
// matching every remaining element could not reach t; the final decision
// is the plain |a∩b|/|a∪b| >= t, so both dedup methods decide every pair
// identically. Two empty sets are identical (similarity 1).
func jaccardAtLeast(a, b []uint64, t float64) (float64, bool) {
	if len(a) == 0 && len(b) == 0 {
		return 1, true
	}
	// J >= t  <=>  |a∩b| >= t(|a|+|b|)/(1+t). The slack keeps rounding from
	// ever cutting off a pair that reaches t exactly.
	need := t*float64(len(a)+len(b))/(1+t) - 1e-6
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		if float64(inter+min(len(a)-i, len(b)-j)) < need {
			return 0, false
		}
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	jac := float64(inter) / float64(len(a)+len(b)-inter)
	return jac, jac >= t
}
