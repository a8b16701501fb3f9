package page

import (
	"encoding/base64"
	"fmt"
	"strconv"

	qrcode "github.com/skip2/go-qrcode"
)

// qrSize is the side of a hand-off QR code in pixels: the page shows it at that size,
// which a phone's camera reads from across a desk.
const qrSize = 232

// HandoffQR draws link as a QR code, a PNG in a data: URL: the page's policy lets
// images come from data: (csp.go) and nothing from elsewhere. Medium error
// correction (15 %) is what a screen needs: nothing covers or wears it.
func HandoffQR(link string) (string, error) {
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
