package page

import "strconv"

// AppendHandoffJSON appends the answer to a request for a hand-off code
// (docs/waiting-page.md): {"room","status","handoff_url","expires_seconds"}, status
// "queued" or "admitted" as the place stands.
func AppendHandoffJSON(dst []byte, room, status, link string, expiresSeconds int) []byte {
	dst = append(dst, `{"room":`...)
	dst = appendJSONString(dst, room)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, status)
	dst = append(dst, `,"handoff_url":`...)
	dst = appendJSONString(dst, link)
	dst = append(dst, `,"expires_seconds":`...)
	dst = strconv.AppendInt(dst, int64(expiresSeconds), 10)
	return append(dst, '}')
}
