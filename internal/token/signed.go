package token

import (
	"crypto/hmac"
	"encoding/base64"
)

// A pass and a hand-off code are both a short body followed by a truncated
// HMAC-SHA256 of it under a label of their own, base64url without padding: sealSigned
// and openSigned are that framing, once.

// sealSigned writes into raw[body:] the MAC of raw[:body] under the first secret and
// label, truncated to what raw has room for, and returns raw as text.
func (k *Keyring) sealSigned(label, raw []byte, body int) string {
	m := k.macs[0].Get().(*mac)
	copy(raw[body:], m.compute(label, raw[:body]))
	k.macs[0].Put(m)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// openSigned decodes value into raw, which it must fill exactly, and reports whether
// raw[body:] is the MAC of raw[:body] under label and any of the secrets. Its work is
// bounded: a value of any other length is refused before decoding.
func (k *Keyring) openSigned(label []byte, value string, raw []byte, body int) bool {
	if len(value) != base64.RawURLEncoding.EncodedLen(len(raw)) {
		return false
	}
	if n, err := strictBase64.Decode(raw, []byte(value)); err != nil || n != len(raw) {
		return false
	}
	for i := range k.macs {
		m := k.macs[i].Get().(*mac)
		ok := hmac.Equal(m.compute(label, raw[:body])[:len(raw)-body], raw[body:])
		k.macs[i].Put(m)
		if ok {
			return true
		}
	}
	return false
}
