package queue

import (
	"math/rand/v2"
	"testing"
)

// The tree must agree with a plain slice of counts through any mix of appends, updates
// and rebuilds; positions in the memory store are only as right as these sums.
func TestFenwickMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var f fenwick
	var plain []int32
	for round := 0; round < 5000; round++ {
		switch op := rng.IntN(10); {
		case op < 5:
			v := int32(rng.IntN(2))
			f.push(v)
			plain = append(plain, v)
		case op < 9 && len(plain) > 0:
			i := rng.IntN(len(plain))
			d := int32(rng.IntN(3) - 1)
			f.add(i, d)
			plain[i] += d
		case len(plain) > 0:
			cut := rng.IntN(len(plain))
			plain = append([]int32(nil), plain[cut:]...)
			f.rebuild(len(plain), func(i int) int32 { return plain[i] })
		}
		i := rng.IntN(len(plain) + 1)
		want := 0
		for _, v := range plain[:i] {
			want += int(v)
		}
		if got := f.prefix(i); got != want {
			t.Fatalf("round %d: prefix(%d) = %d, want %d", round, i, got, want)
		}
	}
}

// find is the inverse of prefix over 0/1 slots: the k-th live slot, for every k.
func TestFenwickFindIsTheKthLiveSlot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 7, 8, 9, 100, 1000} {
		var f fenwick
		var live []int
		for i := 0; i < n; i++ {
			v := int32(rng.IntN(2))
			f.push(v)
			if v == 1 {
				live = append(live, i)
			}
		}
		for k, want := range live {
			if got := f.find(k); got != want {
				t.Fatalf("n=%d: find(%d) = %d, want slot %d", n, k, got, want)
			}
		}
	}
}
