package waitingroom

import (
	"slices"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// PreviewStates are the page states Preview can render.
var PreviewStates = []string{"queued", "prequeue", "rejected", "unavailable"}

// Preview renders the room's waiting page (the operator's template, if any) in state
// with sample numbers: position (1 and up) in a line of at least 4x as many people,
// the first visitors' ETA at one admission per second, a ten-minute countdown for the
// pre-queue. lang is an Accept-Language value; empty means the room's own language. It returns the page and the nonce its
// Content-Security-Policy must allow.
func (r *Room) Preview(state string, position int, lang string) (page []byte, nonce string, err error) {
	if !slices.Contains(PreviewStates, state) {
		return nil, "", inputErrorf("state must be one of queued, prequeue, rejected, unavailable; got %q", state)
	}
	if position < 1 {
		return nil, "", inputErrorf("position must be 1 or more, got %d", position)
	}
	h := r.h
	p := h.policyAt(h.clock.Now())
	eta := position // one admission per second
	v := view{
		Room:           h.Name,
		Status:         state,
		Position:       position,
		Waiting:        max(4*position, 40),
		Active:         p.capacity,
		Capacity:       p.capacity,
		ETASeconds:     &eta,
		RefreshSeconds: h.refreshSeconds(),
	}
	switch state {
	case "prequeue":
		starts := int((10 * time.Minute).Seconds())
		v.Status, v.ETASeconds, v.StartsInSeconds, v.prequeue = "queued", nil, &starts, true
		v.lottery = p.event == nil || p.event.Shuffle
	case "rejected":
		v.Position, v.ETASeconds, v.RefreshSeconds = 0, nil, rejectRetryAfter
	case "unavailable":
		v.Position, v.Waiting, v.Active, v.ETASeconds = 0, 0, 0, nil
	}
	tag := assets.Negotiate(lang)
	if lang == "" && h.Lang != "" {
		tag = h.Lang // the room's fixed language, unless the preview asks for another
	}
	data := h.pageData(v, tag, p.mode, newNonce())
	page, err = h.renderPage(nil, &data)
	return page, data.Nonce, err
}

// PageHeaders sets the headers a rendered page needs (its CSP allows nonce).
func PageHeaders(hdr interface{ Set(k, v string) }, nonce string) {
	for _, f := range pageFields(pageCSP(nonce)) {
		hdr.Set(f.name, f.value)
	}
}

// pageFields are the header fields of a page whose policy is csp.
func pageFields(csp string) [3]headerField {
	return [3]headerField{
		{"Content-Type", "text/html; charset=utf-8"},
		{"Content-Security-Policy", csp},
		{"Referrer-Policy", "no-referrer"},
	}
}
