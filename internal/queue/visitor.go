package queue

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
)

// VisitorID identifies a visitor within a room. It is 128 random bits minted by the
// server; a client can never choose it, only present one it was given (signed).
type VisitorID [16]byte

// NewVisitorID mints a fresh random visitor id.
func NewVisitorID() VisitorID {
	var id VisitorID
	// crypto/rand.Read never returns an error on supported platforms (Go 1.24+).
	_, _ = rand.Read(id[:])
	return id
}

// String is the id in lowercase hex, as shown in the admin API and logs.
func (id VisitorID) String() string { return hex.EncodeToString(id[:]) }

// ParseVisitorID reads an id written by String.
func ParseVisitorID(s string) (VisitorID, error) {
	var id VisitorID
	if len(s) != 2*len(id) {
		return id, errors.New("visitor id must be 32 hex digits")
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, errors.New("visitor id must be 32 hex digits")
	}
	return id, nil
}
