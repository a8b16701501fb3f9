package queue

import "math/bits"

// fenwick is a binary indexed tree of counts: add and prefix sums in O(log n), and it
// can grow at the end. The memory store keeps one over its ticket slots (1 = a live
// waiter), so a waiter's position is one prefix sum instead of a scan of the queue.
type fenwick []int32

// push appends a slot holding v.
func (f *fenwick) push(v int32) {
	t := *f
	i := len(t) + 1 // 1-based index of the new slot
	// Node i covers slots (i-lowbit(i), i]; all but the new one are already in the tree.
	sum := v
	for j := i - 1; j > i-(i&-i); j -= j & -j {
		sum += t[j-1]
	}
	*f = append(t, sum)
}

// add adds delta to slot i (0-based).
func (f fenwick) add(i int, delta int32) {
	for i++; i <= len(f); i += i & -i {
		f[i-1] += delta
	}
}

// prefix is the sum of slots [0, i).
func (f fenwick) prefix(i int) int {
	var s int32
	for ; i > 0; i -= i & -i {
		s += f[i-1]
	}
	return int(s)
}

// rebuild makes f the tree of the given slot values in O(n), reusing its storage.
func (f *fenwick) rebuild(n int, value func(i int) int32) {
	t := (*f)[:0]
	for i := 0; i < n; i++ {
		t = append(t, value(i))
	}
	for i := 1; i <= n; i++ {
		if p := i + (i & -i); p <= n {
			t[p-1] += t[i-1]
		}
	}
	*f = t
}

// find returns the slot holding the (k+1)-th unit, counting from slot 0: the 0-based
// index i with prefix(i) <= k < prefix(i+1). With 0/1 slots that is the k-th live
// slot, found in O(log n) by descending the tree. The caller ensures k < the total.
func (f fenwick) find(k int) int {
	pos, rem := 0, int32(k)
	for step := 1 << bits.Len(uint(len(f))); step > 0; step >>= 1 {
		if next := pos + step; next <= len(f) && f[next-1] <= rem {
			pos = next
			rem -= f[next-1]
		}
	}
	return pos
}
