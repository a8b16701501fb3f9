package room

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// previewStates are the page states Preview can render.
var previewStates = []string{"queued", "prequeue", "rejected", "unavailable"}

// Preview renders the room's waiting page (the operator's template, if any) in state
// with sample numbers: position (1 and up) in a line of at least 4x as many people,
// the first visitors' ETA at one admission per second, a ten-minute countdown for the
// pre-queue. lang is an Accept-Language value; empty means the room's own language.
// The header fields include the Content-Security-Policy that allows the page's nonce.
func (rm *Room) Preview(state string, position int, lang string) ([]byte, http.Header, error) {
	if !slices.Contains(previewStates, state) {
		return nil, nil, inputErrorf("state must be one of %s; got %q", strings.Join(previewStates, ", "), state)
	}
	if position < 1 {
		return nil, nil, inputErrorf("position must be 1 or more, got %d", position)
	}
	cfg := rm.cfg
	s := rm.Settings(cfg.Clock.Now())
	eta := position // one admission per second
	v := page.View{
		Room:           cfg.Name,
		Status:         state,
		Position:       position,
		Waiting:        max(4*position, 40),
		Active:         s.Capacity,
		Capacity:       s.Capacity,
		ETASeconds:     &eta,
		RefreshSeconds: s.RefreshSeconds(),
	}
	switch state {
	case "prequeue":
		starts := int((10 * time.Minute).Seconds())
		v.Status, v.ETASeconds, v.StartsInSeconds, v.Prequeue = "queued", nil, &starts, true
		v.Lottery = s.Event == nil || s.Event.Shuffle
	case "rejected":
		v.Position, v.ETASeconds, v.RefreshSeconds = 0, nil, rejectRetryAfter
	case "unavailable":
		v.Position, v.Waiting, v.Active, v.ETASeconds = 0, 0, 0, nil
	}
	tag := page.Negotiate(lang)
	if lang == "" && cfg.Lang != "" {
		tag = cfg.Lang // the room's fixed language, unless the preview asks for another
	}
	csp, nonce := page.NewCSP()
	data := v.Data(tag, s.Mode, nonce)
	body, err := cfg.Page.Render(nil, &data)
	if err != nil {
		return nil, nil, err
	}
	header := make(http.Header)
	for _, f := range page.Fields(csp) {
		header.Set(f.Name, f.Value)
	}
	return body, header, nil
}
