package rehearse

// event is something a visitor's browser does at a time of its own: all but the
// arrivals, which come from the sale's schedule in order.
type event struct {
	at    int64 // ns since the sale's start
	v     int32
	epoch uint32 // evBeat: the socket it is for
	kind  eventKind
}

type eventKind uint8

const (
	evNavigate eventKind = iota + 1 // the page, told of the turn, loads the site
	evClick                         // a shopper's next page
	evGiveUp                        // the visitor closes the tab
	evSleep                         // the phone sleeps: the socket closes
	evWake                          // the phone wakes: the page polls and reopens its socket
	evBeat                          // the hub's last beat of a socket before it closes (hub.go)
)

// events is a min-heap of events by time, then visitor, then kind: ties are broken
// the same way on every run, so a seed plays the same sale.
type events []event

func (h events) less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.v != b.v {
		return a.v < b.v
	}
	return a.kind < b.kind
}

func (h *events) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *events) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && s.less(l, small) {
			small = l
		}
		if r := l + 1; r < n && s.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*h = s
	return top
}

// next is the time of the earliest event; false when there is none.
func (h events) next() (int64, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].at, true
}

// arrivals walks the sale's segments, one arrival after the other, each spread
// evenly over its segment.
type arrivals struct {
	segs  []Segment
	seg   int
	i     int   // the next arrival's number within its segment
	start int64 // ns since the sale's start at which the segment began
	left  int   // arrivals not yet made
}

func newArrivals(segs []Segment) *arrivals {
	a := &arrivals{segs: segs}
	for _, s := range segs {
		a.left += s.N
	}
	a.skipEmpty()
	return a
}

// next is when the next arrival comes; false when none is left.
func (a *arrivals) next() (int64, bool) {
	if a.seg >= len(a.segs) {
		return 0, false
	}
	s := a.segs[a.seg]
	// Over*i/N, without the product: it overflows for a long segment of many.
	over, n, i := int64(s.Over), int64(s.N), int64(a.i)
	return a.start + over/n*i + over%n*i/n, true
}

// take moves past the next arrival.
func (a *arrivals) take() {
	a.i++
	a.left--
	if a.i == a.segs[a.seg].N {
		a.start += int64(a.segs[a.seg].Over)
		a.seg++
		a.i = 0
		a.skipEmpty()
	}
}

func (a *arrivals) skipEmpty() {
	for a.seg < len(a.segs) && a.segs[a.seg].N == 0 {
		a.start += int64(a.segs[a.seg].Over)
		a.seg++
	}
}
