package page

import "encoding/json"

// View is what a waiter is told: as JSON (API clients, the page's polling, the
// WebSocket's position messages) and as the page's numbers. The JSON shape is public
// (docs/waiting-page.md).
type View struct {
	Type           string `json:"type,omitempty"` // "position" on the WebSocket only
	Room           string `json:"room"`
	Status         string `json:"status"` // "queued", "rejected", "unavailable" or "moved"
	Position       int    `json:"position,omitempty"`
	Waiting        int    `json:"waiting"`
	Active         int    `json:"active"`
	Capacity       int    `json:"capacity"`
	ETASeconds     *int   `json:"eta_seconds"` // null while there is no evidence to estimate from, and while nobody is admitted
	RefreshSeconds int    `json:"refresh_seconds"`
	// StartsInSeconds counts down to a scheduled event's start, during its pre-queue only.
	StartsInSeconds *int `json:"starts_in_seconds,omitempty"`
	// AwayTTLSeconds is how long the place is kept for a waiter who goes quiet (a
	// closed tab, a phone asleep): away_ttl, 0 when the place is lost at queue_ttl.
	AwayTTLSeconds int `json:"away_ttl_seconds,omitempty"`
	// Returned says the waiter had gone away and this answer brought them back to
	// the place they kept (once: the answer that found them away).
	Returned bool `json:"returned,omitempty"`
	// Missed says, with Returned, that the waiter's turn came while they were away
	// (admitted, they did not come in within arrive_ttl): they go in first.
	Missed bool `json:"missed,omitempty"`
	// Message is the operator's message to the line, plain text; absent when there is
	// none.
	Message string `json:"message,omitempty"`
	// Pass is "invalid" when the visitor presented a pass that did not hold (used up,
	// expired, forged, of another room); absent otherwise.
	Pass string `json:"pass,omitempty"`
	// Handoff is "invalid" when the visitor presented a hand-off code that did not
	// hold (used, expired, forged, of another room), "refused" when another site's
	// link presented it to a device that keeps its own place; absent otherwise.
	Handoff string `json:"handoff,omitempty"`
	// Reason says why a visitor who had been let in is queued anew: "session_max"
	// (their time ran out). Absent otherwise.
	Reason string `json:"reason,omitempty"`
	// DrawURL is the path of the public page of the waiter's draw (docs/fairness.md),
	// and Receipt the waiter's signed receipt of their entry or ticket (its canonical
	// JSON, as signed). Both are absent when the room's draw page is off, and the
	// receipt on the answer that made the place.
	DrawURL string          `json:"draw_url,omitempty"`
	Receipt json.RawMessage `json:"receipt,omitempty"`

	Prequeue bool `json:"-"` // for the page: the pre-queue's countdown
	Lottery  bool `json:"-"` // for the page: the pre-queue ends in a draw
}

// Data is what the page template gets for v (see Data). T is left to the page,
// which uses the catalog's own.
func (v *View) Data(lang, mode, nonce string) Data {
	data := Data{
		Room:           v.Room,
		Lang:           lang,
		State:          v.Status,
		Mode:           mode,
		Position:       v.Position,
		Waiting:        v.Waiting,
		Active:         v.Active,
		Capacity:       v.Capacity,
		ETAKnown:       v.ETASeconds != nil,
		Progress:       progress(v.Position, v.Waiting),
		RefreshSeconds: v.RefreshSeconds,
		Lottery:        v.Lottery,
		Message:        v.Message,
		AwayTTLSeconds: v.AwayTTLSeconds,
		Returned:       v.Returned,
		Missed:         v.Missed,
		Reason:         v.Reason,
		Handoff:        v.Handoff,
		DrawURL:        v.DrawURL,
		Nonce:          nonce,
	}
	if v.ETASeconds != nil {
		data.ETASeconds = *v.ETASeconds
	}
	if v.Prequeue {
		data.State = "prequeue"
		data.StartsInSeconds = *v.StartsInSeconds
	}
	return data
}

// progress is how far toward the front the waiter is, 0..100: the back of the line is
// 0, the head is 100.
func progress(position, waiting int) int {
	if position < 1 || waiting < 1 {
		return 0
	}
	p := 100 - 100*(position-1)/waiting
	return min(max(p, 0), 100)
}
