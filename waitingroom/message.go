package waitingroom

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// maxMessageLen is the longest message to the line, in characters: a sentence or two
// ("Tickets for Saturday are sold out"), which the page shows whole on a phone.
const maxMessageLen = 500

// checkMessage accepts plain text of at most maxMessageLen characters. Line breaks
// and tabs are text; other control characters are not (a page cannot show them, and
// a pasted escape sequence is a mistake the operator should hear about).
func checkMessage(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("message must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > maxMessageLen {
		return fmt.Errorf("message must be at most %d characters, got %d", maxMessageLen, n)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return fmt.Errorf("message must be plain text, got the control character %U", r)
		}
	}
	return nil
}

// patchMessage reads a PATCH's message: null clears the override (the configured
// message, if any, shows again), a string sets it ("" shows none).
func patchMessage(raw json.RawMessage) (*string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, inputErrorf("message must be a string or null, got %s", clip(raw))
	}
	if err := checkMessage(s); err != nil {
		return nil, inputErrorf("%v", err)
	}
	return &s, nil
}

// clip shortens what an error quotes back: a 100 KB body need not come back whole.
// It cuts between characters, so the clip stays valid UTF-8.
func clip(raw []byte) string {
	const most = 80
	if len(raw) <= most {
		return string(raw)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return string(raw[:cut]) + "…"
}

// message is what the line is told now: the admin API's message, else the configured
// one. Every instance reads the override from the store with the other runtime
// settings (room.loadOverrides), so a change reaches all of them within a tick.
func (h *Handler) message() string {
	if h.room != nil {
		if o := h.room.overrides.Load(); o != nil && o.Message != nil {
			return *o.Message
		}
	}
	return h.Message
}

// Message is the message to the line, for the room's hub (push.Room).
func (rm *room) Message() string { return rm.h.message() }
