package page

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	qrcode "github.com/skip2/go-qrcode"
)

// qrSize is the side of a hand-off QR code in pixels: the page shows it at that size,
// which a phone's camera reads from across a desk.
const qrSize = 232

// MaxQRLink is the longest link HandoffQR draws. What a QR code costs grows with what
// it holds (the symbol's side grows with it, and every module is drawn and scored for
// each of the eight masks): a usual link of 130 bytes is a version 7 symbol, about
// 2 ms of CPU; 256 bytes, the most, is a version 12 at worst (TestHandoffQRBound),
// under twice that; a 2.2 KB one would be a version 32, ten times it (go test -run
// '^$' -bench HandoffQR ./internal/page). The room gives out a bounded number of
// codes a second (internal/room/timing.go), so this bounds the CPU they cost whatever
// the address. A usual link leaves room in it for a path and a short query.
const MaxQRLink = 256

// errLinkTooLong is HandoffQR's error for a link longer than MaxQRLink.
var errLinkTooLong = errors.New("the link is longer than a hand-off QR code holds")

// HandoffQR draws link as a QR code, a PNG in a data: URL: the page's policy lets
// images come from data: (csp.go) and nothing from elsewhere. Medium error
// correction (15 %) is what a screen needs: nothing covers or wears it. A link
// longer than MaxQRLink is not drawn.
func HandoffQR(link string) (string, error) {
	if len(link) > MaxQRLink {
		return "", errLinkTooLong
	}
	png, err := qrcode.Encode(link, qrcode.Medium, qrSize)
	if err != nil {
		return "", fmt.Errorf("drawing the hand-off QR code: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}

// AppendHandoffJSON appends the answer to a request for a hand-off code
// (docs/waiting-page.md): {"room","status","handoff_url","expires_seconds"}, status
// "queued" or "admitted" as the place stands, and handoff_qr, the link as a QR code
// (HandoffQR), when there is one.
func AppendHandoffJSON(dst []byte, room, status, link, qr string, expiresSeconds int) []byte {
	dst = append(dst, `{"room":`...)
	dst = appendJSONString(dst, room)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, status)
	dst = append(dst, `,"handoff_url":`...)
	dst = appendJSONString(dst, link)
	dst = append(dst, `,"expires_seconds":`...)
	dst = strconv.AppendInt(dst, int64(expiresSeconds), 10)
	if qr != "" {
		dst = append(dst, `,"handoff_qr":`...)
		dst = appendJSONString(dst, qr)
	}
	return append(dst, '}')
}
