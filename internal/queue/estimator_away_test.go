package queue

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// awaySale is the steady-state sale of TestEstimatorAccuracyInSteadyState with waiters
// who go quiet: a share of the arrivals stops being heard from at a random moment of
// their wait, and a share of those comes back (is heard from again) within away_ttl.
// It returns, for the waiters who never went away and for those who came back, the
// share told an ETA within 25 % of the wait they really had.
type awaySale struct {
	away, returns float64 // share of arrivals who go quiet; share of those who come back
	lose          bool    // away_ttl 0: a quiet waiter's place is lost at queue_ttl
}

type awayResult struct {
	stayed, returned     int     // waiters measured
	stayedFrac, backFrac float64 // share within 25 %
	maxAwayCount         int
}

func (sale awaySale) run(t *testing.T, seed uint64) awayResult {
	t.Helper()
	const (
		capacity    = 50
		meanSession = 60 * time.Second
		arrivalRate = 1.0 // per second, before the quiet ones; service is 0.83/s
		tick        = 250 * time.Millisecond
		warmUp      = 5 * time.Minute
		measureTo   = 25 * time.Minute
		endAt       = 60 * time.Minute
	)
	rng := rand.New(rand.NewPCG(seed, 11))
	ctx := context.Background()
	s := NewMemoryStore()
	e := NewEstimator()
	lim := Limits{Capacity: capacity, SessionTTL: time.Hour, QueueTTL: 30 * time.Second, AwayTTL: 10 * time.Minute}
	if sale.lose {
		lim.AwayTTL = 0
	}
	now := time.Unix(1_800_000_000, 0)
	start := now

	sessionEnds := map[VisitorID]time.Time{}
	admit := func(id VisitorID) {
		sessionEnds[id] = now.Add(time.Duration(rng.ExpFloat64() * float64(meanSession)))
	}
	type waiter struct {
		joined     time.Time
		eta        time.Duration // 0: not measured (joined in warm-up, or no estimate yet)
		quietAt    time.Time     // zero: never goes quiet
		backAt     time.Time     // zero: never comes back
		cameBack   bool
		toldBackAt time.Duration // the ETA told on return
	}
	waiters := map[VisitorID]*waiter{}
	var res awayResult
	var stayedIn, backIn int
	for i := 0; i < capacity+200; i++ {
		id := NewVisitorID()
		if st, _ := s.Join(ctx, id, now, lim); st.State == Admitted {
			admit(id)
		} else {
			waiters[id] = &waiter{joined: now}
		}
	}
	for now.Before(start.Add(endAt)) {
		now = now.Add(tick)
		endSessions(ctx, s, sessionEnds, now)
		if now.Before(start.Add(measureTo)) {
			for n := poisson(rng, arrivalRate*tick.Seconds()); n > 0; n-- {
				id := NewVisitorID()
				st, _ := s.Join(ctx, id, now, lim)
				if st.State == Admitted {
					admit(id)
					continue
				}
				w := &waiter{joined: now}
				if eta, ok := eta(e, st.Position); ok && now.After(start.Add(warmUp)) {
					w.eta = eta
				}
				if rng.Float64() < sale.away {
					// Quiet within the first few minutes, back after 1–8 minutes.
					w.quietAt = now.Add(time.Duration(rng.Float64() * float64(3*time.Minute)))
					if rng.Float64() < sale.returns {
						w.backAt = w.quietAt.Add(time.Minute + time.Duration(rng.Float64()*float64(7*time.Minute)))
					}
				}
				waiters[id] = w
			}
		}
		// Everyone not quiet is heard from (their sockets), the returners included.
		var beats []VisitorID
		for id, w := range waiters {
			quiet := !w.quietAt.IsZero() && !now.Before(w.quietAt) && (w.backAt.IsZero() || now.Before(w.backAt))
			if quiet {
				continue
			}
			if !w.backAt.IsZero() && !now.Before(w.backAt) && !w.cameBack {
				w.cameBack = true
				st, _ := s.Status(ctx, id, now)
				if st.State != Queued {
					continue // admitted meanwhile? (never: an away waiter is not admitted)
				}
				if eta, ok := eta(e, st.Position); ok && w.eta > 0 {
					w.toldBackAt = eta
				}
				w.joined = now // a returner's wait is counted from its return
			}
			beats = append(beats, id)
		}
		_ = s.Heartbeat(ctx, beats, now)
		step, _ := s.Step(ctx, now, lim)
		for _, id := range step.Admitted {
			admit(id)
			w := waiters[id]
			delete(waiters, id)
			if w == nil || w.eta == 0 {
				continue
			}
			real := now.Sub(w.joined).Seconds()
			switch {
			case w.quietAt.IsZero():
				res.stayed++
				if math.Abs(w.eta.Seconds()/real-1) <= 0.25 {
					stayedIn++
				}
			case w.cameBack && w.toldBackAt > 0:
				res.returned++
				if math.Abs(w.toldBackAt.Seconds()/real-1) <= 0.25 || real < 5 && w.toldBackAt < 5*time.Second {
					backIn++
				}
			}
		}
		st, _ := s.Stats(ctx)
		res.maxAwayCount = max(res.maxAwayCount, st.Away)
		e.Observe(now, st.AdmittedTotal)
	}

	if res.stayed > 0 {
		res.stayedFrac = float64(stayedIn) / float64(res.stayed)
	}
	if res.returned > 0 {
		res.backFrac = float64(backIn) / float64(res.returned)
	}
	return res
}

// Away waiters who never come back cost nobody else's estimate: with their places kept
// (away_ttl), the waiters who stay are told as true an ETA as when those places are
// lost at queue_ttl. (Both are less true than with nobody quiet: waiters ahead who go
// quiet after an estimate was given make the real wait shorter than told, which no
// count of the line can foresee.) With 30 % going quiet and half of them coming back,
// the figures are reported, the returners' too.
func TestEstimatorAccuracyWithAwayWaiters(t *testing.T) {
	const seed = 7
	base := awaySale{}.run(t, seed)
	lost := awaySale{away: 0.15, lose: true}.run(t, seed)
	gone := awaySale{away: 0.15}.run(t, seed)
	mixed := awaySale{away: 0.30, returns: 0.5}.run(t, seed)
	for _, r := range []struct {
		name string
		res  awayResult
	}{{"nobody quiet", base}, {"15% quiet, away_ttl 0", lost}, {"15% quiet for good", gone}, {"30% quiet, half back", mixed}} {
		t.Logf("%-22s stayed: %d measured, %.1f%% within 25%%; returners: %d measured, %.1f%% within 25%%; most away at once %d",
			r.name, r.res.stayed, 100*r.res.stayedFrac, r.res.returned, 100*r.res.backFrac, r.res.maxAwayCount)
	}
	if base.stayed < 500 || lost.stayed < 500 || gone.stayed < 500 || mixed.stayed < 500 || mixed.returned < 50 {
		t.Fatalf("too few waiters measured (%d, %d, %d stayed; %d returned): the simulation is not exercising the queue",
			base.stayed, gone.stayed, mixed.stayed, mixed.returned)
	}
	if gone.maxAwayCount == 0 || mixed.maxAwayCount == 0 {
		t.Fatal("nobody was ever away: the simulation is not exercising away")
	}
	// A place kept for someone who never comes back must not count ahead of anyone: the
	// estimate of those who stay is as good as when that place is lost at queue_ttl.
	// The margin is the binomial noise of the two shares (2 standard errors of their
	// difference).
	margin := 2 * math.Sqrt(lost.stayedFrac*(1-lost.stayedFrac)/float64(lost.stayed)+
		gone.stayedFrac*(1-gone.stayedFrac)/float64(gone.stayed))
	if gone.stayedFrac < lost.stayedFrac-margin {
		t.Fatalf("with 15%% quiet for good, %.1f%% of those who stayed were told a true ETA with their places kept, against %.1f%% with them lost (margin %.1f points)",
			100*gone.stayedFrac, 100*lost.stayedFrac, 100*margin)
	}
}
