package draw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// This file is the JSON both documents (a receipt and the public page) are read and
// written in. Writing is the JSON Canonicalization Scheme (RFC 8785) for the values a
// receipt holds, strings and whole numbers, so a verifier in any language reproduces
// the signed bytes with its own JSON.stringify (or json.dumps) of the sorted object.
// encoding/json is not used for writing: it escapes U+2028 and U+2029, which RFC 8785,
// JavaScript and Python leave as they are. Reading is encoding/json's tokenizer, with
// the checks a hostile document needs on top (strictObject).

// MaxSafe is the largest whole number a receipt or page holds: 2^53 - 1, the largest
// that every JSON reader (JavaScript's numbers are doubles) reads exactly.
const MaxSafe = 1<<53 - 1

// maxDepth bounds how deeply an ignored page value may nest.
const maxDepth = 16

// appendString appends s as RFC 8785 writes a string: '"' and '\' escaped, the
// control characters U+0000 to U+001F as \b \t \n \f \r or \u00xx (lowercase hex),
// every other character as itself. s must be valid UTF-8 (the callers check).
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// A member is one name and value of a canonical object: a string, or a whole number
// when isNum.
type member struct {
	name  string
	str   string
	num   uint64
	isNum bool
}

// appendObject appends the canonical object of members, which are given sorted by
// name (ASCII names: byte order is RFC 8785's UTF-16 order) and with numbers at most
// MaxSafe: no whitespace, numbers in plain decimal.
func appendObject(dst []byte, members []member) []byte {
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.name)
		dst = append(dst, ':')
		if m.isNum {
			dst = fmt.Appendf(dst, "%d", m.num)
		} else {
			dst = appendString(dst, m.str)
		}
	}
	return append(dst, '}')
}

// strictObject reads data as one JSON object and calls field for each of its
// members, in order, with the decoder positioned at the value, which field must
// read whole (with readString, readWhole or skipValue). It refuses invalid UTF-8, a
// document that is not one object, a name given twice, and anything after the
// object; field's errors are returned as they are.
func strictObject(data []byte, field func(name string, dec *json.Decoder) error) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not UTF-8", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return malformed(err)
	} else if tok != json.Delim('{') {
		return fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		name, ok := tok.(string) // inside an object the decoder gives names only; checked all the same
		if !ok {
			return fmt.Errorf("%w: a member without a name", ErrMalformed)
		}
		if seen[name] {
			return fmt.Errorf("%w: %q is given twice", ErrMalformed, clip(name))
		}
		seen[name] = true
		if err := field(name, dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: more after the object", ErrMalformed)
	}
	return nil
}

// readString reads a string value of the member name.
func readString(dec *json.Decoder, name string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", malformed(err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s must be a string", ErrMalformed, name)
	}
	if hasReplacement(s) {
		// What encoding/json makes of a lone surrogate (\ud800), which another
		// reader keeps as it is: the two would check different bytes.
		return "", fmt.Errorf("%w: %s holds U+FFFD or an unpaired surrogate", ErrMalformed, name)
	}
	return s, nil
}

// readWhole reads a whole number value of the member name: plain decimal digits, no
// sign, fraction, exponent or leading zero, at most MaxSafe.
func readWhole(dec *json.Decoder, name string) (uint64, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, malformed(err)
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%w: %s must be a number", ErrMalformed, name)
	}
	s := string(n)
	if s == "" || len(s) > 16 || (s[0] == '0' && len(s) > 1) {
		return 0, fmt.Errorf("%w: %s must be a whole number from 0 to %d, got %s", ErrMalformed, name, uint64(MaxSafe), clip(s))
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %s must be a whole number from 0 to %d, got %s", ErrMalformed, name, uint64(MaxSafe), clip(s))
		}
		v = v*10 + uint64(s[i]-'0')
	}
	if v > MaxSafe {
		return 0, fmt.Errorf("%w: %s must be a whole number from 0 to %d, got %s", ErrMalformed, name, uint64(MaxSafe), s)
	}
	return v, nil
}

// skipValue reads and drops one value, refusing a name given twice in any object
// inside it and nesting deeper than maxDepth.
func skipValue(dec *json.Decoder) error {
	type level struct {
		object bool
		seen   map[string]bool
		name   bool // an object's next token is a name
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if s, ok := tok.(string); ok && top.name {
				if top.seen[s] {
					return fmt.Errorf("%w: %q is given twice", ErrMalformed, clip(s))
				}
				top.seen[s] = true
				top.name = false
				continue
			}
			top.name = true // after this value, a name or the end
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
			}
			stack = append(stack, level{object: tok == json.Delim('{'), seen: map[string]bool{}, name: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

func hasReplacement(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError {
			return true
		}
	}
	return false
}

func malformed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: cut short", ErrMalformed)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}
