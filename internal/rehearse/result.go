package rehearse

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// Result is what one variant's rehearsal found: the summary report.json leads
// with, and the sale minute by minute.
type Result struct {
	Label   string   `json:"label"`
	Summary Summary  `json:"summary"`
	Minutes []Minute `json:"per_minute"`
}

// Summary is the sale in figures, in seconds and counts.
type Summary struct {
	// Visitors arrived; Admitted got into the shop (AdmittedAtOnce on arrival, with
	// no line); GaveUp closed the tab in line; NoShows never came when their turn
	// did; TurnedAway were refused by the room's mode; InLine were still in line when
	// the rehearsal ended at its horizon.
	Visitors       int `json:"visitors"`
	Admitted       int `json:"admitted"`
	AdmittedAtOnce int `json:"admitted_at_once"`
	GaveUp         int `json:"gave_up"`
	NoShows        int `json:"no_shows"`
	TurnedAway     int `json:"turned_away"`
	InLine         int `json:"in_line_at_end"`
	// ClearsAfter is from the first arrival until nobody is in line (null: not
	// within the horizon).
	ClearsAfter *Seconds `json:"clears_after_seconds"`
	// The wait of those admitted, from their first request to their entry into
	// the shop (0 for those let in at once).
	WaitP50 Seconds `json:"wait_p50_seconds"`
	WaitP90 Seconds `json:"wait_p90_seconds"`
	WaitMax Seconds `json:"wait_max_seconds"`
	// MaxWaiting is the most waiters at any admission step, as the room counts
	// them (its `waiting`: present, not away).
	MaxWaiting int `json:"max_waiting"`
	// ETA is the honesty of the wait the page showed on arrival.
	ETA ETAHonesty `json:"eta"`
	// Adapt is the capacity and the shop, with a shop modelled (null otherwise).
	Shop *ShopSummary `json:"shop"`
	// Simulated is how long the rehearsal followed the sale.
	Simulated Seconds `json:"simulated_seconds"`
}

// ETAHonesty compares the wait the page showed on arrival with the wait each
// visitor then had, for those shown a number and admitted. The error is
// (shown - real) / max(real, 60 s): relative, against a floor of a minute, so that
// a wait of 5 s shown as 10 s is not an error of 100 %.
type ETAHonesty struct {
	Shown   int `json:"shown"`   // admitted visitors shown a number on arrival
	Unknown int `json:"unknown"` // shown "estimating" (no evidence yet, or a pre-queue)
	// ErrorP50 and ErrorP90 are the median and 90th percentile of the error's size;
	// BiasP50 its signed median (above 0: the page promised longer than it took).
	ErrorP50 *float64 `json:"error_p50"`
	ErrorP90 *float64 `json:"error_p90"`
	BiasP50  *float64 `json:"bias_p50"`
}

// ShopSummary is the shop as the room measured it, and the capacity it ran at.
type ShopSummary struct {
	P90      Seconds  `json:"p90_seconds"`
	Requests uint64   `json:"requests"`
	Target   *Seconds `json:"target_seconds"` // adapt's latency, null without adapt
	// MinutesOverTarget counts the minutes whose p90 was over the target.
	MinutesOverTarget int `json:"minutes_over_target"`
	CapacityMin       int `json:"capacity_min"`
	CapacityMax       int `json:"capacity_max"`
	CapacityLast      int `json:"capacity_last"`
}

// Minute is one minute of the sale, counted from its start.
type Minute struct {
	Minute     int `json:"minute"`
	Arrivals   int `json:"arrivals"`
	Admissions int `json:"admissions"`
	GaveUp     int `json:"gave_up"`
	NoShows    int `json:"no_shows"`
	// Waiting, Active, Away and Capacity are at the minute's end, as the room counts
	// them; WaitingMax the most waiting at any step in it.
	Waiting    int `json:"waiting"`
	WaitingMax int `json:"waiting_max"`
	Away       int `json:"away"`
	Active     int `json:"active"`
	Capacity   int `json:"capacity"`
	// The wait of the visitors who arrived in this minute and got in, and what the
	// page showed them on arrival (null: nobody).
	WaitP50     *Seconds `json:"wait_p50_seconds"`
	WaitP90     *Seconds `json:"wait_p90_seconds"`
	ETAShownP50 *Seconds `json:"eta_shown_p50_seconds"`
	ETAWaitP50  *Seconds `json:"eta_real_wait_p50_seconds"` // of those same visitors
	ETAErrorP50 *float64 `json:"eta_error_p50"`
	ETAErrorP90 *float64 `json:"eta_error_p90"`
	// ShopP90 is the shop's p90 as the room measured it in the minute, Target
	// adapt's latency (null: not measured, or adapt off).
	ShopP90 *Seconds `json:"shop_p90_seconds"`
	Target  *Seconds `json:"target_seconds"`
}

// Seconds is a duration in seconds, written to the millisecond.
type Seconds float64

func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, math.Round(float64(s)*1000)/1000, 'f', -1, 64), nil
}

func secondsOf(d time.Duration) Seconds { return Seconds(d.Seconds()) }

func secondsPtr(ns int64) *Seconds { s := secondsOf(time.Duration(ns)); return &s }

// share rounds a share to a ten-thousandth, so a report reads the same on every
// machine and says no more than the rehearsal knows.
func share(f float64) *float64 {
	r := math.Round(f*1e4) / 1e4
	return &r
}

// etaFloor is the least wait an ETA's error is taken relative to.
const etaFloor = 60.0

// result gathers what the run recorded into v's Result.
func (r *run) result(v Variant) *Result {
	res := &Result{Label: v.Label}
	s := &res.Summary
	s.Visitors = len(r.vis)
	s.Simulated = secondsOf(time.Duration(r.rec.end))
	s.MaxWaiting = r.rec.maxWaiting
	n := len(r.rec.minutes)
	res.Minutes = make([]Minute, n)

	var waits []int64 // of all admitted
	var errs, signed []float64
	// The visitors are in arrival order: each minute's arrivals are a run of them.
	for i := 0; i < len(r.vis); {
		m := r.rec.minuteOf(r.vis[i].arrived)
		j := i
		var mw []int64
		var me, shown, real []float64
		for ; j < len(r.vis) && r.rec.minuteOf(r.vis[j].arrived) == m; j++ {
			vi := &r.vis[j]
			switch vi.state {
			case stGaveUp:
				s.GaveUp++
			case stNoShow:
				s.NoShows++
			case stTurnedAway:
				s.TurnedAway++
			}
			if vi.state.inLine() {
				s.InLine++
			}
			if vi.admitted < 0 {
				continue
			}
			s.Admitted++
			wait := vi.admitted - vi.arrived
			if vi.eta == etaNone {
				s.AdmittedAtOnce++
			}
			mw = append(mw, wait)
			switch {
			case vi.eta == etaUnknown:
				s.ETA.Unknown++
			case vi.eta >= 0:
				waited := time.Duration(wait).Seconds()
				e := (float64(vi.eta) - waited) / max(waited, etaFloor)
				me = append(me, math.Abs(e))
				signed = append(signed, e)
				shown = append(shown, float64(vi.eta))
				real = append(real, time.Duration(wait).Seconds())
			}
		}
		waits = append(waits, mw...)
		errs = append(errs, me...)
		mi := &res.Minutes[m]
		if len(mw) > 0 {
			slices.Sort(mw)
			mi.WaitP50, mi.WaitP90 = secondsPtr(rank(mw, 0.5)), secondsPtr(rank(mw, 0.9))
		}
		if len(me) > 0 {
			slices.Sort(me)
			slices.Sort(shown)
			mi.ETAErrorP50, mi.ETAErrorP90 = share(rank(me, 0.5)), share(rank(me, 0.9))
			slices.Sort(real)
			p, w := Seconds(rank(shown, 0.5)), Seconds(rank(real, 0.5))
			mi.ETAShownP50, mi.ETAWaitP50 = &p, &w
		}
		i = j
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		s.WaitP50, s.WaitP90 = secondsOf(time.Duration(rank(waits, 0.5))), secondsOf(time.Duration(rank(waits, 0.9)))
		s.WaitMax = secondsOf(time.Duration(waits[len(waits)-1]))
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		slices.Sort(signed)
		s.ETA.Shown = len(errs)
		s.ETA.ErrorP50, s.ETA.ErrorP90, s.ETA.BiasP50 = share(rank(errs, 0.5)), share(rank(errs, 0.9)), share(rank(signed, 0.5))
	}
	switch {
	case r.inLine > 0:
	case r.clearedAt < 0 || len(r.vis) == 0:
		zero := Seconds(0)
		s.ClearsAfter = &zero
	default:
		s.ClearsAfter = secondsPtr(r.clearedAt - r.vis[0].arrived)
	}

	var shop *ShopSummary
	if r.serve {
		p90, reqs := r.eng.shopP90All()
		shop = &ShopSummary{P90: secondsOf(p90), Requests: reqs, CapacityMin: math.MaxInt}
		s.Shop = shop
	}
	for m := range res.Minutes {
		mr, mi := &r.rec.minutes[m], &res.Minutes[m]
		mi.Minute, mi.Arrivals, mi.Admissions = m, mr.arrivals, mr.admissions
		mi.GaveUp, mi.NoShows = mr.gaveUp, mr.noShows
		mi.Waiting, mi.WaitingMax, mi.Away, mi.Active, mi.Capacity = mr.waiting, mr.waitingMax, mr.away, mr.active, mr.capacity
		if mr.target > 0 {
			mi.Target = secondsPtr(int64(mr.target))
		}
		if mr.shopRequests > 0 {
			mi.ShopP90 = secondsPtr(int64(mr.shopP90))
		}
		if shop == nil || !mr.stepped {
			continue
		}
		shop.CapacityMin, shop.CapacityMax = min(shop.CapacityMin, mr.capacity), max(shop.CapacityMax, mr.capacity)
		shop.CapacityLast = mr.capacity
		if mr.target > 0 {
			shop.Target = secondsPtr(int64(mr.target))
			if mr.shopRequests > 0 && mr.shopP90 > mr.target {
				shop.MinutesOverTarget++
			}
		}
	}
	return res
}

// rank is the nearest-rank q-quantile of sorted xs.
func rank[T cmp.Ordered](xs []T, q float64) T {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
