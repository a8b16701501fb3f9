package queue

import "time"

// A ToldWait is an estimate as a waiter reads it: "under a minute", "about 7 minutes",
// "about 2 hours". Coarse steps say what an estimate honestly is, and they keep the text
// from flickering as the estimate wobbles between pushes.
type ToldWait struct {
	// Minutes is the wait told in minutes: 0 for "under a minute", 1 to 10, then steps
	// of five up to 85.
	Minutes int
	// Hours, when above 0, is the wait told in hours instead (90 minutes and more).
	Hours int
}

// Tell rounds an estimate of seconds to what the waiter is told. The page's text
// (internal/page) is made from it, and the page's script repeats these rules: change
// both together.
func Tell(seconds int) ToldWait {
	if seconds < 60 {
		return ToldWait{}
	}
	m := (seconds + 30) / 60
	switch {
	case m >= 90:
		return ToldWait{Hours: (m + 30) / 60}
	case m > 10:
		return ToldWait{Minutes: (m + 2) / 5 * 5}
	default:
		return ToldWait{Minutes: m}
	}
}

// Duration is the wait the text names; 0 for "under a minute".
func (w ToldWait) Duration() time.Duration {
	if w.Hours > 0 {
		return time.Duration(w.Hours) * time.Hour
	}
	return time.Duration(w.Minutes) * time.Minute
}
