package settings

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// maxMessageLen is the longest message to the line, in characters: a sentence or two
// ("Tickets for Saturday are sold out"), which the page shows whole on a phone.
const maxMessageLen = 500

// CheckMessage accepts plain text of at most maxMessageLen characters. Line breaks
// and tabs are text; other control characters are not (a page cannot show them, and
// a pasted escape sequence is a mistake the operator should hear about).
func CheckMessage(s string) error {
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
