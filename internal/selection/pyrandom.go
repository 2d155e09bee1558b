package selection

import (
	"crypto/sha512"
	"math/bits"
)

// pyRandom is Python's random.Random (MT19937, CPython's seeding and
// getrandbits), enough of it to replay random.seed(str) and
// random.shuffle as CWM's majority-voting script calls them.
type pyRandom struct {
	mt  [624]uint32
	mti int
}

// newPyRandom is random.seed(s) for a str s (version 2): the integer
// whose big-endian bytes are s's UTF-8 followed by its SHA-512, given to
// init_by_array as 32-bit words, least significant first.
func newPyRandom(s string) *pyRandom {
	a := append([]byte(s), 0)[:len(s)]
	h := sha512.Sum512([]byte(s))
	a = append(a, h[:]...)
	for len(a) > 0 && a[0] == 0 {
		a = a[1:] // the integer's bit length decides the key's length
	}
	key := make([]uint32, max(1, (len(a)+3)/4))
	for i := range a {
		key[i/4] |= uint32(a[len(a)-1-i]) << (8 * (i % 4))
	}
	r := &pyRandom{}
	r.initByArray(key)
	return r
}

func (r *pyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < len(r.mt); i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = len(r.mt)
}

func (r *pyRandom) initByArray(key []uint32) {
	const n = 624
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(n, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

func (r *pyRandom) uint32() uint32 {
	const n, m = 624, 397
	if r.mti >= n {
		for k := 0; k < n; k++ {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%n]&0x7fffffff
			v := r.mt[(k+m)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// below is random._randbelow(n) for 0 < n < 2^32: getrandbits of n's
// bit length, drawn again while it is n or more.
func (r *pyRandom) below(n int) int {
	k := bits.Len(uint(n))
	for {
		if v := int(r.uint32() >> (32 - k)); v < n {
			return v
		}
	}
}

// shuffle is random.shuffle on the list 0..n-1.
func (r *pyRandom) shuffle(n int) []int {
	x := make([]int, n)
	for i := range x {
		x[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.below(i + 1)
		x[i], x[j] = x[j], x[i]
	}
	return x
}
