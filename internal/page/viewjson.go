package page

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends to dst what json.Marshal writes for v. Every poll, every API client and
// every WebSocket push encodes a view; doing it by hand skips the reflection and the
// encoder's allocations. TestViewJSONIsEncodingJSONs holds the two equal.
func (v *View) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if v.Type != "" {
		dst = append(dst, `"type":`...)
		dst = appendJSONString(dst, v.Type)
		dst = append(dst, ',')
	}
	dst = append(dst, `"room":`...)
	dst = appendJSONString(dst, v.Room)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, v.Status)
	if v.Position != 0 {
		dst = appendJSONInt(dst, `,"position":`, v.Position)
	}
	dst = appendJSONInt(dst, `,"waiting":`, v.Waiting)
	dst = appendJSONInt(dst, `,"active":`, v.Active)
	dst = appendJSONInt(dst, `,"capacity":`, v.Capacity)
	if v.ETASeconds != nil {
		dst = appendJSONInt(dst, `,"eta_seconds":`, *v.ETASeconds)
	} else {
		dst = append(dst, `,"eta_seconds":null`...)
	}
	dst = appendJSONInt(dst, `,"refresh_seconds":`, v.RefreshSeconds)
	if v.StartsInSeconds != nil {
		dst = appendJSONInt(dst, `,"starts_in_seconds":`, *v.StartsInSeconds)
	}
	if v.AwayTTLSeconds != 0 {
		dst = appendJSONInt(dst, `,"away_ttl_seconds":`, v.AwayTTLSeconds)
	}
	if v.Returned {
		dst = append(dst, `,"returned":true`...)
	}
	if v.Missed {
		dst = append(dst, `,"missed":true`...)
	}
	if v.Message != "" {
		dst = append(dst, `,"message":`...)
		dst = appendJSONString(dst, v.Message)
	}
	if v.Pass != "" {
		dst = append(dst, `,"pass":`...)
		dst = appendJSONString(dst, v.Pass)
	}
	if v.Handoff != "" {
		dst = append(dst, `,"handoff":`...)
		dst = appendJSONString(dst, v.Handoff)
	}
	if v.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, v.Reason)
	}
	if v.DrawURL != "" {
		dst = append(dst, `,"draw_url":`...)
		dst = appendJSONString(dst, v.DrawURL)
	}
	if len(v.Receipt) > 0 {
		// As signed: the receipt's canonical JSON (internal/draw), which a verifier
		// reads whatever escaping a JSON writer would have chosen.
		dst = append(append(dst, `,"receipt":`...), v.Receipt...)
	}
	return append(dst, '}')
}

func appendJSONInt(dst []byte, key string, n int) []byte {
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
}

// appendJSONString quotes s as encoding/json does. A string it would write as it is
// (the common case: a room name, a status) is copied; any other goes through
// encoding/json itself, so its escaping rules stay the only ones.
func appendJSONString(dst []byte, s string) []byte {
	if !jsonVerbatim(s) {
		b, _ := json.Marshal(s)
		return append(dst, b...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// jsonVerbatim reports whether encoding/json writes s between its quotes unchanged:
// valid UTF-8 without control characters, quotes, backslashes, the HTML-sensitive
// <, > and &, or the line and paragraph separators JavaScript chokes on.
func jsonVerbatim(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}
