package rehearse

import "time"

// recorder keeps, minute by minute, what the room's own counters said at each
// admission step, and what the visitors did.
type recorder struct {
	minutes []minuteRec
	cur     int   // the minute of the last step
	end     int64 // when the rehearsal ended, ns since the start

	active        int // at the last step
	latencyTarget time.Duration
	lastTotal     uint64 // the store's admitted total at the last step
	maxWaiting    int
}

// minuteRec is one minute of the sale, from the sale's start.
type minuteRec struct {
	arrivals, gaveUp, noShows int
	// admissions are the store's, at join and from the line.
	admissions int
	// waiting, active, away and capacity are at the minute's last step; waitingMax
	// the most at any step in it.
	waiting, waitingMax, active, away, capacity int
	stepped                                     bool
	shopP90                                     time.Duration
	shopRequests                                uint64
	target                                      time.Duration
}

func (rc *recorder) init(s *Sale) {
	rc.minutes = make([]minuteRec, 0, int(s.Length()/time.Minute)+16)
}

func (rc *recorder) minuteOf(t int64) int { return int(t / int64(time.Minute)) }

func (rc *recorder) at(t int64) *minuteRec {
	m := rc.minuteOf(t)
	for len(rc.minutes) <= m {
		rc.minutes = append(rc.minutes, minuteRec{})
	}
	return &rc.minutes[m]
}

func (rc *recorder) arrival(t int64) { rc.at(t).arrivals++ }
func (rc *recorder) gaveUp(t int64)  { rc.at(t).gaveUp++ }
func (rc *recorder) noShow(t int64)  { rc.at(t).noShows++ }

// step records the counters an admission step read at t.
func (rc *recorder) step(t int64, active, waiting, away int, admittedTotal uint64, capacity int) {
	mr := rc.at(t)
	rc.cur = rc.minuteOf(t)
	mr.stepped = true
	mr.waiting, mr.active, mr.away, mr.capacity = waiting, active, away, capacity
	mr.waitingMax = max(mr.waitingMax, waiting)
	mr.admissions += int(admittedTotal - rc.lastTotal)
	mr.target = rc.latencyTarget
	rc.lastTotal, rc.active = admittedTotal, active
	rc.maxWaiting = max(rc.maxWaiting, waiting)
}

// shop records what the room measured of the shop in the minute just ended.
func (rc *recorder) shop(p90 time.Duration, n uint64) {
	if rc.cur < len(rc.minutes) {
		rc.minutes[rc.cur].shopP90, rc.minutes[rc.cur].shopRequests = p90, n
	}
}
